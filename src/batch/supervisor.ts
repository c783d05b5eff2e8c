/**
 * The batch supervisor: claims tasks from the run queue (store/queue.ts) and starts one worker process
 * per task, a `keel fix --json` that works in its own worktree. While a worker lives, the supervisor
 * renews its lease every ~2 s; a lost lease or a cancel stops the worker. A provider error that will not
 * go away (authentication, quota) gives the task back and pauses the whole run.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { hostname } from 'node:os';
import { keelPaths } from '../config/paths.js';
import { openDb } from '../store/db.js';
import type { Store } from '../store/engine.js';
import { EventLog } from '../store/event-log.js';
import { Ledger } from '../store/ledger.js';
import { type Claimed, QUEUE_CHANNEL, RENEW_EVERY_MS, RunQueue, type RunView } from '../store/queue.js';
import { ledgerEntriesOf } from './ledger-from-log.js';
import { type BatchTask, repoProblem } from './tasks-file.js';

/** How a batch ended: every task verified, some not, paused for the provider, or cancelled. */
export type BatchEnd = 'verified' | 'failed' | 'paused_provider' | 'cancelled';

/** What a worker's task came to, as stored in the queue. */
export interface TaskResult {
  status: 'verified' | 'failed' | 'cancelled';
  exit_code: number | null;
  code?: string;
  branch?: string | null;
  error?: string;
}

export interface SuperviseOptions {
  store: Store;
  runId: string;
  /** How to start keel: [node, bin.js]. */
  keel: readonly string[];
  env?: NodeJS.ProcessEnv;
  /** Called after every change the supervisor sees (for a progress line). */
  onProgress?(run: RunView): void;
  signal?: AbortSignal;
}

/** An answer of the provider that waiting will not fix. */
const PROVIDER_GONE =
  /\b(401|403)\b|unauthori[sz]ed|authentication|invalid api key|quota|insufficient_quota|billing/i;

interface Worker {
  lease: Claimed;
  child: ChildProcess;
  stopping?: 'cancelled' | 'lost';
}

/** Run a batch's queue until nothing is left to start and no worker runs; returns how it ended. */
export async function supervise(opts: SuperviseOptions): Promise<BatchEnd> {
  const queue = new RunQueue(opts.store);
  const owner = `${hostname()}:${process.pid}`;
  const workers = new Map<string, Worker>();
  let wake: () => void = () => {};
  const nudge = () => wake();
  const stopListening = await opts.store.listen(QUEUE_CHANNEL, nudge);
  const renewal = setInterval(() => {
    for (const worker of workers.values()) void renew(worker);
  }, RENEW_EVERY_MS);
  const renew = async (worker: Worker) => {
    if (worker.stopping) return;
    const held = await queue.renew(worker.lease).catch(() => 'held' as const);
    if (held === 'held') return;
    worker.stopping = held;
    worker.child.kill('SIGTERM');
  };
  opts.signal?.addEventListener('abort', nudge);
  try {
    for (;;) {
      if (opts.signal?.aborted) {
        for (const w of workers.values()) w.child.kill('SIGTERM');
        return 'cancelled';
      }
      const run = await queue.run(opts.runId);
      if (!run) throw new Error(`run ${opts.runId} is not in the queue`);
      opts.onProgress?.(run);
      if (run.status === 'running') {
        for (let claimed = await queue.claim(opts.runId, owner); claimed; ) {
          start(claimed);
          claimed = await queue.claim(opts.runId, owner);
        }
      }
      const now = await queue.run(opts.runId);
      if (now && !workers.size) {
        if (now.status === 'cancelled') return 'cancelled';
        if (now.status === 'paused_provider') return 'paused_provider';
        // tasks another supervisor holds still count: wait for them
        if (!now.counts.queued && !now.counts.running)
          return now.counts.done === Object.values(now.counts).reduce((a, b) => a + b, 0)
            ? 'verified'
            : 'failed';
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
    clearInterval(renewal);
    opts.signal?.removeEventListener('abort', nudge);
    await stopListening();
  }

  function start(lease: Claimed): void {
    const task = lease.spec as BatchTask;
    const problem = repoProblem(task.repo);
    if (problem) {
      void queue.finish(lease, 'failed', {
        status: 'failed',
        exit_code: null,
        error: problem,
      } satisfies TaskResult);
      return;
    }
    const [node, ...bin] = opts.keel;
    const args = [...bin, 'fix', '--repo', task.repo, '--issue', task.issue, '--json'];
    if (task.test_command) args.push('--test-command', task.test_command);
    if (task.model) args.push('--model', task.model);
    const child = spawn(node ?? process.execPath, args, {
      cwd: task.repo,
      env: opts.env ?? process.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const worker: Worker = { lease, child };
    workers.set(lease.taskId, worker);
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr?.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    child.on('error', (err) => {
      stderr += err.message;
    });
    child.on('close', (code) => {
      void settle(worker, code, stdout, stderr).finally(() => {
        workers.delete(lease.taskId);
        nudge();
      });
    });
  }

  async function settle(worker: Worker, code: number | null, stdout: string, stderr: string): Promise<void> {
    const { lease } = worker;
    // a lost lease belongs to another attempt now: this one writes nothing
    if (worker.stopping === 'lost') return;
    if (worker.stopping === 'cancelled') {
      await queue.finish(lease, 'cancelled', { status: 'cancelled', exit_code: code } satisfies TaskResult);
      return;
    }
    const doc = parseDoc(stdout);
    if (typeof doc?.session_id === 'string') await recordCalls(doc.session_id, lease);
    const reason =
      typeof doc?.reason === 'string' ? doc.reason : typeof doc?.error === 'string' ? doc.error : '';
    if (code === 4 && PROVIDER_GONE.test(`${reason}\n${stderr}`)) {
      await queue.pause(lease.runId, `provider: ${firstLine(reason || stderr)}`);
      await queue.release(lease, 'provider');
      return;
    }
    const verified = code === 0 && doc?.status === 'verified';
    const result: TaskResult = {
      status: verified ? 'verified' : 'failed',
      exit_code: code,
      ...(typeof doc?.code === 'string' ? { code: doc.code } : {}),
      ...(doc && 'branch' in doc ? { branch: (doc.branch as string | null) ?? null } : {}),
      ...(verified ? {} : { error: firstLine(reason || stderr || `keel fix exited ${code}`) }),
    };
    await queue.finish(lease, verified ? 'done' : 'failed', result);
  }

  /** Copy the worker's model calls from its sessions in KEEL_HOME into the store's ledger. */
  async function recordCalls(sessionId: string, lease: Claimed): Promise<void> {
    const db = openDb(keelPaths(opts.env ?? process.env).db);
    try {
      const entries = ledgerEntriesOf(new EventLog(db), sessionId, {
        runId: lease.runId,
        taskId: lease.taskId,
      });
      const ledger = new Ledger(opts.store);
      await opts.store.transaction(async (tx) => {
        for (const e of entries) await ledger.recordIn(tx, e);
      });
    } finally {
      db.close();
    }
  }
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
