/**
 * A batch run's verdicts, recomputed from what the store recorded: the run's journal (claims, finishes)
 * and the ledger (spend). No task is re-run and no model called: the report is a reading of history.
 */
import type { Store } from '../store/engine.js';
import { Ledger } from '../store/ledger.js';
import { RunQueue } from '../store/queue.js';

/**
 * `verified`, `failed`, `cancelled`, `blocked_uncertain` (a resumed attempt met an effect keel cannot check:
 * a person must look), `cost_cap` (the run's cap stopped it before a call), or `unfinished` (no attempt
 * ended it yet).
 */
export type Verdict = 'verified' | 'failed' | 'cancelled' | 'blocked_uncertain' | 'cost_cap' | 'unfinished';

export interface TaskReport {
  id: string;
  verdict: Verdict;
  attempts: number;
  calls: number;
  costUsd: number;
  unknownCostCalls: number;
  branch: string | null;
  error: string | null;
}

export interface RunReport {
  runId: string;
  tasks: TaskReport[];
  totals: { tasks: number; verified: number; calls: number; costUsd: number; unknownCostCalls: number };
}

const VERDICT: Record<string, Verdict> = { done: 'verified', failed: 'failed', cancelled: 'cancelled' };

/** The report of a stored run, or undefined when the store has no such run. */
export async function reportRun(store: Store, runId: string): Promise<RunReport | undefined> {
  const queue = new RunQueue(store);
  const run = await queue.run(runId);
  if (!run) return undefined;
  // the task ids, in the file's order; everything else comes from the journal and the ledger
  const byId = new Map<string, TaskReport>();
  for (const t of await queue.tasks(runId))
    byId.set(t.id, {
      id: t.id,
      verdict: 'unfinished',
      attempts: 0,
      calls: 0,
      costUsd: 0,
      unknownCostCalls: 0,
      branch: null,
      error: null,
    });
  for (const e of await queue.events(runId)) {
    const task = e.taskId === undefined ? undefined : byId.get(e.taskId);
    if (!task) continue;
    if (e.type === 'claimed') task.attempts++;
    else if (e.type === 'finished') {
      const result = (e.data.result ?? {}) as { branch?: string | null; error?: string; status?: string };
      task.verdict =
        result.status === 'blocked_uncertain' || result.status === 'cost_cap'
          ? result.status
          : (VERDICT[String(e.data.outcome)] ?? 'failed');
      task.branch = result.branch ?? null;
      task.error = result.error ?? null;
    } else if (e.type === 'released' || e.type === 'expired') task.verdict = 'unfinished';
  }
  for (const call of await new Ledger(store).entries(runId)) {
    const task = call.taskId === undefined ? undefined : byId.get(call.taskId);
    if (!task) continue;
    task.calls++;
    if (call.costUsd === undefined) task.unknownCostCalls++;
    else task.costUsd += call.costUsd;
  }
  const tasks = [...byId.values()];
  return {
    runId,
    tasks,
    totals: {
      tasks: tasks.length,
      verified: tasks.filter((t) => t.verdict === 'verified').length,
      calls: tasks.reduce((n, t) => n + t.calls, 0),
      costUsd: tasks.reduce((n, t) => n + t.costUsd, 0),
      unknownCostCalls: tasks.reduce((n, t) => n + t.unknownCostCalls, 0),
    },
  };
}
