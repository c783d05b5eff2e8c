/** The JSON lines keel's uvu preload writes, one per finished test (see uvu-reporter.ts). */
import { field, str } from './json-value.js';
import { clipMessage, dedupeIds, joinId, relativeFile } from './result-ids.js';
import type { TestResult } from './types.js';

export interface UvuReportOptions {
  root?: string;
}

/** Parse the preload's report into results with ids `file > suite > test`; other lines are ignored. */
export function parseUvuEvents(text: string, opts: UvuReportOptions = {}): TestResult[] {
  const results: TestResult[] = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith('{')) continue;
    let event: unknown;
    try {
      event = JSON.parse(line);
    } catch {
      continue;
    }
    if (field(event, 'keel') !== 1) continue;
    const name = str(field(event, 'name')) ?? '';
    const rawFile = str(field(event, 'file'));
    const file = rawFile === undefined ? undefined : relativeFile(rawFile, opts.root);
    const failed = str(field(event, 'status')) === 'fail';
    const message = failed ? clipMessage(str(field(event, 'message'))) : undefined;
    results.push({
      // an unnamed test still gets an id of its own, not its suite's
      id: joinId([file, str(field(event, 'suite')), name === '' ? '""' : name]),
      name,
      ...(file === undefined ? {} : { file }),
      status: failed ? 'failed' : 'passed',
      ...(message === undefined ? {} : { message }),
    });
  }
  return dedupeIds(results);
}
