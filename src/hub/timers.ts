/**
 * The hub's timers are rows (`hub_timers`), not `setTimeout`s: a restart forgets nothing, and any hub
 * process may fire a due one. Each timer fires in its own transaction that locks its run first (the
 * order every writer of a run takes locks in) and then deletes the row; a second process that got there
 * too finds the row gone and does nothing. The loop that polls is only a clock: the state is the table.
 */
import type { Store } from '../store/engine.js';
import { appendRunEvent, ForeignAuditKey } from './runs-chain.js';
import { currentStage, lockRun } from './runs-stages.js';

/** How many due timers one pass takes. */
const BATCH = 100;

interface TimerRow {
  id: string;
  kind: string;
  run_id: string;
  stage_id: string;
  attempt: number;
}

/** What firing did to one timer. */
export interface Fired {
  timer: string;
  run_id: string;
  stage_id: string;
  /** `timed_out`: the stage was still waiting and the run failed; `stale`: it had moved on already. */
  outcome: 'timed_out' | 'stale';
}

/** Fire every timer due at `now`; returns what each did (empty when another process fired them). */
export async function fireDueTimers(store: Store, key: Buffer, now: number): Promise<Fired[]> {
  const due = await store.query<TimerRow>(
    'SELECT id, kind, run_id, stage_id, attempt FROM hub_timers WHERE due_at <= $1 ORDER BY due_at, id LIMIT $2',
    [now, BATCH],
  );
  const fired: Fired[] = [];
  for (const timer of due) {
    // a run sealed with another audit key is left to a hub that holds it (its timer stays), not broken
    const done = await store
      .transaction(async (tx): Promise<Fired | undefined> => {
        const run = await lockRun(tx, timer.run_id);
        if ((await tx.run('DELETE FROM hub_timers WHERE id = $1', [timer.id])) === 0) return undefined;
        const stage = run && (await currentStage(tx, run));
        const waiting =
          stage !== undefined &&
          stage.id === timer.stage_id &&
          Number(stage.attempt) === Number(timer.attempt) &&
          (stage.state === 'active' || stage.state === 'parked');
        if (!run || !stage || !waiting)
          return { timer: timer.id, run_id: timer.run_id, stage_id: timer.stage_id, outcome: 'stale' };
        await tx.run(
          `UPDATE hub_run_stages SET state = 'timed_out', ended_at = $3 WHERE run_id = $1 AND position = $2`,
          [run.id, stage.position, now],
        );
        await tx.run(`UPDATE hub_runs SET status = 'failed', updated_at = $2 WHERE id = $1`, [run.id, now]);
        await appendRunEvent(tx, key, run.id, now, 'stage_timed_out', {
          stage: stage.id,
          attempt: stage.attempt,
        });
        await appendRunEvent(tx, key, run.id, now, 'run_failed', { reason: `stage ${stage.id} timed out` });
        return { timer: timer.id, run_id: run.id, stage_id: stage.id, outcome: 'timed_out' };
      })
      .catch((err) => {
        if (err instanceof ForeignAuditKey) return undefined;
        throw err;
      });
    if (done) fired.push(done);
  }
  return fired;
}

/** Poll for due timers every `everyMs` until the returned function is called (which waits for a pass in flight). */
export function startTimerLoop(
  store: Store,
  key: Buffer,
  opts: { everyMs?: number; now?: () => number; onError?: (err: unknown) => void } = {},
): () => Promise<void> {
  const now = opts.now ?? Date.now;
  let pass: Promise<unknown> = Promise.resolve();
  let busy = false;
  const tick = setInterval(() => {
    if (busy) return;
    busy = true;
    pass = fireDueTimers(store, key, now())
      .catch((err) => opts.onError?.(err))
      .finally(() => {
        busy = false;
      });
  }, opts.everyMs ?? 1_000);
  tick.unref();
  return async () => {
    clearInterval(tick);
    await pass;
  };
}
