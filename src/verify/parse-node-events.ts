/** The JSON lines keel's own node test reporter writes (see node-reporter.ts). */
import { field, str } from './json-value.js';
import { clipMessage, dedupeIds, joinId, relativeFile } from './result-ids.js';
import type { TestResult, TestStatus } from './types.js';

export interface NodeEventsOptions {
  root?: string;
}

interface NodeEvent {
  passed: boolean;
  name: string;
  nesting: number;
  file: string;
  suite: boolean;
  skipped: boolean;
  durationMs?: number;
  message?: string;
  children: NodeEvent[];
}

/** Parse the reporter's lines into leaf test results with `file > suite > test` ids. */
export function parseNodeEvents(text: string, opts: NodeEventsOptions = {}): TestResult[] {
  // files run in parallel processes, so their events may interleave; each file's own order holds
  const byFile = new Map<string, NodeEvent[]>();
  for (const line of text.split('\n')) {
    const event = toEvent(line);
    if (event === undefined) continue;
    const list = byFile.get(event.file) ?? [];
    list.push(event);
    byFile.set(event.file, list);
  }
  const results: TestResult[] = [];
  for (const [file, events] of byFile) {
    const relFile = relativeFile(file, opts.root);
    for (const root of nest(events)) walk(root, [], relFile, results);
  }
  return dedupeIds(results);
}

function toEvent(line: string): NodeEvent | undefined {
  if (!line.startsWith('{')) return undefined;
  let raw: unknown;
  try {
    raw = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (field(raw, 'keel') !== 1) return undefined;
  const nesting = field(raw, 'nesting');
  const duration = field(raw, 'durationMs');
  const message = str(field(raw, 'message'));
  return {
    passed: field(raw, 'status') === 'pass',
    name: str(field(raw, 'name')) ?? '',
    nesting: typeof nesting === 'number' ? nesting : 0,
    file: str(field(raw, 'file')) ?? '',
    suite: field(raw, 'type') === 'suite',
    skipped: field(raw, 'skip') === true || field(raw, 'todo') === true,
    ...(typeof duration === 'number' ? { durationMs: duration } : {}),
    ...(message === undefined ? {} : { message }),
    children: [],
  };
}

/** Node reports children before their parent; the events just below a parent's level are its children. */
function nest(events: NodeEvent[]): NodeEvent[] {
  const pending = new Map<number, NodeEvent[]>();
  for (const event of events) {
    event.children = pending.get(event.nesting + 1) ?? [];
    pending.delete(event.nesting + 1);
    const level = pending.get(event.nesting) ?? [];
    level.push(event);
    pending.set(event.nesting, level);
  }
  return [...pending.entries()].sort(([a], [b]) => a - b).flatMap(([, level]) => level);
}

function walk(event: NodeEvent, path: string[], file: string, out: TestResult[]): boolean {
  // node names a file that failed to load (or had no tests) after the file itself
  const fileLevel = event.nesting === 0 && event.name === event.file;
  if (event.children.length > 0) {
    let childFailed = false;
    for (const child of event.children) {
      if (walk(child, [...path, event.name], file, out)) childFailed = true;
    }
    // a suite that failed on its own (a hook) keeps that failure
    if (event.passed || childFailed) return childFailed;
  } else if (event.passed && (event.suite || fileLevel)) {
    return false;
  }
  const status: TestStatus = event.skipped ? 'skipped' : event.passed ? 'passed' : 'failed';
  const message = status === 'failed' ? clipMessage(event.message) : undefined;
  out.push({
    id: fileLevel ? file : joinId([file, ...path, event.name]),
    name: fileLevel ? file : event.name,
    file,
    status,
    ...(event.durationMs === undefined ? {} : { durationMs: event.durationMs }),
    ...(message === undefined ? {} : { message }),
  });
  return status === 'failed';
}
