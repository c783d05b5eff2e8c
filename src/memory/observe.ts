/**
 * Observations at the end of a session's run (a one-shot session, or one chat turn) that completed, read
 * from that run's events only (the log is the truth): the files it changed, the outcome of its last test
 * run, and what the gate denied. keel records these itself, under its own name (author `keel`: neither
 * the user's word nor the model's note). Text the model chose (file names, the paths and arguments a
 * denial's reason repeats) is only ever inside a JSON-quoted string, labelled, so it cannot start a line
 * of its own or pass for keel's or the user's words. Duplicates fold as any item does.
 */
import type { Config } from '../config/schema.js';
import { EventLog } from '../store/event-log.js';
import type { AddInput } from './memory.js';
import { openMemory } from './open.js';

const MAX_REASON = 300;
const MAX_FILES = 30;

function taskTitle(prompt: string): string {
  const first = prompt.trim().split('\n')[0] ?? '';
  return first.length > 100 ? `${first.slice(0, 99)}…` : first;
}

/** Text from the session (a name, a reason that repeats the model's arguments) as one quoted string. */
export function quoted(text: string): string {
  return JSON.stringify(text);
}

/** What a session's events say worth keeping, as items to add (pure: for tests and for the hook). */
export function observationsOf(
  events: Array<{ type: string; data: Record<string, unknown> }>,
  prompt: string,
): Array<Omit<AddInput, 'author' | 'sessionId'>> {
  const task = taskTitle(prompt);
  const about = task ? ` (task: ${task})` : '';
  const files = new Set<string>();
  let tests: { passed: number; failed: number; skipped: number } | undefined;
  const denials = new Set<string>();
  for (const { type, data } of events) {
    if (type === 'tool_result' && data.is_error !== true && Array.isArray(data.files_changed))
      for (const f of data.files_changed) if (typeof f === 'string') files.add(f);
    if (type === 'tool_result' && data.tool === 'run_tests') {
      const t = (data.outcome as { tests?: typeof tests } | undefined)?.tests;
      if (t && typeof t.passed === 'number' && typeof t.failed === 'number') tests = t;
    }
    if (type === 'gate_decision' && data.decision === 'deny' && typeof data.tool === 'string') {
      const reason = typeof data.reason === 'string' ? data.reason.slice(0, MAX_REASON) : 'denied';
      const why = typeof data.deny === 'string' && /^[a-z]+$/.test(data.deny) ? ` (${data.deny})` : '';
      denials.add(
        `The gate denied a ${quoted(data.tool)} call${why}; its reason, which repeats the model's arguments: ${quoted(reason)}`,
      );
    }
  }
  const out: Array<Omit<AddInput, 'author' | 'sessionId'>> = [];
  if (files.size) {
    const list = [...files].sort();
    const shown =
      list
        .slice(0, MAX_FILES)
        .map((f) => quoted(f))
        .join(', ') + (list.length > MAX_FILES ? `, and ${list.length - MAX_FILES} more` : '');
    out.push({ kind: 'file_changed', text: `Files changed: ${shown}${about}`, tags: ['session'] });
  }
  if (tests)
    out.push({
      kind: 'test_outcome',
      text: `Tests: ${tests.passed} passed, ${tests.failed} failed, ${tests.skipped} skipped${about}`,
      tags: [tests.failed ? 'failing' : 'passing'],
    });
  for (const d of denials) out.push({ kind: 'gate_denial', text: d, tags: ['gate'] });
  return out;
}

/**
 * Record a finished run's observations in its project's memory. Never throws: memory is a
 * projection of the log, and a failure here must not turn a finished session into a failed one.
 */
export async function observeSession(opts: {
  sessionId: string;
  /** The run's events are those after this seq (a reopened session's earlier runs observed their own). */
  after?: number;
  root: string;
  prompt: string;
  config: Config;
  env: NodeJS.ProcessEnv;
  /** The runtime's open store, shared instead of opening another connection. */
  db?: import('../store/db.js').Db;
}): Promise<number> {
  let m: ReturnType<typeof openMemory> | undefined;
  try {
    m = openMemory({
      dir: opts.root,
      config: opts.config,
      env: opts.env,
      pinned: true,
      ...(opts.db ? { db: opts.db } : {}),
    });
    const items = observationsOf(new EventLog(m.db).events(opts.sessionId, opts.after ?? 0), opts.prompt);
    for (const item of items) await m.memory.add({ ...item, author: 'keel', sessionId: opts.sessionId });
    return items.length;
  } catch {
    return 0;
  } finally {
    m?.close();
  }
}
