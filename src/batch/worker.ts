/**
 * One batch worker process (`keel batch worker RUN TASK ATTEMPT`, started by the supervisor): it holds
 * the task's lease for its attempt, renewing it every ~2 s, runs `keel fix --json` on the task and
 * finishes the task with the verdict. The fix records its own model calls in the ledger as each ends,
 * under the batch's run and this task (FIX_LEDGER_ENV), and holds the run's cost cap before each call.
 * It does not need its supervisor: a supervisor killed meanwhile leaves it to finish, and a resumed one
 * waits for it. Every write names (task, attempt), so a worker whose lease was taken over writes nothing.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { keelPaths } from '../config/paths.js';
import { openDb } from '../store/db.js';
import type { Store } from '../store/engine.js';
import { EventLog } from '../store/event-log.js';
import { type Lease, RENEW_EVERY_MS, RunQueue } from '../store/queue.js';
import { cleanRun, endEarlierFixes, fixEnv } from './clean.js';
import { capOf } from './cost-cap.js';
import type { BatchTask } from './tasks-file.js';

/** The variables that hand `keel fix` the batch run and task its model calls are recorded under. */
export const FIX_LEDGER_ENV = { run: 'KEEL_BATCH_RUN_ID', task: 'KEEL_BATCH_TASK_ID' } as const;

/** What a worker's task came to, as stored in the queue. */
export interface TaskResult {
  /** `cost_cap`: the run's cost cap stopped the fix before a model call; `blocked_uncertain`: see FixResult.status. */
  status: 'verified' | 'failed' | 'cancelled' | 'blocked_uncertain' | 'cost_cap';
  exit_code: number | null;
  code?: string;
  branch?: string | null;
  error?: string;
}

/** An answer of the provider that waiting will not fix. */
const PROVIDER_GONE =
  /\b(401|403)\b|unauthori[sz]ed|authentication|invalid api key|quota|insufficient_quota|billing/i;

export interface WorkerOptions {
  store: Store;
  lease: Lease;
  /** How to start keel: [node, bin.js]. */
  keel: readonly string[];
  env?: NodeJS.ProcessEnv;
  /** Aborted when the worker itself is told to stop (SIGTERM): the task goes back to the queue. */
  signal?: AbortSignal;
}

/** How the attempt ended for this worker: written, or nothing to write (lease lost, task not ours). */
export type WorkerEnd = 'finished' | 'released' | 'paused' | 'lost';

/** Run one attempt at a task to its end. */
export async function runWorker(opts: WorkerOptions): Promise<WorkerEnd> {
  const queue = new RunQueue(opts.store);
  const { lease } = opts;
  // the lease has run since the claim, while this process started (slow on a loaded machine): renew it
  // at once, and from then on every RENEW_EVERY_MS
  const first = await queue.renew(lease);
  if (first === 'lost') return 'lost';
  if (first === 'cancelled') {
    const result: TaskResult = { status: 'cancelled', exit_code: null };
    return (await queue.finish(lease, 'cancelled', result)) ? 'finished' : 'lost';
  }
  let child: ChildProcess | undefined;
  let stopping: 'lost' | 'cancelled' | 'released' | undefined;
  const stop = (why: 'lost' | 'cancelled' | 'released') => {
    if (stopping) return;
    stopping = why;
    child?.kill(signalFor(why));
  };
  const renewal = setInterval(() => {
    void queue.renew(lease).then(
      (held) => {
        if (held !== 'held') stop(held);
      },
      () => undefined, // the store is away for a moment: the lease has 10 s, try again at the next tick
    );
  }, RENEW_EVERY_MS);
  const task = (await queue.tasks(lease.runId)).find((t) => t.id === lease.taskId);
  if (task?.state !== 'running' || task.attempt !== lease.attempt) {
    clearInterval(renewal);
    return 'lost';
  }
  const spec = task.spec as BatchTask;
  // an earlier attempt's fix still running here (its worker died before it noticed) would work beside this one
  const ended = await endEarlierFixes(opts.store, lease);
  if (ended.length) await queue.note(lease, 'earlier_fix_ended', { host: hostname(), fix_pids: ended });
  // the fix's run id is chosen here, so the journal names its worktree, branch and process before it ends;
  // a task whose killed attempt started a fix on this machine goes on with that fix, from its log
  const earlier = await earlierFixRun(queue, lease, opts.env ?? process.env);
  const fixRun = earlier ?? newFixRunId();
  const cap = capOf((await queue.run(lease.runId)) ?? { spec: undefined });
  child = startFix(spec, fixRun, opts, { resume: earlier !== undefined, cap });
  if (stopping) child.kill(signalFor(stopping));
  const noted = await queue.note(lease, 'fix_started', {
    fix_run: fixRun,
    ...(earlier ? { resumed: true } : {}),
    host: hostname(),
    worker_pid: process.pid,
    fix_pid: child.pid ?? null,
  });
  // another attempt holds the task now (this worker was too slow): its fix must not run beside that one
  if (!noted) stop('lost');
  const onAbort = () => stop('released');
  opts.signal?.addEventListener('abort', onAbort);
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d: Buffer) => {
    stdout += d.toString();
  });
  child.stderr?.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  const fix = child;
  const code = await new Promise<number | null>((resolve) => {
    fix.on('error', (err) => {
      stderr += err.message;
    });
    fix.on('close', (exit) => resolve(exit));
  });
  clearInterval(renewal);
  opts.signal?.removeEventListener('abort', onAbort);
  if (stopping === 'lost') return 'lost';
  if (stopping === 'released') return (await queue.release(lease, 'worker stopped')) ? 'released' : 'lost';
  const doc = parseDoc(stdout);
  if (stopping === 'cancelled') {
    const result: TaskResult = { status: 'cancelled', exit_code: code };
    return (await queue.finish(lease, 'cancelled', result)) ? 'finished' : 'lost';
  }
  const reason =
    typeof doc?.reason === 'string' ? doc.reason : typeof doc?.error === 'string' ? doc.error : '';
  if (code === 4 && PROVIDER_GONE.test(`${reason}\n${stderr}`)) {
    await queue.pause(lease.runId, `provider: ${firstLine(reason || stderr)}`);
    return (await queue.release(lease, 'provider')) ? 'paused' : 'lost';
  }
  if (doc?.budget === 'cost_cap') {
    // the run's cap stopped this fix before a call: the task ends so, and the supervisor starts no other
    const result: TaskResult = { status: 'cost_cap', exit_code: code, error: firstLine(reason) };
    return (await queue.finish(lease, 'failed', result)) ? 'finished' : 'lost';
  }
  const verified = code === 0 && doc?.status === 'verified';
  const result = taskResult(verified, code, doc, reason, stderr);
  if (!(await queue.finish(lease, verified ? 'done' : 'failed', result))) return 'lost';
  await cleanEarlier(opts, fixRun, result.branch ?? null);
  return 'finished';
}

function taskResult(
  verified: boolean,
  code: number | null,
  doc: Record<string, unknown> | undefined,
  reason: string,
  stderr: string,
): TaskResult {
  return {
    status: verified ? 'verified' : doc?.status === 'blocked_uncertain' ? 'blocked_uncertain' : 'failed',
    exit_code: code,
    ...(typeof doc?.code === 'string' ? { code: doc.code } : {}),
    ...(doc && 'branch' in doc ? { branch: (doc.branch as string | null) ?? null } : {}),
    ...(verified ? {} : { error: firstLine(reason || stderr || `keel fix exited ${code}`) }),
  };
}

/**
 * Once the task is finished, remove the worktrees and branches its earlier attempts left on this machine
 * (all but this attempt's fix and its result branch).
 */
async function cleanEarlier(opts: WorkerOptions, fixRun: string, branch: string | null): Promise<void> {
  if (opts.lease.attempt < 2) return;
  try {
    await cleanRun(opts.store, opts.lease.runId, { lease: opts.lease, fixRun, branch });
  } catch (err) {
    // the verdict is written; `keel batch clean` removes what this could not
    process.stderr.write(`keel batch worker: cleaning earlier attempts: ${(err as Error).message}\n`);
  }
}

/**
 * How a worker stops its fix. A cancelled run's fix stops gracefully (SIGTERM: it rolls back and ends
 * CANCELLED). A fix whose task is no longer this worker's (its lease lost, or the worker told to stop and
 * the task given back) is killed outright: a graceful stop would roll back the worktree and end the run
 * in the log the next attempt goes on with, perhaps while that attempt already runs it.
 */
function signalFor(why: 'lost' | 'cancelled' | 'released'): NodeJS.Signals {
  return why === 'cancelled' ? 'SIGTERM' : 'SIGKILL';
}

/** A run id as `keel fix` makes its own (`20261205-024000-1a2b3c`): also the worktree's folder name. */
function newFixRunId(now = new Date()): string {
  const stamp = now.toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
  return `${stamp}-${randomBytes(3).toString('hex')}`;
}

/**
 * The fix run an earlier attempt of this task started on this machine, if its log is in this KEEL_HOME
 * and began after the batch run did: the journal may be a shared database's, and a line naming another
 * fix of this machine must not make this task take that fix over.
 */
async function earlierFixRun(
  queue: RunQueue,
  lease: Lease,
  env: NodeJS.ProcessEnv,
): Promise<string | undefined> {
  const started = (await queue.events(lease.runId)).filter(
    (e) =>
      e.type === 'fix_started' &&
      e.taskId === lease.taskId &&
      (e.attempt ?? 0) < lease.attempt &&
      e.data.host === hostname() &&
      typeof e.data.fix_run === 'string',
  );
  const fixRun = started.at(-1)?.data.fix_run as string | undefined;
  if (fixRun === undefined) return undefined;
  const createdAt = (await queue.run(lease.runId))?.createdAt ?? Number.POSITIVE_INFINITY;
  const db = openDb(keelPaths(env).db);
  try {
    const log = new EventLog(db);
    const row = log.getSession(fixRun);
    // no log yet: the fix died before it opened one, and starts afresh under the id the journal names
    if (!row) return fixRun;
    if (row.mode !== 'fix' || Date.parse(row.created_at) < createdAt) return undefined;
    // a fix stopped (its worker went away) or failed by its provider ended without a verdict and left
    // nothing to go on from: the attempt starts a new one. A verdict it reached is read back, not redone.
    const end = log.events(fixRun).findLast((e) => e.type === 'fix_end')?.data.code;
    return end === 'CANCELLED' || end === 'MODEL_ERROR' ? undefined : fixRun;
  } finally {
    db.close();
  }
}

function startFix(
  task: BatchTask,
  fixRun: string,
  opts: WorkerOptions,
  how: { resume: boolean; cap: number | undefined },
): ChildProcess {
  const [node, ...bin] = opts.keel;
  const args = [...bin, 'fix', '--repo', task.repo, '--issue', task.issue, '--json'];
  if (how.resume) args.push('--resume-run', fixRun);
  if (task.test_command) args.push('--test-command', task.test_command);
  if (task.model) args.push('--model', task.model);
  // keel goal's: the fix writes only in the task's scope, on a branch from the base holding its dependencies
  for (const path of task.scope ?? []) args.push('--scope', path);
  if (task.base) args.push('--base', task.base);
  if (how.cap !== undefined) args.push('--cost-cap', String(how.cap));
  return spawn(node ?? process.execPath, args, {
    cwd: task.repo,
    env: {
      ...(opts.env ?? process.env),
      ...fixEnv(opts.lease, fixRun),
      [FIX_LEDGER_ENV.run]: opts.lease.runId,
      [FIX_LEDGER_ENV.task]: opts.lease.taskId,
    },
    // stdin is a pipe this worker never writes to: its end tells the fix its worker is gone (fix/parent-watch.ts)
    stdio: ['pipe', 'pipe', 'pipe'],
  });
}

function parseDoc(stdout: string): Record<string, unknown> | undefined {
  try {
    const doc = JSON.parse(stdout) as unknown;
    return doc && typeof doc === 'object' ? (doc as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

function firstLine(text: string): string {
  return (
    text
      .trim()
      .split('\n')
      .find((l) => l.trim())
      ?.slice(0, 300) ?? ''
  );
}
