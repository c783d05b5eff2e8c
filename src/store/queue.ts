/**
 * The run queue (`keel batch`): runs, their tasks and each task's attempts, on SQLite or PostgreSQL.
 *
 * - The concurrency cap is the database's: `queue_runs.running` is claimed in the same transaction as
 *   the task, under the run row's lock, and a CHECK keeps it within `concurrency`.
 * - Liveness is a lease renewed from a timer (~2 s); only a lease expired (~10 s) ends an attempt, and
 *   any process may requeue it. Every write of an attempt is fenced by (task, attempt): a zombie of an
 *   older attempt can neither renew nor finish. From the claim until the worker's own first renewal, the
 *   supervisor that started it holds the lease (holdForWorker): starting a process is not taken for a hang.
 * - Each run's journal (`queue_events`) is numbered under the run's lock, so a reader's cursor never
 *   skips a row committed late (store/streams.ts says why a global sequence would).
 * - After a change, the queue hints on `keel_queue` (store/engine.ts): a listener re-reads, and polls anyway.
 */
import type { Sql, Store } from './engine.js';
import { nextSeq } from './streams.js';

export const QUEUE_CHANNEL = 'keel_queue';

/** How long a lease lasts without renewal, and how often a worker should renew it. */
export const LEASE_MS = 10_000;
export const RENEW_EVERY_MS = 2_000;

export type RunStatus = 'running' | 'paused_provider' | 'cancelled';
export type TaskState = 'queued' | 'running' | 'done' | 'failed' | 'cancelled';
export type Outcome = 'done' | 'failed' | 'cancelled';

export interface TaskInput {
  id: string;
  spec: unknown;
}

/** A held attempt at a task: what every write of that attempt must present. */
export interface Lease {
  runId: string;
  taskId: string;
  attempt: number;
}

export interface Claimed extends Lease {
  spec: unknown;
  leaseUntil: number;
}

/** `held`: go on; `lost`: another attempt owns the task now, stop without writing; `cancelled`: stop, then finish as cancelled. */
export type RenewResult = 'held' | 'lost' | 'cancelled';

export interface RunView {
  id: string;
  createdAt: number;
  concurrency: number;
  running: number;
  status: RunStatus;
  statusReason?: string;
  spec: unknown;
  counts: Record<TaskState, number>;
}

export interface TaskView {
  id: string;
  state: TaskState;
  attempt: number;
  owner?: string;
  leaseUntil?: number;
  spec: unknown;
  result?: unknown;
}

export interface QueueEvent {
  seq: number;
  ts: number;
  type: string;
  taskId?: string;
  attempt?: number;
  data: Record<string, unknown>;
}

export interface QueueOptions {
  leaseMs?: number;
  /** The clock leases are measured by (tests move it; every process of a team should run NTP). */
  now?: () => number;
}

interface RunRow {
  id: string;
  created_at: number;
  concurrency: number;
  running: number;
  status: RunStatus;
  status_reason: string | null;
  spec: string;
}

interface TaskRow {
  id: string;
  state: TaskState;
  attempt: number;
  lease_owner: string | null;
  lease_until: number | null;
  spec: string;
  result: string | null;
}

/** The queue's async interface; one implementation speaks both engines. */
export interface QueueStore {
  createRun(
    id: string,
    run: { concurrency: number; spec?: unknown; tasks: TaskInput[] },
  ): Promise<{ created: boolean }>;
  claim(runId: string, owner: string): Promise<Claimed | undefined>;
  renew(lease: Lease): Promise<RenewResult>;
  holdForWorker(lease: Lease): Promise<boolean>;
  finish(lease: Lease, outcome: Outcome, result?: unknown): Promise<boolean>;
  release(lease: Lease, reason: string): Promise<boolean>;
  requeueExpired(runId: string): Promise<number>;
  pause(runId: string, reason: string): Promise<boolean>;
  resume(runId: string): Promise<boolean>;
  cancel(runId: string): Promise<boolean>;
  run(runId: string): Promise<RunView | undefined>;
  runs(limit?: number): Promise<RunView[]>;
  tasks(runId: string): Promise<TaskView[]>;
  events(runId: string, afterSeq?: number): Promise<QueueEvent[]>;
}

/** The run queue over a team store (SQLite or PostgreSQL). */
export class RunQueue implements QueueStore {
  private readonly leaseMs: number;
  private readonly now: () => number;

  constructor(
    private readonly store: Store,
    opts: QueueOptions = {},
  ) {
    this.leaseMs = opts.leaseMs ?? LEASE_MS;
    this.now = opts.now ?? Date.now;
  }

  /** Record a run and its tasks; a run id already there is left as it is (`created: false`: resume it). */
  async createRun(
    id: string,
    run: { concurrency: number; spec?: unknown; tasks: TaskInput[] },
  ): Promise<{ created: boolean }> {
    const now = this.now();
    const created = await this.store.transaction(async (tx) => {
      const inserted = await tx.run(
        `INSERT INTO queue_runs (id, created_at, updated_at, concurrency, running, status, spec)
         VALUES ($1, $2, $2, $3, 0, 'running', $4) ON CONFLICT (id) DO NOTHING`,
        [id, now, run.concurrency, JSON.stringify(run.spec ?? {})],
      );
      if (inserted === 0) return false;
      for (const [position, task] of run.tasks.entries())
        await tx.run(
          `INSERT INTO queue_tasks (run_id, id, position, state, attempt, spec, updated_at)
           VALUES ($1, $2, $3, 'queued', 0, $4, $5)`,
          [id, task.id, position, JSON.stringify(task.spec), now],
        );
      await appendEvent(tx, id, now, 'run_created', {
        concurrency: run.concurrency,
        tasks: run.tasks.length,
      });
      return true;
    });
    if (created) this.store.hint(QUEUE_CHANNEL);
    return { created };
  }

  /**
   * Add a task to a run that exists (keel goal adds a task once its dependencies verified); a task id the
   * run holds already is left as it is. False when the run is not there or the id was taken.
   */
  async addTask(runId: string, task: TaskInput): Promise<boolean> {
    const now = this.now();
    const added = await this.store.transaction(async (tx) => {
      const run = await lockRun(tx, runId);
      if (!run) return false;
      const [last] = await tx.query<{ n: number | null }>(
        'SELECT MAX(position) AS n FROM queue_tasks WHERE run_id = $1',
        [runId],
      );
      const position = last?.n === null || last?.n === undefined ? 0 : Number(last.n) + 1;
      const inserted = await tx.run(
        `INSERT INTO queue_tasks (run_id, id, position, state, attempt, spec, updated_at)
         VALUES ($1, $2, $3, 'queued', 0, $4, $5) ON CONFLICT (run_id, id) DO NOTHING`,
        [runId, task.id, position, JSON.stringify(task.spec), now],
      );
      if (inserted === 0) return false;
      await appendEvent(tx, runId, now, 'task_added', {}, task.id);
      return true;
    });
    if (added) this.store.hint(QUEUE_CHANNEL);
    return added;
  }

  /** Add a line about the run as a whole to its journal (keel goal's integration); false when the run is not there. */
  async record(runId: string, type: string, data: Record<string, unknown>): Promise<boolean> {
    const now = this.now();
    return this.store.transaction(async (tx) => {
      const run = await lockRun(tx, runId);
      if (!run) return false;
      await appendEvent(tx, runId, now, type, data);
      return true;
    });
  }

  /** Take the next queued task of a run for `owner`, if the run dispatches and is under its cap. */
  async claim(runId: string, owner: string): Promise<Claimed | undefined> {
    const now = this.now();
    const claimed = await this.store.transaction(async (tx) => {
      const run = await lockRun(tx, runId);
      if (!run) return undefined;
      const freed = await requeueExpiredIn(tx, run, now);
      const running = run.running - freed;
      if (run.status !== 'running' || running >= run.concurrency) return undefined;
      const [task] = await tx.query<TaskRow>(
        `SELECT id, attempt, spec FROM queue_tasks
         WHERE run_id = $1 AND state = 'queued' ORDER BY position LIMIT 1`,
        [runId],
      );
      if (!task) return undefined;
      const attempt = task.attempt + 1;
      const leaseUntil = now + this.leaseMs;
      await tx.run(
        `UPDATE queue_tasks SET state = 'running', attempt = $3, lease_owner = $4, lease_until = $5, updated_at = $6,
           worker_renewed = 0
         WHERE run_id = $1 AND id = $2 AND state = 'queued'`,
        [runId, task.id, attempt, owner, leaseUntil, now],
      );
      // the cap, claimed with the task: the CHECK on queue_runs refuses a count over it
      await tx.run('UPDATE queue_runs SET running = running + 1, updated_at = $2 WHERE id = $1', [
        runId,
        now,
      ]);
      await tx.run(
        `INSERT INTO queue_attempts (run_id, task_id, attempt, owner, started_at) VALUES ($1, $2, $3, $4, $5)`,
        [runId, task.id, attempt, owner, now],
      );
      await appendEvent(tx, runId, now, 'claimed', { owner }, task.id, attempt);
      return { runId, taskId: task.id, attempt, spec: JSON.parse(task.spec) as unknown, leaseUntil };
    });
    if (claimed) this.store.hint(QUEUE_CHANNEL);
    return claimed;
  }

  /** The worker extends its held lease; fenced by (task, attempt). From now on the lease is the worker's alone. */
  async renew(lease: Lease): Promise<RenewResult> {
    const now = this.now();
    return this.store.transaction(async (tx) => {
      const renewed = await tx.run(
        `UPDATE queue_tasks SET lease_until = $4, worker_renewed = 1
         WHERE run_id = $1 AND id = $2 AND attempt = $3 AND state = 'running'`,
        [lease.runId, lease.taskId, lease.attempt, now + this.leaseMs],
      );
      if (renewed === 0) return 'lost';
      const [run] = await tx.query<{ status: RunStatus }>('SELECT status FROM queue_runs WHERE id = $1', [
        lease.runId,
      ]);
      return run?.status === 'cancelled' ? 'cancelled' : 'held';
    });
  }

  /**
   * The supervisor extends the lease of a worker it started that has not renewed it yet (the process is
   * still starting); fenced by (task, attempt). False once the worker has renewed it itself, or the attempt
   * no longer holds the task: the supervisor stops holding it either way, so only the worker keeps it alive.
   */
  async holdForWorker(lease: Lease): Promise<boolean> {
    const held = await this.store.run(
      `UPDATE queue_tasks SET lease_until = $4
       WHERE run_id = $1 AND id = $2 AND attempt = $3 AND state = 'running' AND worker_renewed = 0`,
      [lease.runId, lease.taskId, lease.attempt, this.now() + this.leaseMs],
    );
    return held > 0;
  }

  /** End an attempt with its outcome; false (and nothing written) when the attempt no longer holds the task. */
  async finish(lease: Lease, outcome: Outcome, result?: unknown): Promise<boolean> {
    return this.endAttempt(lease, outcome, outcome, result);
  }

  /** Give a held task back to the queue unfinished (the provider went away): another attempt takes it later. */
  async release(lease: Lease, reason: string): Promise<boolean> {
    return this.endAttempt(lease, 'queued', 'released', { reason });
  }

  private async endAttempt(
    lease: Lease,
    state: TaskState,
    outcome: string,
    result: unknown,
  ): Promise<boolean> {
    const now = this.now();
    const ended = await this.store.transaction(async (tx) => {
      const run = await lockRun(tx, lease.runId);
      if (!run) return false;
      const changed = await tx.run(
        `UPDATE queue_tasks SET state = $4, result = $5, lease_owner = NULL, lease_until = NULL, updated_at = $6
         WHERE run_id = $1 AND id = $2 AND attempt = $3 AND state = 'running'`,
        [
          lease.runId,
          lease.taskId,
          lease.attempt,
          state,
          state === 'queued' ? null : JSON.stringify(result ?? null),
          now,
        ],
      );
      if (changed === 0) return false;
      await tx.run('UPDATE queue_runs SET running = running - 1, updated_at = $2 WHERE id = $1', [
        lease.runId,
        now,
      ]);
      await closeAttempt(tx, lease, now, outcome);
      await appendEvent(
        tx,
        lease.runId,
        now,
        state === 'queued' ? 'released' : 'finished',
        { outcome, ...(result === undefined ? {} : { result }) },
        lease.taskId,
        lease.attempt,
      );
      return true;
    });
    if (ended) this.store.hint(QUEUE_CHANNEL);
    return ended;
  }

  /** Add a line to the run's journal for a held attempt (what it started, where); false when the attempt lost the task. */
  async note(lease: Lease, type: string, data: Record<string, unknown>): Promise<boolean> {
    const now = this.now();
    return this.store.transaction(async (tx) => {
      const run = await lockRun(tx, lease.runId);
      if (!run) return false;
      const [held] = await tx.query<{ id: string }>(
        `SELECT id FROM queue_tasks WHERE run_id = $1 AND id = $2 AND attempt = $3 AND state = 'running'`,
        [lease.runId, lease.taskId, lease.attempt],
      );
      if (!held) return false;
      await appendEvent(tx, lease.runId, now, type, data, lease.taskId, lease.attempt);
      return true;
    });
  }

  /** Put back every task of a run whose lease ran out (its worker died or hangs); any process may. */
  async requeueExpired(runId: string): Promise<number> {
    const now = this.now();
    const freed = await this.store.transaction(async (tx) => {
      const run = await lockRun(tx, runId);
      return run ? requeueExpiredIn(tx, run, now) : 0;
    });
    if (freed) this.store.hint(QUEUE_CHANNEL);
    return freed;
  }

  /** Stop dispatch for a provider error that will not go away (authentication, quota). */
  async pause(runId: string, reason: string): Promise<boolean> {
    return this.setStatus(runId, 'running', 'paused_provider', reason);
  }

  /** Dispatch again after a pause for the provider. */
  async resume(runId: string): Promise<boolean> {
    return this.setStatus(runId, 'paused_provider', 'running', undefined);
  }

  /** No task starts any more; queued ones are cancelled, running ones learn it at their next renewal. */
  async cancel(runId: string): Promise<boolean> {
    const now = this.now();
    const done = await this.store.transaction(async (tx) => {
      const run = await lockRun(tx, runId);
      if (!run || run.status === 'cancelled') return false;
      await tx.run(`UPDATE queue_runs SET status = 'cancelled', updated_at = $2 WHERE id = $1`, [runId, now]);
      const cancelled = await tx.run(
        `UPDATE queue_tasks SET state = 'cancelled', updated_at = $2 WHERE run_id = $1 AND state = 'queued'`,
        [runId, now],
      );
      await appendEvent(tx, runId, now, 'cancelled', { queued_cancelled: cancelled });
      return true;
    });
    if (done) this.store.hint(QUEUE_CHANNEL);
    return done;
  }

  private async setStatus(
    runId: string,
    from: RunStatus,
    to: RunStatus,
    reason: string | undefined,
  ): Promise<boolean> {
    const now = this.now();
    const changed = await this.store.transaction(async (tx) => {
      const run = await lockRun(tx, runId);
      if (run?.status !== from) return false;
      await tx.run('UPDATE queue_runs SET status = $2, status_reason = $3, updated_at = $4 WHERE id = $1', [
        runId,
        to,
        reason ?? null,
        now,
      ]);
      await appendEvent(tx, runId, now, to === 'running' ? 'resumed' : 'paused', {
        ...(reason ? { reason } : {}),
      });
      return true;
    });
    if (changed) this.store.hint(QUEUE_CHANNEL);
    return changed;
  }

  async run(runId: string): Promise<RunView | undefined> {
    const [row] = await this.store.query<RunRow>('SELECT * FROM queue_runs WHERE id = $1', [runId]);
    return row ? this.view(row) : undefined;
  }

  /** The newest runs first. */
  async runs(limit = 50): Promise<RunView[]> {
    const rows = await this.store.query<RunRow>(
      'SELECT * FROM queue_runs ORDER BY created_at DESC, id LIMIT $1',
      [limit],
    );
    return Promise.all(rows.map((row) => this.view(row)));
  }

  private async view(row: RunRow): Promise<RunView> {
    const counts: Record<TaskState, number> = { queued: 0, running: 0, done: 0, failed: 0, cancelled: 0 };
    const byState = await this.store.query<{ state: TaskState; n: number }>(
      'SELECT state, COUNT(*) AS n FROM queue_tasks WHERE run_id = $1 GROUP BY state',
      [row.id],
    );
    for (const { state, n } of byState) counts[state] = Number(n);
    return {
      id: row.id,
      createdAt: Number(row.created_at),
      concurrency: row.concurrency,
      running: row.running,
      status: row.status,
      ...(row.status_reason ? { statusReason: row.status_reason } : {}),
      spec: JSON.parse(row.spec) as unknown,
      counts,
    };
  }

  async tasks(runId: string): Promise<TaskView[]> {
    const rows = await this.store.query<TaskRow>(
      'SELECT id, state, attempt, lease_owner, lease_until, spec, result FROM queue_tasks WHERE run_id = $1 ORDER BY position',
      [runId],
    );
    return rows.map((r) => ({
      id: r.id,
      state: r.state,
      attempt: r.attempt,
      ...(r.lease_owner ? { owner: r.lease_owner } : {}),
      ...(r.lease_until !== null ? { leaseUntil: Number(r.lease_until) } : {}),
      spec: JSON.parse(r.spec) as unknown,
      ...(r.result !== null ? { result: JSON.parse(r.result) as unknown } : {}),
    }));
  }

  /** A run's journal after `afterSeq`, in order: a cursor over it never skips a row. */
  async events(runId: string, afterSeq = 0): Promise<QueueEvent[]> {
    return readEvents(this.store, runId, afterSeq);
  }
}

/** The run's row, locked until the transaction ends (PostgreSQL; SQLite's writer lock covers it). */
async function lockRun(tx: Sql, runId: string): Promise<RunRow | undefined> {
  const lock = tx.dialect === 'postgres' ? ' FOR UPDATE' : '';
  const [row] = await tx.query<RunRow>(`SELECT * FROM queue_runs WHERE id = $1${lock}`, [runId]);
  return row;
}

/** Requeue a locked run's expired leases (cancel them when the run is cancelled); returns how many slots freed. */
async function requeueExpiredIn(tx: Sql, run: RunRow, now: number): Promise<number> {
  const expired = await tx.query<{ id: string; attempt: number }>(
    `SELECT id, attempt FROM queue_tasks WHERE run_id = $1 AND state = 'running' AND lease_until < $2`,
    [run.id, now],
  );
  const next: TaskState = run.status === 'cancelled' ? 'cancelled' : 'queued';
  for (const task of expired) {
    await tx.run(
      `UPDATE queue_tasks SET state = $4, lease_owner = NULL, lease_until = NULL, updated_at = $5
       WHERE run_id = $1 AND id = $2 AND attempt = $3 AND state = 'running'`,
      [run.id, task.id, task.attempt, next, now],
    );
    const lease = { runId: run.id, taskId: task.id, attempt: task.attempt };
    await closeAttempt(tx, lease, now, 'expired');
    await appendEvent(tx, run.id, now, 'expired', { state: next }, task.id, task.attempt);
  }
  if (expired.length)
    await tx.run('UPDATE queue_runs SET running = running - $2, updated_at = $3 WHERE id = $1', [
      run.id,
      expired.length,
      now,
    ]);
  return expired.length;
}

async function closeAttempt(tx: Sql, lease: Lease, now: number, outcome: string): Promise<void> {
  await tx.run(
    `UPDATE queue_attempts SET ended_at = $4, outcome = $5 WHERE run_id = $1 AND task_id = $2 AND attempt = $3`,
    [lease.runId, lease.taskId, lease.attempt, now, outcome],
  );
}

/**
 * Append to a run's journal inside the caller's transaction. The number comes from the run's own
 * counter row, locked until commit, so journal rows commit in the order of their numbers.
 */
export async function appendEvent(
  tx: Sql,
  runId: string,
  ts: number,
  type: string,
  data: Record<string, unknown>,
  taskId?: string,
  attempt?: number,
): Promise<number> {
  const seq = await nextSeq(tx, `queue:${runId}`);
  await tx.run(
    `INSERT INTO queue_events (run_id, seq, ts, type, task_id, attempt, data) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
    [runId, seq, ts, type, taskId ?? null, attempt ?? null, JSON.stringify(data)],
  );
  return seq;
}

async function readEvents(sql: Sql, runId: string, afterSeq: number): Promise<QueueEvent[]> {
  const rows = await sql.query<{
    seq: number;
    ts: number;
    type: string;
    task_id: string | null;
    attempt: number | null;
    data: string;
  }>(
    'SELECT seq, ts, type, task_id, attempt, data FROM queue_events WHERE run_id = $1 AND seq > $2 ORDER BY seq',
    [runId, afterSeq],
  );
  return rows.map((r) => ({
    seq: Number(r.seq),
    ts: Number(r.ts),
    type: r.type,
    ...(r.task_id !== null ? { taskId: r.task_id } : {}),
    ...(r.attempt !== null ? { attempt: r.attempt } : {}),
    data: JSON.parse(r.data) as Record<string, unknown>,
  }));
}
