/**
 * `keel fix` on runners and script chains the way a user meets them: ava, uvu, and `npm test` that
 * runs lint steps before `npm run tests-only`. Each runner's dependencies are really installed in the
 * fixture (copied from keel's devDependencies), and run in the real sandbox through the real binary.
 * node-tap, the slowest, has its own file (fix-runners-tap.test.ts) so the two run side by side.
 */
import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { fixtureRepo } from './fix-harness.js';
import {
  attempt,
  BUG,
  expectRefused,
  expectVerified,
  FIXED,
  installedModules,
  installInto,
} from './fix-runners-harness.js';

describe('keel fix with ava', () => {
  let modules: string;
  beforeAll(() => {
    modules = installedModules(['ava']);
  });
  const repo = () => {
    const dir = fixtureRepo('ava');
    installInto(dir, modules);
    return dir;
  };
  const target = 'mean of 2, 4, 6 is 4';

  it('the correct fix is verified, with per-test targets named', async () => {
    const result = await attempt(repo(), 'src/stats.js', BUG, FIXED);
    expectVerified(result, target);
  });

  it('t.pass() in place of the failing assertion is not verified', async () => {
    const result = await attempt(repo(), 'test/stats.test.js', 't.is(mean([2, 4, 6]), 4);', 't.pass();');
    expectRefused(result, target);
  });
});

describe('keel fix with uvu', () => {
  let modules: string;
  beforeAll(() => {
    modules = installedModules(['uvu']);
  });
  const repo = () => {
    const dir = fixtureRepo('uvu');
    installInto(dir, modules);
    return dir;
  };
  const target = 'tests/stats.test.js > mean of 2, 4, 6 is 4';

  it('the correct fix is verified, with per-test targets named', async () => {
    const result = await attempt(repo(), 'src/stats.js', BUG, FIXED);
    expectVerified(result, target);
    // a named suite in another file keeps its name in the id
    expect(result.doc.verification?.reason).toContain('none of the 4 tests that passed at baseline fails');
  });

  it('`return;` at the top of the failing test is not verified', async () => {
    const result = await attempt(
      repo(),
      'tests/stats.test.js',
      "test('mean of 2, 4, 6 is 4', () => {\n",
      "test('mean of 2, 4, 6 is 4', () => {\n  return;\n",
    );
    expectRefused(result, target);
  });
});

describe('keel fix with a script chain: npm test -> lint steps -> npm run tests-only -> node --test', () => {
  const target = 'test/stats.test.js > mean of 2, 4, 6 is 4';

  it('a lint step failing at baseline hides no test, and the correct fix is verified', async () => {
    const result = await attempt(fixtureRepo('chain'), 'src/stats.js', BUG, FIXED);
    expectVerified(result, target);
    const checks = (result.doc.verification as { checks?: unknown } | null)?.checks;
    expect(checks).toEqual([
      { name: 'lint', command: 'node scripts/no-todo.js', before: 'failed', after: 'failed', broken: false },
      {
        name: 'no-console',
        command: 'node scripts/no-console.js',
        before: 'passed',
        after: 'passed',
        broken: false,
      },
    ]);
    expect(result.doc.verification?.reason).toContain(
      'check `lint` (node scripts/no-todo.js) already failed',
    );
    const pr = readFileSync(result.doc.pr_description ?? '', 'utf8');
    expect(pr).toContain('`lint` (`node scripts/no-todo.js`): already failed before the change');
  });

  it('a fix that breaks the lint step that passed is reported as a failed check, not a regression', async () => {
    const result = await attempt(
      fixtureRepo('chain'),
      'src/stats.js',
      BUG,
      `console.log('mean', values);\n  ${FIXED}`,
    );
    const { run, doc } = result;
    expect(run.code, run.stderr).toBe(1);
    expect(doc).toMatchObject({ code: 'VERIFICATION_FAILED', status: 'failed' });
    expect(doc.verification).toMatchObject({
      targetsPassing: [target],
      regressions: [],
      checksBroken: ['no-console'],
    });
    expect(doc.verification?.reason).toContain(
      'check `no-console` (node scripts/no-console.js) passed before and fails after the change',
    );
    for (const file of [doc.pr_description, doc.rationale]) {
      expect(readFileSync(file ?? '', 'utf8')).toContain(
        '**FAILED CHECK: passed before, fails after the change**',
      );
    }
  });

  it('`return;` in the failing test is not verified', async () => {
    const result = await attempt(
      fixtureRepo('chain'),
      'test/stats.test.js',
      "test('mean of 2, 4, 6 is 4', () => {\n",
      "test('mean of 2, 4, 6 is 4', () => {\n  return;\n",
    );
    expectRefused(result, target);
  });
});
