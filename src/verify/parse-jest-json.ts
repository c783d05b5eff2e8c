/** Jest-shaped JSON reports, written by both jest (`--json`) and vitest (`--reporter=json`). */
import { field, str } from './json-value.js';
import { clipMessage, dedupeIds, joinId, relativeFile } from './result-ids.js';
import type { TestResult, TestStatus } from './types.js';

export interface JsonReportOptions {
  root?: string;
}

/** Parse a jest or vitest JSON report; throws when the text is not such a report. */
export function parseJestJson(text: string, opts: JsonReportOptions = {}): TestResult[] {
  const report: unknown = JSON.parse(text);
  const files = field(report, 'testResults');
  if (!Array.isArray(files)) throw new Error('not a jest/vitest JSON report: no testResults array');
  const results: TestResult[] = [];
  for (const fileResult of files) {
    const file = relativeFile(str(field(fileResult, 'name')) ?? '', opts.root);
    const assertions = field(fileResult, 'assertionResults');
    const cases = Array.isArray(assertions) ? assertions : [];
    let anyFailed = false;
    for (const test of cases) {
      const result = toResult(test, file);
      if (result.status === 'failed') anyFailed = true;
      results.push(result);
    }
    // a file that failed outside any test (an import error, a failing hook) is a failure of its own
    const fileFailed = str(field(fileResult, 'status')) === 'failed';
    if (fileFailed && !anyFailed) {
      const message = clipMessage(
        str(field(fileResult, 'message')) ?? str(field(fileResult, 'failureMessage')),
      );
      results.push({
        id: file,
        name: file,
        file,
        status: 'failed',
        ...(message === undefined ? {} : { message }),
      });
    }
  }
  return dedupeIds(results);
}

function toResult(test: unknown, file: string): TestResult {
  const title = str(field(test, 'title')) ?? str(field(test, 'fullName')) ?? '';
  const ancestors = field(test, 'ancestorTitles');
  const path = Array.isArray(ancestors) ? ancestors.filter((a): a is string => typeof a === 'string') : [];
  const status = mapStatus(str(field(test, 'status')));
  const duration = field(test, 'duration');
  const failures = field(test, 'failureMessages');
  const message =
    status === 'failed' && Array.isArray(failures)
      ? clipMessage(failures.filter((m): m is string => typeof m === 'string').join('\n'))
      : undefined;
  return {
    // a test named "" would otherwise take its describe block's id, and two results would share it
    id: joinId([file, ...path, title === '' ? '""' : title]),
    name: title,
    file,
    status,
    ...(typeof duration === 'number' ? { durationMs: duration } : {}),
    ...(message === undefined ? {} : { message }),
  };
}

function mapStatus(status: string | undefined): TestStatus {
  if (status === 'passed') return 'passed';
  if (status === 'failed') return 'failed';
  // pending, skipped, todo, disabled, focused-out
  return 'skipped';
}
