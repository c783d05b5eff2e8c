/** Cargo's libtest text output: `test path::name ... ok|FAILED|ignored`, per test binary. */
import { clipMessage, dedupeIds, joinId, stripAnsi } from './result-ids.js';
import type { TestResult, TestStatus } from './types.js';

const RUNNING = /^\s*Running (?:unittests )?(\S+)(?: \(.*\))?\s*$/;
const DOC_TESTS = /^\s*Doc-tests (\S+)\s*$/;
const TEST_LINE = /^test (.+?) \.\.\. (ok|FAILED|ignored(?:, .*)?)\s*$/;
const FAILURE_HEADER = /^---- (.+?) std(?:out|err) ----$/;

/** Parse `cargo test` output (stdout and stderr together, so each test knows its target). */
export function parseCargo(text: string): TestResult[] {
  const found: Array<{ result: TestResult; target: string }> = [];
  let target = '';
  let current: { name: string; lines: string[] } | undefined;
  const details = new Map<string, string>();
  const flush = (): void => {
    if (current !== undefined) details.set(`${target}\u0000${current.name}`, current.lines.join('\n'));
    current = undefined;
  };
  for (const line of stripAnsi(text).split(/\r?\n/)) {
    const running = RUNNING.exec(line) ?? DOC_TESTS.exec(line);
    if (running !== null) {
      flush();
      target = DOC_TESTS.test(line) ? '' : (running[1] ?? '');
      continue;
    }
    const header = FAILURE_HEADER.exec(line);
    if (header !== null) {
      flush();
      current = { name: header[1] ?? '', lines: [] };
      continue;
    }
    if (current !== undefined && (line === 'failures:' || line.startsWith('test result:'))) {
      flush();
      continue;
    }
    if (current !== undefined) {
      current.lines.push(line);
      continue;
    }
    const test = TEST_LINE.exec(line);
    if (test === null) continue;
    found.push({ result: toResult(test[1] ?? '', test[2] ?? '', target), target });
  }
  flush();
  for (const { result, target: where } of found) {
    const message = clipMessage(details.get(`${where}\u0000${result.name}`));
    if (result.status === 'failed' && message !== undefined) result.message = message;
  }
  return dedupeIds(found.map(({ result }) => result));
}

function toResult(name: string, outcome: string, target: string): TestResult {
  const status: TestStatus = outcome === 'ok' ? 'passed' : outcome === 'FAILED' ? 'failed' : 'skipped';
  const doc = target === '' ? /^(\S+) - (.*?)(?: \(line \d+\))?$/.exec(name) : null;
  // a doc test's line number moves whenever code above it changes; the id must not
  const file = doc?.[1] ?? (target === '' ? undefined : target);
  const idName = doc === null ? name : `doc ${doc[2] ?? name}`;
  return { id: joinId([file, idName]), name, ...(file === undefined ? {} : { file }), status };
}
