/** Mocha's JSON reporter output, read from its report file or fished out of mixed stdout. */
import { field, str } from './json-value.js';
import { clipMessage, dedupeIds, joinId, relativeFile } from './result-ids.js';
import type { TestResult, TestStatus } from './types.js';

export interface MochaOptions {
  root?: string;
}

/** Parse mocha JSON (alone or inside other output); throws when no report is found. */
export function parseMochaJson(text: string, opts: MochaOptions = {}): TestResult[] {
  const report = extractReport(text);
  const results: TestResult[] = [];
  const add = (list: unknown, status: TestStatus): void => {
    if (!Array.isArray(list)) return;
    for (const test of list) results.push(toResult(test, status, opts.root));
  };
  add(field(report, 'passes'), 'passed');
  add(field(report, 'failures'), 'failed');
  add(field(report, 'pending'), 'skipped');
  return dedupeIds(results);
}

function toResult(test: unknown, status: TestStatus, root: string | undefined): TestResult {
  const title = str(field(test, 'title')) ?? '';
  const fullTitle = str(field(test, 'fullTitle')) ?? title;
  const rawFile = str(field(test, 'file'));
  const file = rawFile === undefined ? undefined : relativeFile(rawFile, root);
  const duration = field(test, 'duration');
  const err = field(test, 'err');
  const message =
    status === 'failed' ? clipMessage(str(field(err, 'stack')) ?? str(field(err, 'message'))) : undefined;
  return {
    // mocha gives the joined title but not its parts, so the suite path stays inside one id part
    id: joinId([file, fullTitle]),
    name: title,
    ...(file === undefined ? {} : { file }),
    status,
    ...(typeof duration === 'number' ? { durationMs: duration } : {}),
    ...(message === undefined ? {} : { message }),
  };
}

function extractReport(text: string): unknown {
  try {
    return checked(JSON.parse(text));
  } catch {
    // console output from the tests can precede the report on stdout, and npm can follow it
  }
  const start = text.search(/^\{\s*\n?\s*"stats"/m);
  if (start < 0) throw new Error('no mocha JSON report found');
  // a few tries from the end: what follows the report is short (npm's error lines), and parsing is costly
  let tries = 0;
  for (
    let end = text.lastIndexOf('}');
    end > start && tries < 50;
    end = text.lastIndexOf('}', end - 1), tries++
  ) {
    try {
      return checked(JSON.parse(text.slice(start, end + 1)));
    } catch {
      // try the previous closing brace
    }
  }
  throw new Error('the mocha JSON report is incomplete');
}

function checked(report: unknown): unknown {
  if (field(report, 'stats') === undefined) throw new Error('not a mocha JSON report');
  return report;
}
