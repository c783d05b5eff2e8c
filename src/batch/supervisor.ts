/**
 * The batch supervisor: claims tasks from the run queue (store/queue.ts) up to the run's cap and starts
 * one worker process per task (`keel batch worker`, batch/worker.ts), which holds the lease and runs
 * `keel fix` in its own worktree. Until a worker's first renewal the supervisor holds its lease, so the
 * time a process takes to start on a loaded machine never expires it; a supervisor that dies stops
 * holding, and so does one whose worker has not renewed after START_HOLD_MS (it hangs: the lease
 * expires and the task is requeued). The supervisor keeps no state of its own: killed and started again
 * with the same run id, it waits for the workers still running and requeues the tasks of dead ones
 * (their leases expire), so a task is never lost and a finished one never redone.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { hostname } from 'node:os';
import type { Store } from '../store/engine.js';
import { type Claimed, QUEUE_CHANNEL, RENEW_EVERY_MS, RunQueue, type RunView } from '../store/queue.js';
import { capStanding } from './cost-cap.js';
import { type BatchTask, repoProblem } from './tasks-file.js';
import type { TaskResult } from './worker.js';

/** The longest the supervisor holds a started worker's lease for it: a worker not started by then hangs. */
export const START_HOLD_MS = 120_000;

/** How a batch ended: every task verified, some not, paused for the provider, stopped at its cost cap, or cancelled. */
export type BatchEnd = 'verified' | 'failed' | 'paused_provider' | 'cost_cap' | 'cancelled';

export interface SuperviseOptions {
  store: Store;
  runId: string;
  /** How to start keel: [node, bin.js]. */
  keel: readonly string[];
  env?: NodeJS.ProcessEnv;
  /** Called after every change the supervisor sees (for a progress line). */
  onProgress?(run: RunView): void;
  /** Aborted on SIGINT/SIGTERM: the workers give their tasks back and the supervisor returns. */
  signal?: AbortSignal;
  /**
   * Called before each round of claims while the run dispatches: keel goal adds here the tasks whose
   * dependencies have verified since (RunQueue.addTask), so they start in this round.
   */
  beforeClaim?(): Promise<void>;
}

/** Run a batch's queue until nothing is left to start and no worker runs; returns how it ended. */
export async function supervise(opts: SuperviseOptions): Promise<BatchEnd | 'stopped'> {
  const queue = new RunQueue(opts.store);
  const owner = `${hostname()}:${process.pid}`;
  const workers = new Map<string, ChildProcess>();
  let wake: () => void = () => {};
  const nudge = () => wake();
  const stopListening = await opts.store.listen(QUEUE_CHANNEL, nudge);
  opts.signal?.addEventListener('abort', nudge);
  try {
    for (;;) {
      if (opts.signal?.aborted) {
        for (const w of workers.values()) w.kill('SIGTERM');
        await Promise.all([...workers.values()].map(exited));
        return 'stopped';
      }
      const run = await queue.run(opts.runId);
      if (!run) throw new Error(`run ${opts.runId} is not in the queue`);
      opts.onProgress?.(run);
      // a run at its cost cap starts no task: checked (one sum over the ledger) before each claim
      const capReached = async () => (await capStanding(opts.store, run))?.reached === true;
      if (run.status === 'running') await opts.beforeClaim?.();
      if (run.status === 'running')
        for (
          let claimed = (await capReached()) ? undefined : await queue.claim(opts.runId, owner);
          claimed;
        ) {
          await start(claimed);
          claimed = (await capReached()) ? undefined : await queue.claim(opts.runId, owner);
        }
      const now = (await queue.run(opts.runId)) ?? run;
      if (!workers.size) {
        if (now.status === 'cancelled' && !now.counts.running) return 'cancelled';
        if (now.status === 'paused_provider' && !now.counts.running) return 'paused_provider';
        const total = Object.values(now.counts).reduce((a, b) => a + b, 0);
        // tasks that workers of another (or an earlier) supervisor hold still count: wait for them
        if (now.status === 'running' && !now.counts.running && (await capReached()))
          return now.counts.done === total ? 'verified' : 'cost_cap';
        if (now.status === 'running' && !now.counts.queued && !now.counts.running)
          return now.counts.done === total ? 'verified' : 'failed';
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 1_000);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  } finally {
    opts.signal?.removeEventListener('abort', nudge);
    await stopListening();
  }

  async function start(lease: Claimed): Promise<void> {
    const task = lease.spec as BatchTask;
    const problem = repoProblem(task.repo);
    if (problem) {
      const result: TaskResult = { status: 'failed', exit_code: null, error: problem };
      await queue.finish(lease, 'failed', result);
      return;
    }
    const [node, ...bin] = opts.keel;
    const child = spawn(
      node ?? process.execPath,
      [...bin, 'batch', 'worker', lease.runId, lease.taskId, String(lease.attempt)],
      { env: opts.env ?? process.env, stdio: ['ignore', 'ignore', 'inherit'] },
    );
    workers.set(lease.taskId, child);
    const stopHolding = holdUntilStarted(lease);
    child.on('close', () => {
      stopHolding();
      workers.delete(lease.taskId);
      nudge();
    });
  }

  /**
   * Renew a started worker's lease from this process until the worker has renewed it itself (or exits, or
   * START_HOLD_MS passes): its lease ran from the claim, and starting a process can outlast it.
   */
  function holdUntilStarted(lease: Claimed): () => void {
    const until = Date.now() + START_HOLD_MS;
    const timer = setInterval(() => {
      if (Date.now() > until) return clearInterval(timer);
      void queue.holdForWorker(lease).then(
        (held) => {
          if (!held) clearInterval(timer);
        },
        () => undefined, // the store is away for a moment: try again at the next tick
      );
    }, RENEW_EVERY_MS);
    return () => clearInterval(timer);
  }
}

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('close', () => resolve()));
}
