/** `keel batch FILE`, `keel batch status [RUN]`, `keel batch cancel RUN`: many fixes on the run queue. */
import { randomBytes } from 'node:crypto';
import { cleanProblem, cleanRun } from '../batch/clean.js';
import { type CapStanding, capOf, capSentence, capStanding } from '../batch/cost-cap.js';
import { reportRun } from '../batch/report.js';
import { type BatchEnd, supervise } from '../batch/supervisor.js';
import { readTasksFile, TasksFileError } from '../batch/tasks-file.js';
import { runWorker } from '../batch/worker.js';
import { modelsOf, unpricedUnderCap } from '../model/open-ledger.js';
import type { Store } from '../store/engine.js';
import { Ledger, type LedgerTotals } from '../store/ledger.js';
import { RunQueue, type RunView, type TaskView } from '../store/queue.js';
import { EXIT } from '../term/exit-codes.js';
import { inertLine } from '../term/inert.js';
import { ConfigError, load } from '../term/options.js';
import { reportError } from './errors.js';
import { dim } from './render.js';
import { withStore } from './team-store.js';

interface Flags {
  json?: boolean;
  cwd?: string;
  profile?: string;
}

const END_EXIT: Record<BatchEnd | 'stopped', number> = {
  verified: EXIT.ok,
  failed: EXIT.failed,
  paused_provider: EXIT.model,
  // a budget, as BUDGET_EXCEEDED is for one fix: not every task verified, and the status says why
  cost_cap: EXIT.failed,
  cancelled: EXIT.interrupted,
  // the supervisor was interrupted: its workers gave their tasks back, the same --run-id goes on
  stopped: EXIT.interrupted,
};

function taskDocument(t: TaskView): Record<string, unknown> {
  return { id: t.id, state: t.state, attempts: t.attempt, result: t.result ?? null };
}

/** A run with where it stands against its cost cap (undefined: no cap). */
type CappedRun = RunView & { cap?: CapStanding };

async function withCap(store: Store, run: RunView): Promise<CappedRun> {
  const cap = await capStanding(store, run);
  return cap ? { ...run, cap } : run;
}

/** The run's status: the queue's, or `cost_cap` once a running run has reached its cap and not every task verified. */
function statusOf(run: CappedRun): string {
  return run.status === 'running' && run.cap?.reached && !allVerified(run) ? 'cost_cap' : run.status;
}

function allVerified(run: RunView): boolean {
  return run.counts.done === Object.values(run.counts).reduce((a, b) => a + b, 0);
}

function runDocument(
  run: CappedRun,
  tasks: TaskView[],
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  const status = statusOf(run);
  return {
    run_id: run.id,
    status,
    ...(run.statusReason ? { reason: run.statusReason } : {}),
    ...(status === 'cost_cap' && run.cap ? { reason: capSentence(run.cap) } : {}),
    concurrency: run.concurrency,
    ...(run.cap ? { cost_cap_usd: run.cap.capUsd } : {}),
    counts: run.counts,
    ...extra,
    tasks: tasks.map(taskDocument),
  };
}

/** How a stored run stands: verified when every task is, paused, capped or cancelled by its status, else failed. */
function standing(run: CappedRun): BatchEnd {
  if (run.status === 'paused_provider') return 'paused_provider';
  if (run.status === 'cancelled') return 'cancelled';
  if (statusOf(run) === 'cost_cap') return 'cost_cap';
  return allVerified(run) ? 'verified' : 'failed';
}

function printTasks(tasks: TaskView[]): void {
  for (const t of tasks) {
    const result = t.result as { status?: string; error?: string; branch?: string | null } | undefined;
    // a task stopped at an effect keel cannot check says so: a person must look before it runs again
    const what =
      t.state === 'done'
        ? 'verified'
        : result?.status === 'blocked_uncertain' || result?.status === 'cost_cap'
          ? result.status
          : t.state;
    const detail = result?.error ?? result?.branch ?? '';
    process.stdout.write(`${inertLine(t.id)}  ${what}${detail ? `  ${dim(inertLine(detail))}` : ''}\n`);
  }
}

function summary(run: CappedRun): string {
  const c = run.counts;
  const status = statusOf(run);
  const why = status === 'cost_cap' && run.cap ? capSentence(run.cap) : run.statusReason;
  return `batch ${run.id}: ${c.done} verified, ${c.failed} failed, ${c.cancelled} cancelled, ${c.running} running, ${c.queued} queued${status !== 'running' ? ` (${status}${why ? `: ${why}` : ''})` : ''}`;
}

interface Progress {
  elapsed_s: number;
  /** Seconds left at the pace so far; null before the first task ends. */
  eta_s: number | null;
  calls: number;
  cost_usd: number;
  unknown_cost_calls: number;
}

/** Elapsed time, the pace so far and the spend (from the ledger) of a run. */
function progressOf(run: RunView, spend: LedgerTotals | undefined, now: number): Progress {
  const c = run.counts;
  const ended = c.done + c.failed + c.cancelled;
  const left = c.queued + c.running;
  const elapsed = Math.max(0, (now - run.createdAt) / 1000);
  return {
    elapsed_s: Math.round(elapsed),
    eta_s: left === 0 ? 0 : ended === 0 ? null : Math.round((elapsed / ended) * left),
    calls: spend?.calls ?? 0,
    cost_usd: spend?.costUsd ?? 0,
    unknown_cost_calls: spend?.unknownCostCalls ?? 0,
  };
}

/** `[#######-------] 3/5 ended · 1 running · 42 s · ETA 28 s · $0.0120 (+ 4 calls of unknown cost)` */
function progressLine(run: CappedRun, p: Progress): string {
  const c = run.counts;
  const total = Object.values(c).reduce((a, b) => a + b, 0);
  const ended = c.done + c.failed + c.cancelled;
  const width = 20;
  const filled = total ? Math.round((ended / total) * width) : width;
  const bar = `[${'#'.repeat(filled)}${'-'.repeat(width - filled)}]`;
  const eta = p.eta_s === null ? 'ETA unknown' : `ETA ${p.eta_s} s`;
  const unknown = p.unknown_cost_calls ? ` (+ ${p.unknown_cost_calls} calls of unknown cost)` : '';
  const cap = run.cap ? ` of $${run.cap.capUsd} cap` : '';
  return `${bar} ${ended}/${total} ended · ${c.running} running · ${p.elapsed_s} s · ${eta} · $${p.cost_usd.toFixed(4)}${cap}${unknown}`;
}

/** `keel batch FILE`: queue the tasks (or resume the run with --run-id) and supervise until nothing is left. */
export async function runBatch(
  file: string,
  flags: Flags & { concurrency: number; runId?: string; costCap?: number },
): Promise<number> {
  let tasks: ReturnType<typeof readTasksFile>;
  try {
    tasks = readTasksFile(file);
  } catch (err) {
    if (err instanceof TasksFileError) return reportError(flags.json, 'CONFIG_ERROR', err.message);
    throw err;
  }
  // a cap is held to the cent: a model of a task without a price is said before anything is queued
  // (each worker's `keel fix` checks again with its repository's config)
  if (flags.costCap !== undefined) {
    let loaded: ReturnType<typeof load>['loaded'];
    try {
      loaded = load(flags).loaded;
    } catch (err) {
      if (err instanceof ConfigError) return reportError(flags.json, 'CONFIG_ERROR', err.message);
      throw err;
    }
    for (const t of tasks) {
      // a task that names its model calls that model; one that does not is routed when tiers are set
      const unpriced = unpricedUnderCap(
        loaded,
        flags.costCap,
        t.model ? modelsOf({ ...loaded.config, model: t.model }) : undefined,
      );
      if (unpriced) return reportError(flags.json, 'CONFIG_ERROR', `task ${t.id}: ${unpriced}`);
    }
  }
  const runId =
    flags.runId ??
    `batch-${new Date().toISOString().slice(0, 19).replace(/[-:T]/g, '')}-${randomBytes(3).toString('hex')}`;
  return withStore(flags, true, async (store) => {
    if (!store) throw new Error('no store');
    const queue = new RunQueue(store);
    const { created } = await queue.createRun(runId, {
      concurrency: flags.concurrency,
      // the cap is the run's: kept with it, so a resume (or another supervisor) holds the same one
      spec: { file, ...(flags.costCap !== undefined ? { cost_cap_usd: flags.costCap } : {}) },
      tasks: tasks.map((t) => ({ id: t.id, spec: t })),
    });
    if (!created) {
      const stored = capOf((await queue.run(runId)) ?? { spec: undefined });
      if (flags.costCap !== undefined && flags.costCap !== stored)
        return reportError(
          flags.json,
          'CONFIG_ERROR',
          `run ${runId} was started ${stored === undefined ? 'without a cost cap' : `with --cost-cap ${stored}`}; its cap stays what it was: leave --cost-cap out to resume it, or use another --run-id`,
        );
      // the same --run-id resumes the run it names: a different tasks file is another run, not this one
      const differing = differingTasks(await queue.tasks(runId), tasks);
      if (differing.length)
        return reportError(
          flags.json,
          'CONFIG_ERROR',
          `run ${runId} was started with other tasks: ${differing.map((d) => inertLine(d)).join(', ')} differ from ${file}; use another --run-id, or \`keel batch resume ${runId}\``,
        );
      // the same --run-id again resumes: also a run paused for its provider, now that it is asked again
      await queue.resume(runId);
    }
    if (!flags.json) process.stderr.write(dim(`keel batch: run ${runId} (${created ? 'new' : 'resumed'})\n`));
    return superviseAndReport(store, runId, flags);
  });
}

/** The ids of tasks that the stored run and the file do not hold alike (added, missing, or changed). */
function differingTasks(stored: TaskView[], given: ReturnType<typeof readTasksFile>): string[] {
  const was = new Map(stored.map((t) => [t.id, JSON.stringify(t.spec)]));
  const now = new Map(given.map((t) => [t.id, JSON.stringify(t)]));
  const ids = [...new Set([...was.keys(), ...now.keys()])];
  return ids.filter((id) => was.get(id) !== now.get(id));
}

/** Supervise a queued run to its end, then print it; returns the exit status. */
async function superviseAndReport(store: Store, runId: string, flags: Flags): Promise<number> {
  const queue = new RunQueue(store);
  const abort = new AbortController();
  const stop = () => abort.abort();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  let end: BatchEnd | 'stopped';
  try {
    end = await supervise({
      store,
      runId,
      keel: [process.execPath, process.argv[1] ?? 'keel'],
      signal: abort.signal,
    });
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
  }
  const stored = await queue.run(runId);
  const run = stored && (await withCap(store, stored));
  const listed = await queue.tasks(runId);
  if (flags.json && run)
    process.stdout.write(
      `${JSON.stringify(runDocument(run, listed, { end, exit_code: END_EXIT[end] }), null, 2)}\n`,
    );
  else if (run) {
    printTasks(listed);
    process.stdout.write(`${summary(run)}\n`);
  }
  return END_EXIT[end];
}

/** `keel batch resume RUN`: go on with a run (also one paused for its provider) from the tasks in the queue. */
export async function resumeBatch(runId: string, flags: Flags): Promise<number> {
  return withStore(flags, false, async (store, opened) => {
    const run = await (store && new RunQueue(store))?.run(runId);
    if (!store || !run)
      return reportError(
        flags.json,
        'CONFIG_ERROR',
        `no batch run ${JSON.stringify(runId)} in ${opened.where}`,
      );
    await new RunQueue(store).resume(runId);
    return superviseAndReport(store, runId, flags);
  });
}

/** `keel batch status [RUN]`: one run's tasks, or the newest runs. */
export async function batchStatus(runId: string | undefined, flags: Flags): Promise<number> {
  return withStore(flags, false, async (store, opened) => {
    const queue = store && new RunQueue(store);
    if (runId === undefined) {
      const runs =
        store && queue ? await Promise.all((await queue.runs(20)).map((r) => withCap(store, r))) : [];
      if (flags.json)
        process.stdout.write(
          `${JSON.stringify({ store: opened.engine, runs: runs.map((r) => runDocument(r, [])) }, null, 2)}\n`,
        );
      else if (!runs.length) process.stdout.write(`no batch runs (${inertLine(opened.where)})\n`);
      else for (const r of runs) process.stdout.write(`${summary(r)}\n`);
      return EXIT.ok;
    }
    const run = await queue?.run(runId);
    if (!queue || !run)
      return reportError(
        flags.json,
        'CONFIG_ERROR',
        `no batch run ${JSON.stringify(runId)} in ${opened.where}`,
      );
    const listed = await queue.tasks(runId);
    const capped = await withCap(store, run);
    const end = standing(capped);
    const progress = progressOf(run, await new Ledger(store).totals(runId), Date.now());
    if (flags.json)
      process.stdout.write(`${JSON.stringify(runDocument(capped, listed, { end, progress }), null, 2)}\n`);
    else {
      printTasks(listed);
      process.stdout.write(`${summary(capped)}\n${progressLine(capped, progress)}\n`);
    }
    return END_EXIT[end] === EXIT.interrupted ? EXIT.failed : END_EXIT[end];
  });
}

/** `keel batch cancel RUN`: nothing new starts; running workers stop at their next lease renewal. */
export async function batchCancel(runId: string, flags: Flags): Promise<number> {
  return withStore(flags, false, async (store, opened) => {
    const queue = store && new RunQueue(store);
    const run = await queue?.run(runId);
    if (!queue || !run)
      return reportError(
        flags.json,
        'CONFIG_ERROR',
        `no batch run ${JSON.stringify(runId)} in ${opened.where}`,
      );
    const cancelled = await queue.cancel(runId);
    if (flags.json) process.stdout.write(`${JSON.stringify({ run_id: runId, cancelled })}\n`);
    else
      process.stdout.write(cancelled ? `batch ${runId}: cancelled\n` : `batch ${runId}: already cancelled\n`);
    return EXIT.ok;
  });
}

/** `keel batch worker RUN TASK ATTEMPT` (started by the supervisor): one attempt at one task. */
export async function batchWorker(runId: string, taskId: string, attempt: string): Promise<number> {
  await slowStartFault(attempt);
  return withStore({}, true, async (store) => {
    if (!store) throw new Error('no store');
    const abort = new AbortController();
    const stop = () => abort.abort();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
    try {
      const end = await runWorker({
        store,
        lease: { runId, taskId, attempt: Number(attempt) },
        keel: [process.execPath, process.argv[1] ?? 'keel'],
        signal: abort.signal,
      });
      return end === 'lost' ? EXIT.failed : EXIT.ok;
    } finally {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
    }
  });
}

/**
 * A test hook, for the proof that a worker's slow start does not cost its attempt: with
 * KEEL_FAULT_WORKER_START_DELAY_MS=N in its environment, the worker of a task's first attempt waits N ms
 * before it does anything (a process starting on a loaded machine); a later attempt starts at once. An
 * environment variable is set by whoever starts keel; neither a repository nor a model can reach it.
 */
async function slowStartFault(attempt: string): Promise<void> {
  const ms = Number(process.env.KEEL_FAULT_WORKER_START_DELAY_MS);
  if (attempt === '1' && ms > 0) await new Promise((r) => setTimeout(r, ms));
}

/** `keel batch report RUN`: each task's verdict, attempts and spend, recomputed from the stored journal and ledger. */
export async function batchReport(runId: string, flags: Flags): Promise<number> {
  return withStore(flags, false, async (store, opened) => {
    const report = store && (await reportRun(store, runId));
    if (!report)
      return reportError(
        flags.json,
        'CONFIG_ERROR',
        `no batch run ${JSON.stringify(runId)} in ${opened.where}`,
      );
    const { totals } = report;
    const code = totals.verified === totals.tasks ? EXIT.ok : EXIT.failed;
    const run = await new RunQueue(store).run(runId);
    const cap = run && (await capStanding(store, run));
    // a run its cap stopped says so, with what it spent against what it was allowed
    const capped = cap?.reached && totals.verified < totals.tasks ? cap : undefined;
    if (flags.json) {
      process.stdout.write(
        `${JSON.stringify(
          {
            run_id: runId,
            exit_code: code,
            ...(cap ? { cost_cap_usd: cap.capUsd } : {}),
            ...(capped ? { stopped: 'cost_cap', reason: capSentence(capped) } : {}),
            tasks: report.tasks.map((t) => ({
              id: t.id,
              verdict: t.verdict,
              attempts: t.attempts,
              calls: t.calls,
              cost_usd: t.costUsd,
              unknown_cost_calls: t.unknownCostCalls,
              branch: t.branch,
              error: t.error,
            })),
            totals: {
              tasks: totals.tasks,
              verified: totals.verified,
              calls: totals.calls,
              cost_usd: totals.costUsd,
              unknown_cost_calls: totals.unknownCostCalls,
            },
          },
          null,
          2,
        )}\n`,
      );
      return code;
    }
    const spend = (usd: number, unknown: number) =>
      `$${usd.toFixed(4)}${unknown ? ` + ${unknown} call${unknown === 1 ? '' : 's'} of unknown cost` : ''}`;
    for (const t of report.tasks) {
      const detail = t.error ?? t.branch ?? '';
      process.stdout.write(
        `${inertLine(t.id)}  ${t.verdict}  ${t.attempts} attempt${t.attempts === 1 ? '' : 's'}  ${spend(t.costUsd, t.unknownCostCalls)}${detail ? `  ${dim(inertLine(detail))}` : ''}\n`,
      );
    }
    process.stdout.write(
      `batch ${inertLine(runId)}: ${totals.verified}/${totals.tasks} verified, ${totals.calls} calls, ${spend(totals.costUsd, totals.unknownCostCalls)}${capped ? ` (stopped: ${capSentence(capped)})` : ''}\n`,
    );
    return code;
  });
}

/** `keel batch clean RUN`: the run's worktrees, unverified branches and leftover processes on this machine. */
export async function batchClean(runId: string, flags: Flags): Promise<number> {
  return withStore(flags, false, async (store, opened) => {
    const run = store && (await new RunQueue(store).run(runId));
    if (!store || !run)
      return reportError(
        flags.json,
        'CONFIG_ERROR',
        `no batch run ${JSON.stringify(runId)} in ${opened.where}`,
      );
    const problem = await cleanProblem(store, runId);
    if (problem) return reportError(flags.json, 'CONFIG_ERROR', problem);
    const { removed, kept } = await cleanRun(store, runId);
    if (flags.json) process.stdout.write(`${JSON.stringify({ run_id: runId, removed, kept }, null, 2)}\n`);
    else {
      for (const r of removed) process.stdout.write(`removed ${inertLine(r)}\n`);
      for (const k of kept) process.stdout.write(dim(`kept ${inertLine(k)}\n`));
      process.stdout.write(
        `batch ${inertLine(runId)}: ${removed.length ? `${removed.length} removed` : 'nothing to remove'}\n`,
      );
    }
    return EXIT.ok;
  });
}
