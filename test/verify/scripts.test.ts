import { describe, expect, it } from 'vitest';
import { fromCommand } from '../../src/verify/detect.js';
import { packageCall, resolveScriptSteps, splitAndChain } from '../../src/verify/scripts.js';
import { tempDir, writeFiles } from '../helpers/tmp.js';

const steps = (command: string, scripts: Record<string, string>, yarnBerry = false) => {
  const resolved = resolveScriptSteps(command, { scripts, yarnBerry });
  if (!resolved.ok) throw new Error(resolved.why);
  return resolved.steps.map((step) => `${step.script}: ${step.command}`);
};
const why = (command: string, scripts: Record<string, string>) => {
  const resolved = resolveScriptSteps(command, { scripts });
  return resolved.ok ? 'resolved' : resolved.why;
};

describe('resolveScriptSteps: package scripts followed to the commands they run', () => {
  it('follows npm test into a nested npm run (tape behind "tests-only")', () => {
    expect(steps('npm test', { test: 'npm run tests-only', 'tests-only': 'tape test/*.js' })).toEqual([
      'tests-only: tape test/*.js',
    ]);
  });

  it('runs pre and post scripts around the script, as npm does', () => {
    const scripts = { pretest: 'npm run lint', test: 'ava', posttest: 'npm audit', lint: 'xo' };
    expect(steps('npm test', scripts)).toEqual(['lint: xo', 'test: ava', 'posttest: npm audit']);
  });

  it('splits an && chain in order: `xo && ava && tsd`', () => {
    expect(steps('npm test', { test: 'xo && ava && tsd' })).toEqual(['test: xo', 'test: ava', 'test: tsd']);
  });

  it('follows pnpm forms: `pnpm run a && pnpm run b`, `pnpm lint`, and `pnpm X` for a program', () => {
    const scripts = {
      test: 'pnpm run test:nodejs && pnpm run test:edge',
      'test:nodejs': 'jest --env node',
      'test:edge': 'jest --env edge-runtime',
    };
    expect(steps('pnpm test', scripts)).toEqual([
      'test:nodejs: jest --env node',
      'test:edge: jest --env edge-runtime',
    ]);
    expect(steps('npm test', { test: 'pnpm lint && vitest run', lint: 'eslint .' })).toEqual([
      'lint: eslint .',
      'test: vitest run',
    ]);
    // no script of that name: pnpm runs the program itself
    expect(steps('pnpm vitest run', {})).toEqual([': pnpm vitest run']);
  });

  it('follows yarn forms, without pre/post scripts for yarn 2 and later', () => {
    const scripts = { pretest: 'tsc', test: 'yarn run unit', unit: 'mocha' };
    expect(steps('yarn test', scripts)).toEqual(['pretest: tsc', 'unit: mocha']);
    expect(steps('yarn test', scripts, true)).toEqual(['unit: mocha']);
    expect(steps('yarn unit', scripts)).toEqual(['unit: mocha']);
  });

  it('passes arguments on to the script, the way each manager does', () => {
    expect(steps('npm run unit -- --bail', { unit: 'mocha test' })).toEqual(['unit: mocha test --bail']);
    expect(steps('npm run-script unit', { unit: 'mocha' })).toEqual(['unit: mocha']);
    expect(steps('pnpm unit --bail', { unit: 'mocha' })).toEqual(['unit: mocha --bail']);
    // an argument is quoted again, so it stays one word
    expect(steps("npm run unit -- 'a b'", { unit: 'mocha' })).toEqual(["unit: mocha 'a b'"]);
  });

  it('keeps && inside quotes as text', () => {
    expect(steps('npm test', { test: `node -e "a && b" && tape t.js` })).toEqual([
      'test: node -e "a && b"',
      'test: tape t.js',
    ]);
  });

  it('stops at a cycle and says which scripts call each other', () => {
    expect(why('npm test', { test: 'npm run a', a: 'npm run b', b: 'npm run a' })).toBe(
      'the scripts call each other in a cycle: test -> a -> b -> a',
    );
    expect(why('npm test', { test: 'npm test' })).toContain('cycle');
  });

  it('bounds how deep and how wide a hostile chain may grow', () => {
    const deep: Record<string, string> = { test: 'npm run s0' };
    for (let i = 0; i < 20; i++) deep[`s${i}`] = `npm run s${i + 1}`;
    expect(why('npm test', deep)).toContain('nest deeper than');
    const wide: Record<string, string> = { test: 'npm run w && npm run w && npm run w && npm run w' };
    wide.w = 'npm run v && npm run v && npm run v && npm run v';
    wide.v = 'a && b && c && d';
    expect(why('npm test', wide)).toContain('more than 32 steps');
  });

  it('gives up on ||, ;, pipes, subshells and redirections rather than guess', () => {
    expect(why('npm test', { test: 'xo || true' })).toContain('`||`');
    expect(why('npm test', { test: 'xo; ava' })).toContain('`;`');
    expect(why('npm test', { test: 'tap | tee out' })).toContain('a pipe');
    expect(why('npm test', { test: '(cd lib && ava)' })).toContain('a subshell');
    expect(why('npm test', { test: 'ava > out.txt' })).toContain('a redirection');
    expect(why('npm test', { test: 'ava $(ls test)' })).toContain('command substitution');
  });

  it('refuses workspace and prefix flags, and a missing script', () => {
    expect(why('npm test', { test: 'npm run --workspace a test' })).toContain('flags keel does not follow');
    expect(why('npm test', { test: 'pnpm -r test' })).toContain('flags keel does not follow');
    expect(why('npm test', { test: 'npm run nope' })).toBe('package.json has no script `nope`');
    expect(steps('npm test', { test: 'npm run --if-present nope && ava' })).toEqual(['test: ava']);
  });

  it('does not take a prototype key for a script', () => {
    expect(why('npm run __proto__', {})).toBe('package.json has no script `__proto__`');
    expect(why('npm run constructor', {})).toBe('package.json has no script `constructor`');
  });
});

describe('packageCall and splitAndChain', () => {
  it('tells a script call from other package-manager commands', () => {
    expect(packageCall('npm t')).toMatchObject({ manager: 'npm', script: 'test' });
    expect(packageCall('npm -s run lint')).toMatchObject({ script: 'lint', args: [] });
    expect(packageCall('npm audit')).toBeUndefined();
    expect(packageCall('pnpm install')).toBeUndefined();
    expect(packageCall('tape test/*.js')).toBeUndefined();
  });

  it('splits only a plain && chain', () => {
    expect(splitAndChain('a && b&&c')).toEqual({ ok: true, segments: ['a', 'b', 'c'] });
    expect(splitAndChain("echo 'x; y' && z")).toEqual({ ok: true, segments: ["echo 'x; y'", 'z'] });
    expect(splitAndChain('a &&')).toMatchObject({ ok: false });
    expect(splitAndChain('echo "unclosed')).toMatchObject({ ok: false });
  });
});

describe('fromCommand with a followed chain', () => {
  it('keeps the user command and names each step; unknown stays exit-code only', () => {
    const root = tempDir();
    writeFiles(root, {
      'package.json': JSON.stringify({
        scripts: { test: 'npm run lint && npm run unit', lint: 'xo', unit: 'ava --verbose' },
      }),
    });
    expect(fromCommand(root, 'npm test')).toEqual({
      command: 'npm test',
      runner: 'ava',
      source: 'test command',
      steps: [
        { name: 'lint', command: 'xo', runner: 'unknown' },
        { name: 'unit', command: 'ava --verbose', runner: 'ava' },
      ],
    });
    writeFiles(root, { 'package.json': JSON.stringify({ scripts: { test: 'npm run lint', lint: 'xo' } }) });
    expect(fromCommand(root, 'npm test')).toEqual({
      command: 'npm test',
      runner: 'unknown',
      source: 'test command',
      script: 'npm run lint',
    });
  });
});
