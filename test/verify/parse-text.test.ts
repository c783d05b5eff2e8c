import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { parseCargo } from '../../src/verify/parse-cargo.js';
import { goJsonText, parseGoJson } from '../../src/verify/parse-go-json.js';
import { countFromSummary } from '../../src/verify/parse-results.js';
import { parseTap } from '../../src/verify/parse-tap.js';
import { tempDir, writeFiles } from '../helpers/tmp.js';
import { CARGO_OUTPUT, GO_JSON, NODE_TAP_OUTPUT, TAPE_OUTPUT } from './samples.js';

const byId = <T extends { id: string }>(results: T[]) => Object.fromEntries(results.map((r) => [r.id, r]));

describe('TAP', () => {
  it("reads node's own TAP reporter: nested suites, skip and todo, a file that failed to load", () => {
    const root = tempDir();
    writeFiles(root, {
      'test/a.test.js': `import { describe, it, test } from 'node:test';
import assert from 'node:assert/strict';
test('adds', () => assert.equal(1 + 1, 2));
describe('suite', () => {
  it('inner fails', () => assert.equal(1, 2));
  it.skip('skipped one', () => {});
  it.todo('todo one');
});
test('parent', async (t) => { await t.test('child', () => {}); });
`,
      'test/b.test.js': "import 'left-pad-missing-xyz';\n",
      'test/empty.test.js': '// no tests here\n',
    });
    const tap = spawnSync('node', ['--test', '--test-reporter=tap'], { cwd: root, encoding: 'utf8' }).stdout;
    const results = byId(parseTap(tap, { root }));
    expect(results.adds?.status).toBe('passed');
    expect(results['suite > inner fails']).toMatchObject({ status: 'failed', file: 'test/a.test.js' });
    expect(results['suite > inner fails']?.message).toMatch(/strictly equal/);
    expect(results['suite > skipped one']?.status).toBe('skipped');
    expect(results['suite > todo one']?.status).toBe('skipped');
    expect(results['parent > child']?.status).toBe('passed');
    // the file that could not load is a failure; the empty file is not a test
    expect(results['test/b.test.js']?.status).toBe('failed');
    expect(Object.keys(results)).not.toContain('test/empty.test.js');
    expect(Object.keys(results)).not.toContain('suite');
    expect(countFromSummary(tap)).toBe(8);
  });

  it("reads tape's flat style: assertions grouped under their `# name`", () => {
    const results = parseTap(TAPE_OUTPUT);
    expect(results.map((r) => [r.id, r.status])).toEqual([
      ['adds numbers', 'passed'],
      ['subtracts numbers', 'failed'],
      ['pending work', 'skipped'],
    ]);
    expect(results[1]?.message).toMatch(/should be strictly equal/);
  });

  it("reads node-tap's TAP 14: the file subtest is the file, assertions belong to their test", () => {
    const results = byId(parseTap(NODE_TAP_OUTPUT));
    expect(Object.keys(results)).toEqual([
      'test/math.js > adds',
      'test/math.js > divides',
      'test/math.js > later',
    ]);
    expect(results['test/math.js > adds']).toMatchObject({ status: 'passed', file: 'test/math.js' });
    expect(results['test/math.js > divides']?.status).toBe('failed');
    expect(results['test/math.js > divides']?.message).toMatch(/should not throw: division by zero/);
    expect(results['test/math.js > later']?.status).toBe('skipped');
  });

  it('keeps a failure of a suite whose own hook failed while its tests passed', () => {
    const tap = `TAP version 13
# Subtest: suite
    # Subtest: one
    ok 1 - one
    1..1
not ok 1 - suite
  ---
  type: 'suite'
  error: 'after hook failed'
  ...
1..1
`;
    expect(parseTap(tap).map((r) => [r.id, r.status, r.message])).toEqual([
      ['suite > one', 'passed', undefined],
      ['suite', 'failed', 'after hook failed'],
    ]);
  });

  it('tolerates junk, escaped hashes and a stream cut off mid-run', () => {
    const tap =
      'npm warn something\nTAP version 14\nok 1 - has \\# hash\nnot ok 2 - broken # Skip later\n# Subtest: cut\n    ok 1 - done\n';
    expect(parseTap(tap).map((r) => [r.id, r.status])).toEqual([
      ['has # hash', 'passed'],
      ['broken', 'skipped'],
      ['done', 'passed'],
    ]);
  });
});

describe('go test -json', () => {
  it('reads tests, subtests as the tests of a table, skips and a package that did not build', () => {
    const results = byId(parseGoJson(GO_JSON));
    expect(Object.keys(results).sort()).toEqual([
      'example.com/broken',
      'example.com/calc > TestAdd',
      'example.com/calc > TestSlow',
      'example.com/calc > TestTable/one',
      'example.com/calc > TestTable/two',
    ]);
    expect(results['example.com/calc > TestAdd']).toMatchObject({
      status: 'passed',
      file: 'example.com/calc',
      durationMs: 1,
    });
    expect(results['example.com/calc > TestTable/two']?.message).toMatch(/got 3, want 4/);
    expect(results['example.com/calc > TestSlow']?.status).toBe('skipped');
    expect(results['example.com/broken']?.message).toMatch(/undefined: nope/);
    expect(goJsonText(GO_JSON)).toContain('--- PASS: TestAdd');
  });
});

describe('cargo libtest output', () => {
  it('reads each target, ignored tests, failure output and doc tests with line-free ids', () => {
    const results = byId(parseCargo(CARGO_OUTPUT));
    expect(Object.keys(results)).toEqual([
      'src/lib.rs > tests::it_works',
      'src/lib.rs > tests::slow',
      'src/lib.rs > tests::it_fails',
      'tests/integ.rs > integ_ok',
      'src/lib.rs > doc add',
    ]);
    expect(results['src/lib.rs > tests::slow']?.status).toBe('skipped');
    expect(results['src/lib.rs > tests::it_fails']?.message).toMatch(/left: 4/);
    expect(results['src/lib.rs > doc add']).toMatchObject({
      name: 'src/lib.rs - add (line 3)',
      status: 'passed',
    });
    expect(countFromSummary(CARGO_OUTPUT)).toBe(5);
  });
});

describe('summary counts for exit-code runs', () => {
  it('reads the count each runner prints, and zero when it says none ran', () => {
    expect(countFromSummary('Tests:       1 failed, 3 passed, 4 total')).toBe(4);
    expect(countFromSummary('      Tests  1 failed | 2 passed (3)')).toBe(3);
    expect(countFromSummary('===== 1 failed, 4 passed, 1 skipped in 0.94s =====')).toBe(6);
    expect(countFromSummary('============ no tests ran in 0.01s ============')).toBe(0);
    expect(countFromSummary('  3 passing (12ms)\n  1 failing')).toBe(4);
    expect(countFromSummary('ℹ tests 0\nℹ pass 0')).toBe(0);
    expect(countFromSummary('all good, trust me')).toBeNull();
  });
});
