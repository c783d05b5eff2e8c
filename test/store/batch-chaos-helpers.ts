/** What the batch kill tests share: the run's journal, the fix sessions of a task, their effects, leftovers. */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { openDb } from '../../src/store/db.js';
import type { Store } from '../../src/store/engine.js';
import { EventLog, type StoredEvent } from '../../src/store/event-log.js';
import { type QueueEvent, RunQueue } from '../../src/store/queue.js';
import { git } from '../helpers/tmp.js';

/** The fix run ids the journal names for a task, by attempt. */
export function fixRunsOf(
  journal: QueueEvent[],
  taskId: string,
): Array<{ attempt: number; fixRun: string; fixPid: number; startedAt: number }> {
  return journal
    .filter((e) => e.type === 'fix_started' && e.taskId === taskId)
    .map((e) => ({
      attempt: e.attempt ?? 0,
      fixRun: String(e.data.fix_run),
      fixPid: Number(e.data.fix_pid),
      startedAt: e.ts,
    }));
}

/** Every event a fix run wrote (its own session's and those of the sessions it started), with its writer's pid. */
export function fixEvents(home: string, fixRun: string): Array<StoredEvent & { pid: number | null }> {
  const db = openDb(join(home, 'keel.db'));
  try {
    const log = new EventLog(db);
    const out: Array<StoredEvent & { pid: number | null }> = [];
    const walk = (id: string) => {
      const pids = new Map(log.writers(id).map((w) => [w.seq, w.pid]));
      out.push(...log.events(id).map((e) => ({ ...e, pid: pids.get(e.seq) ?? null })));
      for (const child of log.childSessions(id)) walk(child.id);
    };
    if (log.getSession(fixRun)) walk(fixRun);
    return out;
  } finally {
    db.close();
  }
}

/** Tools that only read: running one again changes nothing, so a resumed task may repeat it. */
const READS = new Set(['read_file', 'list_files', 'grep', 'glob', 'search']);

/**
 * Effects a task carried out more than once across its attempts' fixes: each effect (a tool that is not
 * a read, with its arguments) and how many results were recorded for it, where more than one. Issue 27
 * asks for none: a resumed attempt does not redo an effect its predecessor finished (fix/resume.ts).
 * `{}` when nothing was repeated.
 */
export function repeatedEffects(home: string, fixRuns: string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const run of fixRuns) {
    const args = new Map<string, string>(); // session and call id -> the call's arguments
    for (const e of fixEvents(home, run)) {
      const call = `${e.session_id} ${String(e.data.call_id)}`;
      if (e.type === 'tool_start') args.set(call, JSON.stringify(e.data.args));
      if (e.type !== 'tool_result' || READS.has(String(e.data.tool))) continue;
      const effect = `${String(e.data.tool)} ${args.get(call) ?? String(e.data.call_id)}`;
      counts[effect] = (counts[effect] ?? 0) + 1;
    }
  }
  return Object.fromEntries(Object.entries(counts).filter(([, n]) => n > 1));
}

/**
 * When process `pid` wrote into fix run `fixRun` (its session's events and its sessions'), from the pid
 * each event row records. A resumed run spans processes, and an attempt whose predecessor died before
 * opening the log starts the same run id afresh: only the pid tells whose write an event is.
 */
export function writesBy(home: string, fixRun: string, pid: number): number[] {
  return fixEvents(home, fixRun)
    .filter((e) => e.pid === pid)
    .map((e) => Date.parse(e.ts));
}

export async function journalOf(store: Store, runId: string): Promise<QueueEvent[]> {
  return new RunQueue(store).events(runId);
}

/** Pids of live processes whose command line contains every one of `parts` (a zombie is not live). */
export function processesWith(...parts: string[]): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const cmd = readFileSync(`/proc/${name}/cmdline`, 'utf8').replaceAll('\0', ' ');
      if (!parts.every((p) => cmd.includes(p))) continue;
      if (/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${name}/stat`, 'utf8'))) continue;
      out.push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** The worktrees besides the main one, and the keel/fix-* branches, of a repository. */
export function leftovers(repo: string): { worktrees: string[]; branches: string[] } {
  const worktrees = git(repo, 'worktree', 'list', '--porcelain')
    .split('\n')
    .filter((l) => l.startsWith('worktree '))
    .slice(1);
  const branches = git(repo, 'branch', '--list', 'keel/fix-*', '--format=%(refname:short)')
    .split('\n')
    .filter(Boolean);
  return { worktrees, branches };
}
