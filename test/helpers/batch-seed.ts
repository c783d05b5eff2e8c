/** A batch run written straight into a team store (the queue and ledger APIs `keel batch` uses), for the page's tests. */
import { openStore, type Store } from '../../src/store/engine.js';
import { Ledger } from '../../src/store/ledger.js';
import { type Claimed, RunQueue } from '../../src/store/queue.js';

export interface SeededBatch {
  store: Store;
  queue: RunQueue;
  ledger: Ledger;
  /** The fake clock every write uses (ms); move it with `at`. */
  clock: { now: number };
  claimed: Map<string, Claimed>;
}

/** Open the SQLite team store at `db` with a clock starting at `start`. */
export async function seedStore(
  db: string,
  start = Date.parse('2026-12-05T04:00:00Z'),
): Promise<SeededBatch> {
  const store = await openStore({ engine: 'sqlite', path: db });
  const clock = { now: start };
  const now = () => clock.now;
  return {
    store,
    queue: new RunQueue(store, { now }),
    ledger: new Ledger(store, now),
    clock,
    claimed: new Map(),
  };
}

/** A run of `tasks` (id → repo) at concurrency 2. */
export async function createBatch(
  s: SeededBatch,
  runId: string,
  tasks: Record<string, string>,
): Promise<void> {
  await s.queue.createRun(runId, {
    concurrency: 2,
    spec: { file: 'tasks.jsonl' },
    tasks: Object.entries(tasks).map(([id, repo]) => ({ id, spec: { id, repo, issue: `fix ${id}` } })),
  });
}

/** Claim the next task of `runId`, then record a model call of `costUsd` (routed by `tier`) for it `afterMs` later. */
export async function claimAndCall(
  s: SeededBatch,
  runId: string,
  afterMs: number,
  costUsd: number,
  tier?: string,
): Promise<string> {
  const lease = await s.queue.claim(runId, `worker-${runId}`);
  if (!lease) throw new Error(`nothing to claim in ${runId}`);
  s.claimed.set(lease.taskId, lease);
  s.clock.now += afterMs;
  await s.ledger.record({
    runId,
    taskId: lease.taskId,
    provider: 'openai',
    model: 'test-model',
    promptTokens: 1000,
    completionTokens: 50,
    latencyMs: 800,
    costUsd,
    costSource: 'priced',
    ...(tier ? { tier } : {}),
  });
  return lease.taskId;
}

/** Finish a claimed task: `done` with its branch, or `failed` with its error. */
export async function finishTask(
  s: SeededBatch,
  taskId: string,
  outcome: 'done' | 'failed',
  afterMs = 1000,
): Promise<void> {
  const lease = s.claimed.get(taskId);
  if (!lease) throw new Error(`task ${taskId} was not claimed`);
  s.clock.now += afterMs;
  await s.queue.finish(
    lease,
    outcome,
    outcome === 'done' ? { branch: `keel/fix-${taskId}-abc123` } : { error: `${taskId}: not verified` },
  );
}
