/**
 * `keel fix` on runners and script chains the way a user meets them: ava, uvu, and `npm test` that
 * runs lint steps before `npm run tests-only`. Each runner's dependencies are really installed in the
 * fixture (copied from keel's devDependencies), and run in the real sandbox through the real binary.
 * node-tap, the slowest, has its own file (fix-runners-tap.test.ts) so the two run side by side.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { fixtureRepo } from './fix-harness.js';
import { attempt, BUG, describeRunner, expectRefused, expectVerified, FIXED } from './fix-runners-harness.js';

describeRunner({
  title: 'keel fix with ava',
  fixture: 'ava',
  packages: ['ava'],
  target: 'mean of 2, 4, 6 is 4',
  weakening: {
    title: 't.pass() in place of the failing assertion is not verified',
    path: 'test/stats.test.js',
    from: 't.is(mean([2, 4, 6]), 4);',
    to: 't.pass();',
  },
});

describeRunner({
  title: 'keel fix with uvu',
  fixture: 'uvu',
  packages: ['uvu'],
  target: 'tests/stats.test.js > mean of 2, 4, 6 is 4',
  weakening: {
    title: '`return;` at the top of the failing test is not verified',
    path: 'tests/stats.test.js',
    from: "test('mean of 2, 4, 6 is 4', () => {\n",
    to: "test('mean of 2, 4, 6 is 4', () => {\n  return;\n",
  },
  // a named suite in another file keeps its name in the id
  alsoVerified: (result) =>
    expect(result.doc.verification?.reason).toContain('none of the 4 tests that passed at baseline fails'),
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
