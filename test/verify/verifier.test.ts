import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { detectTestCommand } from '../../src/verify/detect.js';
import { buildInvocation } from '../../src/verify/reporters.js';
import { runSuite, wholeSuiteRerun } from '../../src/verify/run.js';
import { resolveTargets } from '../../src/verify/targets.js';
import type { SuiteRun, TestResult, TestStatus } from '../../src/verify/types.js';
import { baseline, collectionError, verify, withTestEdits } from '../../src/verify/verifier.js';
import { tempDir, writeFiles } from '../helpers/tmp.js';

/** A parsed run whose tests have the given statuses (`file > test` ids). */
function suite(statuses: Record<string, TestStatus>, over: Partial<SuiteRun> = {}): SuiteRun {
  const results: TestResult[] = Object.entries(statuses).map(([id, status]) => {
    const [file, name] = id.split(' > ');
    return {
      id,
      name: name ?? id,
      ...(file === undefined ? {} : { file }),
      status,
      ...(status === 'failed' ? { message: `${name} broke\nstack` } : {}),
    };
  });
  const failed = results.some((r) => r.status === 'failed');
  return {
    command: 'npm test',
    runner: 'vitest',
    exitCode: failed ? 1 : 0,
    timedOut: false,
    durationMs: 10,
    results,
    output: '',
    parsed: true,
    collected: results.length,
    ...over,
  };
}

const BEFORE = suite({
  'a.test.ts > adds': 'failed',
  'a.test.ts > subtracts': 'passed',
  'b.test.ts > divides': 'passed',
});

describe('verify', () => {
  it('verifies when the target passes and nothing that passed now fails', async () => {
    const after = suite({
      'a.test.ts > adds': 'passed',
      'a.test.ts > subtracts': 'passed',
      'b.test.ts > divides': 'passed',
    });
    const verdict = await verify({ baseline: BEFORE, after, targets: [] });
    expect(verdict).toMatchObject({
      status: 'verified',
      mode: 'per-test',
      targetsPassing: ['a.test.ts > adds'],
      targetsFailing: [],
      regressions: [],
    });
    expect(verdict.reason).toMatch(
      /^verified: 1 target passes .*none of the 2 tests that passed at baseline fails/,
    );
  });

  it('fails while the target still fails, quoting its message', async () => {
    const verdict = await verify({ baseline: BEFORE, after: BEFORE, targets: [] });
    expect(verdict).toMatchObject({ status: 'failed', targetsFailing: ['a.test.ts > adds'] });
    expect(verdict.reason).toBe('not verified: target still failing: a.test.ts > adds (adds broke)');
  });

  it('names a regression that fails again on rerun', async () => {
    const after = suite({
      'a.test.ts > adds': 'passed',
      'a.test.ts > subtracts': 'failed',
      'b.test.ts > divides': 'passed',
    });
    const asked: string[][] = [];
    const verdict = await verify({
      baseline: BEFORE,
      after,
      targets: [],
      rerun: async (ids) => {
        asked.push(ids);
        return after;
      },
    });
    expect(asked).toEqual([['a.test.ts > subtracts']]);
    expect(verdict).toMatchObject({ status: 'failed', regressions: ['a.test.ts > subtracts'], flaky: [] });
    expect(verdict.reason).toMatch(
      /regressed \(passed at baseline, fail now\): a.test.ts > subtracts \(subtracts broke\)/,
    );
  });

  it('calls a failure that passes on rerun flaky, not a regression', async () => {
    const after = suite({
      'a.test.ts > adds': 'passed',
      'a.test.ts > subtracts': 'failed',
      'b.test.ts > divides': 'passed',
    });
    const rerun = async () =>
      suite({
        'a.test.ts > adds': 'passed',
        'a.test.ts > subtracts': 'passed',
        'b.test.ts > divides': 'passed',
      });
    const verdict = await verify({ baseline: BEFORE, after, targets: [], rerun });
    expect(verdict).toMatchObject({ status: 'verified', regressions: [], flaky: ['a.test.ts > subtracts'] });
    expect(verdict.reason).toMatch(/flaky \(failed, then passed on rerun\): a.test.ts > subtracts/);
  });

  it('counts a passing test that no longer runs (deleted or skipped) as a regression', async () => {
    const after = suite({ 'a.test.ts > adds': 'passed', 'a.test.ts > subtracts': 'skipped' });
    const verdict = await verify({ baseline: BEFORE, after, targets: [] });
    expect(verdict.regressions).toEqual(['a.test.ts > subtracts', 'b.test.ts > divides']);
    expect(verdict.reason).toMatch(/a.test.ts > subtracts \(skipped\), b.test.ts > divides \(did not run\)/);
  });

  it('never passes a run that collected no tests', async () => {
    const empty = suite({}, { exitCode: 0 });
    const verdict = await verify({ baseline: BEFORE, after: empty, targets: [] });
    expect(verdict.status).toBe('failed');
    expect(verdict.reason).toMatch(/collected no tests/);
    const emptyByExitCode = suite({}, { exitCode: 0, parsed: false, collected: 0 });
    expect((await verify({ baseline: BEFORE, after: emptyByExitCode, targets: ['adds'] })).status).toBe(
      'failed',
    );
  });

  it('reports an environment problem instead of a test verdict', async () => {
    const after = suite(
      {},
      { exitCode: 1, environmentProblem: 'Node package not installed: lodash', collected: null },
    );
    const verdict = await verify({ baseline: BEFORE, after, targets: ['adds'] });
    expect(verdict).toMatchObject({
      status: 'failed',
      environmentProblem: 'Node package not installed: lodash',
      reason: 'not verified: environment problem: Node package not installed: lodash',
    });
  });

  it('matches targets by id, by name, by file and by pytest node id', async () => {
    const before = suite({
      'tests/test_calc.py > TestCalc > test_add': 'failed',
      'tests/test_calc.py > test_sub': 'failed',
      'tests/test_io.py > test_read': 'passed',
    });
    const after = suite({
      'tests/test_calc.py > TestCalc > test_add': 'passed',
      'tests/test_calc.py > test_sub': 'failed',
      'tests/test_io.py > test_read': 'passed',
    });
    const ok = await verify({ baseline: before, after, targets: ['tests/test_calc.py::TestCalc::test_add'] });
    expect(ok).toMatchObject({
      status: 'verified',
      targetsPassing: ['tests/test_calc.py > TestCalc > test_add'],
    });
    expect((await verify({ baseline: before, after, targets: ['test_add'] })).status).toBe('verified');
    const byFile = await verify({ baseline: before, after, targets: ['tests/test_calc.py'] });
    expect(byFile).toMatchObject({ status: 'failed', targetsFailing: ['tests/test_calc.py > test_sub'] });
    const byFolder = await verify({ baseline: before, after, targets: ['tests/'] });
    expect(byFolder.targetsPassing).toHaveLength(2);
  });

  it('refuses a target that matches nothing, naming close candidates', async () => {
    const verdict = await verify({ baseline: BEFORE, after: BEFORE, targets: ['add'] });
    expect(verdict.status).toBe('failed');
    expect(verdict.reason).toBe('not verified: no test target matches "add" (close: "a.test.ts > adds")');
  });

  it('refuses to call anything verified when nothing failed at baseline and no target was named', async () => {
    const green = suite({ 'a.test.ts > adds': 'passed' });
    expect((await verify({ baseline: green, after: green, targets: [] })).reason).toMatch(
      /no test failed at baseline/,
    );
  });

  it('fails a suite that exits non-zero though every test passed', async () => {
    const after = suite(
      { 'a.test.ts > adds': 'passed', 'a.test.ts > subtracts': 'passed', 'b.test.ts > divides': 'passed' },
      { exitCode: 1 },
    );
    const verdict = await verify({ baseline: BEFORE, after, targets: [] });
    expect(verdict.status).toBe('failed');
    expect(verdict.reason).toMatch(/exited 1 though no test failed/);
  });

  it('judges by exit code when results cannot be parsed, and says so', async () => {
    const note = 'keel does not recognize the test runner in `make test`; per-test results are unavailable';
    const before = suite({}, { parsed: false, exitCode: 2, collected: null, note });
    const passed = await verify({
      baseline: before,
      after: suite({}, { parsed: false, exitCode: 0, collected: null, note }),
      targets: [],
    });
    expect(passed).toMatchObject({ status: 'verified', mode: 'exit-code' });
    expect(passed.reason).toMatch(
      /^verified by exit code only: the suite exited 0 \(the test count is unknown\).*make test/,
    );
    const failed = await verify({ baseline: before, after: before, targets: [] });
    expect(failed).toMatchObject({ status: 'failed', mode: 'exit-code' });
    expect(failed.reason).toMatch(/exited 2 \(judged by exit code only/);
  });
});

describe('baseline and resolveTargets', () => {
  it('summarizes a baseline and flags one that cannot anchor a verification', () => {
    expect(baseline(BEFORE)).toEqual({
      mode: 'per-test',
      passing: ['a.test.ts > subtracts', 'b.test.ts > divides'],
      failing: ['a.test.ts > adds'],
      skipped: [],
    });
    expect(baseline(suite({}, { exitCode: 0 })).problem).toMatch(/collected no tests/);
    expect(baseline(suite({}, { timedOut: true, exitCode: null })).problem).toBe('the suite timed out');
  });

  it('resolves requests to ids or names what did not match', () => {
    expect(resolveTargets(BEFORE, ['./a.test.ts'])).toEqual({
      ok: true,
      ids: ['a.test.ts > adds', 'a.test.ts > subtracts'],
    });
    const miss = resolveTargets(BEFORE, ['divide', 'zzzzzz']);
    expect(miss).toEqual({
      ok: false,
      unmatched: ['divide', 'zzzzzz'],
      error: 'no test targets match "divide" (close: "b.test.ts > divides"); "zzzzzz" (no similar test)',
    });
  });
});

describe('verify on a real project', () => {
  it('verifies a fix, then catches a regression that a rerun confirms', async () => {
    const root = tempDir();
    writeFiles(root, {
      'package.json': JSON.stringify({ type: 'module', scripts: { test: 'node --test' } }),
      'src/math.js': 'export const add = (a, b) => a - b;\nexport const double = (a) => a * 2;\n',
      'test/math.test.js': `import { test } from 'node:test';
import assert from 'node:assert/strict';
import { add, double } from '../src/math.js';
test('add', () => assert.equal(add(2, 3), 5));
test('double', () => assert.equal(double(4), 8));
`,
    });
    const detected = detectTestCommand(root);
    if (detected === undefined) throw new Error('not detected');
    const invocation = buildInvocation(detected, { reportFile: join(tempDir(), 'report') });
    const opts = { timeoutS: 60, signal: new AbortController().signal };

    const before = await runSuite(root, invocation, opts);
    expect(baseline(before).failing).toEqual(['test/math.test.js > add']);

    writeFileSync(
      join(root, 'src/math.js'),
      'export const add = (a, b) => a + b;\nexport const double = (a) => a * 2;\n',
    );
    const fixed = await verify({
      baseline: before,
      after: await runSuite(root, invocation, opts),
      targets: [],
    });
    expect(fixed).toMatchObject({ status: 'verified', targetsPassing: ['test/math.test.js > add'] });

    writeFileSync(
      join(root, 'src/math.js'),
      'export const add = (a, b) => a + b;\nexport const double = (a) => a * 3;\n',
    );
    const broken = await verify({
      baseline: before,
      after: await runSuite(root, invocation, opts),
      targets: ['add'],
      rerun: wholeSuiteRerun(root, invocation, opts),
    });
    expect(broken).toMatchObject({
      status: 'failed',
      regressions: ['test/math.test.js > double'],
      flaky: [],
    });
  });
});

describe('collection errors and test edits', () => {
  it('a baseline with nothing passing and a file-level failure is a collection error', () => {
    const broken = suite(
      { 'tests/test_a.py': 'failed' },
      { output: 'E   ImportError: cannot import name b\nInterrupted: 1 error during collection' },
    );
    expect(collectionError(broken)).toContain('tests/test_a.py could not be loaded');
    expect(baseline(broken).collectionError).toContain('ImportError: cannot import name b');
    // one test passing means the suite loads: a broken file is then an ordinary failing target
    expect(collectionError(suite({ 'tests/test_a.py': 'failed', 'tests/test_b.py > ok': 'passed' }))).toBe(
      undefined,
    );
    expect(collectionError(suite({ 'a.test.ts > adds': 'failed' }))).toBe(undefined);
  });

  it('test edits are named in the verdict, and an unsafe set-aside fails it', async () => {
    const verdict = await verify({
      baseline: BEFORE,
      after: suite({ 'a.test.ts > adds': 'passed' }),
      targets: [],
    });
    const setAside = withTestEdits(verdict, ['a.test.ts'], false);
    expect(setAside).toMatchObject({
      status: verdict.status,
      testEdits: ['a.test.ts'],
      testEditsCounted: false,
    });
    expect(setAside.reason).toContain('do not count');
    expect(withTestEdits(verdict, ['a.test.ts'], true).reason).toContain('--allow-test-edits');
    expect(withTestEdits(verdict, ['a.test.ts'], false, 'test was replaced by a link')).toMatchObject({
      status: 'failed',
      reason: 'not verified: test was replaced by a link',
    });
  });
});
