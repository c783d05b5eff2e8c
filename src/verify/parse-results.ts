/** One entry point over the parsers, plus the summary-line count used when per-test results are unavailable. */
import { parseCargo } from './parse-cargo.js';
import { parseGoJson } from './parse-go-json.js';
import { parseJestJson } from './parse-jest-json.js';
import { parseJunit } from './parse-junit.js';
import { parseMochaJson } from './parse-mocha-json.js';
import { parseNodeEvents } from './parse-node-events.js';
import { parseTap } from './parse-tap.js';
import { parseUvuEvents } from './parse-uvu-events.js';
import { ID_SEPARATOR, stripAnsi } from './result-ids.js';
import type { ParseFormat, TestResult } from './types.js';

export interface ReportSources {
  /** The report file's text, when the format writes one and it exists. */
  report?: string;
  /** The combined stdout and stderr. */
  log: string;
  root?: string;
}

export type ParseOutcome = { parsed: true; results: TestResult[] } | { parsed: false; why: string };

/** Read per-test results in `format` from a run's report or log. */
export function parseResults(format: ParseFormat, sources: ReportSources): ParseOutcome {
  const opts = sources.root === undefined ? {} : { root: sources.root };
  const fromReport = (what: string, parse: (text: string) => TestResult[]): ParseOutcome => {
    if (sources.report === undefined) return { parsed: false, why: `the runner wrote no ${what}` };
    try {
      return { parsed: true, results: parse(sources.report) };
    } catch (err) {
      return { parsed: false, why: `the ${what} could not be read: ${(err as Error).message}` };
    }
  };
  // stdout formats: an empty result from output with no recognizable line means the format never appeared
  const fromLog = (results: TestResult[], marker: RegExp, what: string): ParseOutcome =>
    results.length > 0 || marker.test(sources.log)
      ? { parsed: true, results }
      : { parsed: false, why: `no ${what} in the output` };
  switch (format) {
    case 'vitest-json':
    case 'jest-json':
      return fromReport('JSON report', (text) => parseJestJson(text, opts));
    case 'junit':
      return fromReport('JUnit XML report', (text) => parseJunit(text, opts));
    case 'uvu-events':
      return fromReport('uvu test report', (text) => parseUvuEvents(text, opts));
    case 'node-events':
      return fromReport('test event report', (text) => parseNodeEvents(text, opts));
    case 'mocha-json': {
      // mocha before 10 ignores the output option and prints the report to stdout instead
      const fromFile = fromReport('mocha JSON report', (text) => parseMochaJson(text, opts));
      return fromFile.parsed
        ? fromFile
        : fromText('mocha JSON report', () => parseMochaJson(sources.log, opts));
    }
    case 'tap':
      return fromLog(parseTap(sources.log, opts), /^\s*(TAP version|1\.\.\d+)/m, 'TAP');
    case 'ava-tap':
      return fromLog(avaResults(parseTap(sources.log, opts)), /^\s*(TAP version|1\.\.\d+)/m, 'TAP');
    case 'go-json':
      return fromLog(
        parseGoJson(sources.log),
        /^\{"Time"|^\{"Action"|^\{"ImportPath"/m,
        'go test -json events',
      );
    case 'cargo':
      return fromLog(parseCargo(sources.log), /^running \d+ tests?$/m, 'libtest results');
    case 'exit-code':
      return { parsed: false, why: 'the runner gives no per-test results' };
  }
}

/**
 * ava titles a test `file › name` (the file without its folder and extension); keel's ids use ` > `. Its
 * TAP names no test file: the `at` location of a failure is ava's own assertion code, so it is dropped.
 */
function avaResults(results: TestResult[]): TestResult[] {
  return results.map(({ file: _location, ...result }) => {
    const parts = result.id.split(' › ');
    return { ...result, id: parts.join(ID_SEPARATOR), name: parts.at(-1) ?? result.name };
  });
}

function fromText(what: string, parse: () => TestResult[]): ParseOutcome {
  try {
    return { parsed: true, results: parse() };
  } catch (err) {
    return { parsed: false, why: `the ${what} could not be read: ${(err as Error).message}` };
  }
}

/**
 * How many tests a run reports in its summary lines, for runs whose results cannot be parsed; null when
 * no known summary appears. Zero is a real answer: the runner said it found no tests.
 */
export function countFromSummary(output: string): number | null {
  const text = stripAnsi(output);
  const sum = (pattern: RegExp, pick: (m: RegExpMatchArray) => number): number | null => {
    const matches = [...text.matchAll(pattern)];
    return matches.length === 0 ? null : matches.reduce((total, m) => total + pick(m), 0);
  };
  const num = (value: string | undefined): number => Number(value ?? 0);
  const counters: Array<() => number | null> = [
    // jest: "Tests:       1 failed, 3 passed, 4 total"
    () => sum(/^Tests:\s+.*?(\d+) total/gm, (m) => num(m[1])),
    // vitest: "      Tests  1 failed | 2 passed (3)"
    () => sum(/^\s*Tests\s+.*\((\d+)\)\s*$/gm, (m) => num(m[1])),
    // node's runner (tap and spec) and tape
    () => sum(/^(?:#|ℹ) tests (\d+)/gm, (m) => num(m[1])),
    // cargo: one summary per test binary
    () =>
      sum(
        /^test result: \w+\. (\d+) passed; (\d+) failed; (\d+) ignored/gm,
        (m) => num(m[1]) + num(m[2]) + num(m[3]),
      ),
    // pytest: "==== 1 failed, 4 passed, 1 skipped in 0.94s ====" and "no tests ran"
    () => pytestCount(text),
    // mocha: "3 passing", "1 failing", "2 pending"
    () => sum(/^\s*(\d+) (?:passing|failing|pending)\b/gm, (m) => num(m[1])),
    // go without -json: a package line says only that it ran something
    () => sum(/^(ok|FAIL)\s+\S+\s+.*$/gm, (m) => (/\[no tests to run\]/.test(m[0]) ? 0 : 1)),
  ];
  for (const count of counters) {
    const value = count();
    if (value !== null) return value;
  }
  return null;
}

function pytestCount(text: string): number | null {
  if (/^=+ no tests ran\b/m.test(text)) return 0;
  const lines = [
    ...text.matchAll(/^=+ (.*\b(?:passed|failed|skipped|errors?|xfailed|xpassed)\b.*) in [\d.]+s/gm),
  ];
  if (lines.length === 0) return null;
  return lines.reduce((total, line) => {
    const counts = [...(line[1] ?? '').matchAll(/(\d+) (?:passed|failed|skipped|errors?|xfailed|xpassed)/g)];
    return total + counts.reduce((n, m) => n + Number(m[1] ?? 0), 0);
  }, 0);
}

/** Keep the results a filter names: by id, name or file, as a substring. */
export function filterResults(results: TestResult[], filter: string): TestResult[] {
  return results.filter(
    (r) => r.id.includes(filter) || r.name.includes(filter) || r.file?.includes(filter) === true,
  );
}
