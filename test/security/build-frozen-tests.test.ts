/**
 * keel build's acceptance tests are frozen once approved: an implementation attempt that edits them to
 * pass is judged with the frozen versions, and the test-writing phase may write test files only.
 */
import { describe, expect, it } from 'vitest';
import { build, MEDIAN, MEDIAN_TEST, SUM, TESTS_TURNS, tinyProject } from '../e2e/build-harness.js';
import { model } from '../e2e/harness.js';
import { git } from '../helpers/tmp.js';

describe('keel build: frozen tests', () => {
  it('an attempt that rewrites the frozen test to pass (or empties it) is not verified', async () => {
    const repo = tinyProject();
    const weakened = MEDIAN_TEST.replace('stats.median?.([3, 1, 2]), 2', '2, 2');
    const server = await model([
      ...TESTS_TURNS,
      { text: '1. Make the test pass.' },
      { tool_calls: [{ name: 'write_file', arguments: { path: 'test/median.test.js', content: weakened } }] },
      { text: 'The test passes now.' },
      // the obvious variant: the frozen test emptied, a stub median added
      {
        tool_calls: [
          { name: 'write_file', arguments: { path: 'test/median.test.js', content: '' } },
          {
            name: 'write_file',
            arguments: { path: 'src/stats.js', content: `${SUM}export const median = () => 0;\n` },
          },
        ],
      },
      { text: 'Removed the failing test.' },
    ]);
    const { run, doc } = await build(repo, server, ['add a median function', '--max-attempts', '2']);
    expect(run.code, run.stderr).toBe(1);
    expect(doc).toMatchObject({ code: 'VERIFICATION_FAILED', status: 'failed', attempts: 2 });
    expect(doc.verification?.status).toBe('failed');
    expect(doc.verification?.testEdits).toEqual(['test/median.test.js']);
    expect(doc.verification?.targetsFailing).toEqual(['test/median.test.js > median of 3, 1, 2 is 2']);
  });

  it('the test-writing phase cannot write a non-test file (an implementation to fake "already exists")', async () => {
    const repo = tinyProject();
    const server = await model([
      { tool_calls: [{ name: 'write_file', arguments: { path: 'src/stats.js', content: SUM + MEDIAN } }] },
      // the obvious variant: the same write through a shell command (sandboxed to the test folders)
      {
        tool_calls: [
          {
            name: 'shell',
            arguments: { command: "printf 'export const median = () => 2;\\n' >> src/stats.js" },
          },
        ],
        // (the write_file just before was refused by the scope)
        expect: { last_tool_result_contains: 'outside the writable scope' },
      },
      // the sandbox mounts only the test folders writable
      {
        ...(TESTS_TURNS[0] as (typeof TESTS_TURNS)[number]),
        expect: { last_tool_result_contains: 'src/stats.js: Read-only file system' },
      },
      TESTS_TURNS[1] as (typeof TESTS_TURNS)[number],
      { text: '1. Nothing.' },
      { text: 'I changed nothing.' },
    ]);
    const { run, doc } = await build(repo, server, ['add a median function', '--max-attempts', '1']);
    // the refused write never happened: the new test fails on the baseline, so it is no "already exists"
    expect(doc).toMatchObject({ status: 'failed', code: 'VERIFICATION_FAILED', attempts: 1 });
    expect(run.code).toBe(1);
    expect(doc.tests_written.map((t) => t.path)).toEqual(['test/median.test.js']);
    expect(git(repo, 'branch', '--list', 'keel/*')).not.toContain('tests-');
  });
});
