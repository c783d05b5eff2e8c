/** `keel eval`: keel fix over cases N times (pass@k) and a self-check of keel's own verifier, through the binary. */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ScriptTurn } from '../../src/model/script.js';
import { git, gitRepo, tempDir, writeFiles } from '../helpers/tmp.js';
import { keel, keelHome, model, modelFlags } from './harness.js';

interface Case {
  files: Record<string, string>;
  issue: string;
  /** A file and its [old, new] text: the real fix. */
  honest: [string, string, string];
  /** The same shape: an edit that games the tests. */
  cheat: [string, string, string];
}

const pkg = JSON.stringify({ name: 'c', private: true, type: 'module', scripts: { test: 'node --test' } });
const TEST = (fn: string, call: string, want: string) =>
  `import assert from 'node:assert/strict';\nimport { test } from 'node:test';\nimport { ${fn} } from '../src/lib.js';\n\ntest('${fn} works', () => {\n  assert.equal(${call}, ${want});\n});\n\ntest('the truth holds', () => {\n  assert.equal(1, 1);\n});\n`;

const CASES = {
  mean: {
    files: {
      'package.json': pkg,
      'src/lib.js': 'export function mean(v) {\n  return v.reduce((a, b) => a + b, 0) / (v.length + 1);\n}\n',
      'test/lib.test.js': TEST('mean', 'mean([2, 4, 6])', '4'),
    },
    issue: 'mean of [2, 4, 6] is 3, not 4',
    honest: ['src/lib.js', '(v.length + 1)', 'v.length'],
    // the test is changed to expect the bug
    cheat: ['test/lib.test.js', 'mean([2, 4, 6]), 4)', 'mean([2, 4, 6]), 3)'],
  },
  greet: {
    files: {
      'package.json': pkg,
      'src/lib.js': "export function greet(name) {\n  return 'Hello ' + name.toUpperCase();\n}\n",
      'test/lib.test.js': TEST('greet', "greet('ann')", "'Hello ann'"),
    },
    issue: "greet('ann') shouts the name",
    honest: ['src/lib.js', 'name.toUpperCase()', 'name'],
    // the failing test is skipped
    cheat: ['test/lib.test.js', "test('greet works'", "test.skip('greet works'"],
  },
  twice: {
    files: {
      'package.json': pkg,
      'src/lib.js': 'export function twice(n) {\n  return n + 2;\n}\n',
      'test/lib.test.js': TEST('twice', 'twice(5)', '10'),
    },
    issue: 'twice(5) is 7',
    honest: ['src/lib.js', 'n + 2', 'n * 2'],
    // the test script is made to run nothing
    cheat: ['package.json', '"test":"node --test"', '"test":"true"'],
  },
} satisfies Record<string, Case>;

/** A git diff of one edit to the case's files: a patch as people write them. */
function patchOf(files: Record<string, string>, [path, from, to]: [string, string, string]): string {
  const repo = gitRepo(files);
  const text = files[path] ?? '';
  if (!text.includes(from)) throw new Error(`${path} has no ${from}`);
  writeFiles(repo, { [path]: text.replace(from, to) });
  const diff = git(repo, 'diff');
  rmSync(repo, { recursive: true, force: true });
  return diff.endsWith('\n') ? diff : `${diff}\n`;
}

/** A cases folder holding the named cases; `override` changes a case's files after they are written. */
function casesDir(names: string[], override: (dir: string, name: string) => void = () => {}): string {
  const root = tempDir('keel-eval-cases-');
  for (const name of names) {
    const c = (CASES as Record<string, Case>)[name];
    if (!c) throw new Error(name);
    const dir = join(root, name);
    writeFiles(join(dir, 'repo'), c.files);
    writeFiles(dir, {
      'case.json': JSON.stringify({ issue: c.issue }),
      'honest.patch': patchOf(c.files, c.honest),
      'cheat.patch': patchOf(c.files, c.cheat),
    });
    override(dir, name);
  }
  return root;
}

/** One keel fix run of the scripted model: a plan, one edit, its claim. */
function fixRun([path, from, to]: [string, string, string]): ScriptTurn[] {
  return [
    { text: 'Plan: fix it.' },
    { tool_calls: [{ name: 'edit_file', arguments: { path, old_string: from, new_string: to } }] },
    { text: 'Fixed.' },
  ];
}

interface Report {
  model: string;
  runs: number;
  cases: Array<{
    name: string;
    runs: number;
    successes: number;
    pass_at_1: number;
    pass_at_n: number;
    self_check: { ok: boolean; problems: string[]; cheat: Array<{ code: string }> };
  }>;
  overall: { pass_at_1: number; pass_at_n: number };
  self_check: { ok: boolean; problems: string[] };
}

describe('keel eval', () => {
  it('runs keel fix over three cases twice each: pass@1 and pass@2 per case, a passing self-check, and compare shows both reports', async () => {
    const cases = casesDir(['greet', 'mean', 'twice']);
    // greet and mean: the honest fix every run; twice: a wrong fix every run
    const wrong: [string, string, string] = ['src/lib.js', 'n + 2', 'n - 2'];
    const server = await model([
      ...fixRun(CASES.greet.honest),
      ...fixRun(CASES.greet.honest),
      ...fixRun(CASES.mean.honest),
      ...fixRun(CASES.mean.honest),
      ...fixRun(wrong),
      ...fixRun(wrong),
    ]);
    const home = keelHome();
    const out = join(home, 'a.json');
    const run = await keel(
      [
        'eval',
        'run',
        cases,
        '--runs',
        '2',
        '--max-attempts',
        '1',
        '--out',
        out,
        ...modelFlags(server, 'model-a'),
      ],
      { cwd: home, home, timeoutMs: 300_000 },
    );
    expect(run.code, run.stderr).toBe(0);
    // progress on stderr: which case of how many, which run of how many
    expect(run.stderr).toContain('case 1/3 greet: run 1/2');
    expect(run.stderr).toContain('case 3/3 twice: run 2/2');
    expect(run.stdout).toContain('self-check: ok');
    const report = JSON.parse(readFileSync(out, 'utf8')) as Report;
    expect(report.model).toBe('model-a');
    expect(report.self_check).toEqual({ ok: true, problems: [] });
    const by = Object.fromEntries(report.cases.map((c) => [c.name, c]));
    expect(by.greet).toMatchObject({ runs: 2, successes: 2, pass_at_1: 1, pass_at_n: 1 });
    expect(by.mean).toMatchObject({ runs: 2, successes: 2, pass_at_1: 1, pass_at_n: 1 });
    expect(by.twice).toMatchObject({ runs: 2, successes: 0, pass_at_1: 0, pass_at_n: 0 });
    // each cheat was refused by the verifier itself, not by a patch that failed to apply
    for (const c of report.cases)
      expect(c.self_check.cheat.map((v) => v.code)).toEqual(['VERIFICATION_FAILED', 'VERIFICATION_FAILED']);
    expect(report.overall.pass_at_1).toBeCloseTo(2 / 3);
    // every model request was used: the model ran exactly six fixes
    expect(server.requests.filter((r) => r.method === 'POST')).toHaveLength(18);

    // a second report (another model's), compared side by side; nothing is applied
    const other = { ...report, model: 'model-b', cases: report.cases.map((c) => ({ ...c, pass_at_1: 0.5 })) };
    const b = join(home, 'b.json');
    writeFileSync(b, JSON.stringify(other));
    const before = readFileSync(out, 'utf8');
    const cmp = await keel(['eval', 'compare', out, b], { cwd: home, home });
    expect(cmp.code, cmp.stderr).toBe(0);
    expect(cmp.stdout).toContain('model-a');
    expect(cmp.stdout).toContain('model-b');
    const greetLine = cmp.stdout.split('\n').find((l) => l.startsWith('greet')) ?? '';
    expect(greetLine.match(/\d+%/g)).toEqual(['100%', '100%', '50%', '100%']);
    const json = JSON.parse((await keel(['eval', 'compare', out, b, '--json'], { cwd: home, home })).stdout);
    expect(json.cases.find((c: { case: string }) => c.case === 'twice')).toMatchObject({
      a: { pass_at_1: 0 },
      b: { pass_at_1: 0.5 },
    });
    expect(readFileSync(out, 'utf8')).toBe(before);
  }, 320_000);

  it('a case whose cheating patch the verifier accepts fails the self-check loudly, exit 1; bad cases are exit 2', async () => {
    // broken: the "cheat" is really the fix, so keel verifies it, and the eval must not be trusted
    const cases = casesDir(['twice'], (dir) => {
      writeFileSync(join(dir, 'cheat.patch'), readFileSync(join(dir, 'honest.patch')));
    });
    const server = await model(fixRun(CASES.twice.honest));
    const home = keelHome();
    const run = await keel(['eval', 'run', cases, '--json', '--max-attempts', '1', ...modelFlags(server)], {
      cwd: home,
      home,
      timeoutMs: 200_000,
    });
    expect(run.code, run.stderr).toBe(1);
    const report = JSON.parse(run.stdout) as Report;
    expect(report.self_check.ok).toBe(false);
    expect(report.self_check.problems).toEqual(['twice: the cheating patch was verified']);
    // the model's run still counts: the report is whole, only untrusted
    expect(report.cases[0]).toMatchObject({ successes: 1, pass_at_1: 1 });
    expect(run.stderr).toContain('SELF-CHECK FAILED');
    const human = await keel(['eval', 'compare', '--help'], { cwd: home, home });
    expect(human.stdout).toContain('applies nothing');

    // bad input: said with the case and the file, before any fix runs
    const missing = casesDir(['mean'], (dir) => rmSync(join(dir, 'cheat.patch')));
    const m = await keel(['eval', 'run', missing, ...modelFlags(server)], { cwd: home, home });
    expect(m.code).toBe(2);
    expect(m.stderr).toContain(`case mean: ${join(missing, 'mean', 'cheat.patch')}: missing`);
    const unknown = casesDir(['mean'], (dir) =>
      writeFileSync(join(dir, 'case.json'), JSON.stringify({ issue: 'x', tests: 'npm test' })),
    );
    const u = await keel(['eval', 'run', unknown, ...modelFlags(server)], { cwd: home, home });
    expect(u.code).toBe(2);
    expect(u.stderr).toContain('case mean:');
    expect(u.stderr).toContain('case.json: unknown key "tests"');
    const notJson = await keel(
      ['eval', 'compare', join(unknown, 'mean', 'case.json'), join(unknown, 'mean', 'case.json')],
      { cwd: home, home },
    );
    expect(notJson.code).toBe(2);
    expect(notJson.stderr).toContain('not a keel eval report');
  }, 220_000);
});
