/** ava, uvu and node-tap: detection, reporter flags, and their reports read into `file > test` ids. */
import { describe, expect, it } from 'vitest';
import { runnerOf } from '../../src/verify/detect.js';
import { parseJestJson } from '../../src/verify/parse-jest-json.js';
import { parseResults } from '../../src/verify/parse-results.js';
import { parseUvuEvents } from '../../src/verify/parse-uvu-events.js';
import { buildInvocation } from '../../src/verify/reporters.js';
import { uvuPreloadUrl } from '../../src/verify/uvu-reporter.js';

const AVA_TAP = `TAP version 13
ok 1 - stats › skipped one # SKIP
ok 2 - other › adds
ok 3 - stats › adds
not ok 4 - stats › fails
  ---
    name: AssertionError
    assertion: t.is()
    message: should be 3
    at: 'ExecutionContext.is (file:///x/node_modules/ava/lib/assert.js:309:16)'
  ...

1..4
# tests 4
# pass 2
# skip 1
# fail 1
`;

describe('runners: ava, uvu, node-tap', () => {
  it('recognises each runner by its program', () => {
    expect(runnerOf('ava --verbose')).toBe('ava');
    expect(runnerOf('c8 ava')).toBe('ava');
    expect(runnerOf('uvu tests')).toBe('uvu');
    expect(runnerOf('tap --allow-incomplete-coverage')).toBe('tap');
  });

  it('asks ava for TAP and reads its titles as `file > test` ids', () => {
    const invocation = buildInvocation(
      { command: 'npm test', runner: 'ava', source: 's', script: 'ava' },
      { reportFile: '/r/report' },
    );
    expect(invocation.display).toBe('npm test -- --tap');
    expect(invocation.parse).toBe('ava-tap');
    const outcome = parseResults('ava-tap', { log: AVA_TAP });
    expect(outcome).toEqual({
      parsed: true,
      results: [
        { id: 'stats > skipped one', name: 'skipped one', status: 'skipped' },
        { id: 'other > adds', name: 'adds', status: 'passed' },
        { id: 'stats > adds', name: 'adds', status: 'passed' },
        { id: 'stats > fails', name: 'fails', status: 'failed', message: 'should be 3' },
      ],
    });
  });

  it('filters ava by test name with --match', () => {
    const invocation = buildInvocation(
      { command: 'ava', runner: 'ava', source: 's' },
      { reportFile: '/r/report', filter: 'mean' },
    );
    expect(invocation.display).toBe("ava --tap --match '*mean*'");
  });

  it('gives uvu a preload and reads its report into `file > suite > test` ids', () => {
    const invocation = buildInvocation(
      { command: 'uvu tests', runner: 'uvu', source: 's' },
      { reportFile: '/r/report' },
    );
    expect(invocation.parse).toBe('uvu-events');
    expect(invocation.command).toContain(`--import=${uvuPreloadUrl()}`);
    expect(invocation.command).toContain('KEEL_UVU_REPORT');
    const report = [
      '{"keel":1,"file":"/p/tests/a.test.js","suite":"math","name":"adds","status":"pass"}',
      '{"keel":1,"file":"/p/tests/a.test.js","suite":"","name":"fails","status":"fail","message":"Expected 4"}',
      '{"keel":1,"file":"/p/tests/a.test.js","suite":"","name":"","status":"pass"}',
      'not json',
    ].join('\n');
    expect(parseUvuEvents(report, { root: '/p' })).toEqual([
      { id: 'tests/a.test.js > math > adds', name: 'adds', file: 'tests/a.test.js', status: 'passed' },
      {
        id: 'tests/a.test.js > fails',
        name: 'fails',
        file: 'tests/a.test.js',
        status: 'failed',
        message: 'Expected 4',
      },
      { id: 'tests/a.test.js > ""', name: '', file: 'tests/a.test.js', status: 'passed' },
    ]);
    expect(parseResults('uvu-events', { log: '' })).toMatchObject({ parsed: false });
  });

  it('asks node-tap for TAP', () => {
    const invocation = buildInvocation(
      { command: 'npm test', runner: 'tap', source: 's', script: 'tap' },
      { reportFile: '/r/report' },
    );
    expect(invocation.display).toBe('npm test -- --reporter=tap');
  });
});

describe('vitest: a test named ""', () => {
  it('gets an id of its own, not its describe block', () => {
    const report = JSON.stringify({
      testResults: [
        {
          name: '/p/a.test.ts',
          status: 'failed',
          assertionResults: [
            { title: '', ancestorTitles: ['math'], status: 'failed', failureMessages: ['boom'] },
            { title: 'adds', ancestorTitles: ['math'], status: 'passed' },
          ],
        },
      ],
    });
    const results = parseJestJson(report, { root: '/p' });
    expect(results.map((r) => r.id)).toEqual(['a.test.ts > math > ""', 'a.test.ts > math > adds']);
    expect(results[0]).toMatchObject({ name: '', status: 'failed' });
  });
});
