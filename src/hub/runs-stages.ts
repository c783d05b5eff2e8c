/**
 * How a workflow run moves from stage to stage, inside the caller's transaction, which holds the run
 * row's lock. A stage that asks agents (`agent`, `quorum`) records one request per frozen eligible agent
 * (the hub's outbox: the message the hub itself routes, with the run, stage and attempt attached);
 * `await_signal` and `approval` park. A stage with a timeout gets a row in `hub_timers`, which any
 * process may fire (timers.ts); finishing the stage deletes it. Every step is a sealed run event.
 */
import { randomUUID } from 'node:crypto';
import { canonicalJson, sha256 } from '../store/audit-chain.js';
import type { Sql } from '../store/engine.js';
import { deliverRequest } from './outbox.js';
import { appendRunEvent } from './runs-chain.js';

export type RunStatus = 'running' | 'succeeded' | 'failed';
export type StageKind = 'agent' | 'quorum' | 'await_signal' | 'approval';
export type StageState = 'pending' | 'active' | 'parked' | 'done' | 'timed_out';

export interface RunRow {
  id: string;
  workflow: string;
  workflow_sha256: string;
  source: string;
  event: string;
  delivery_id: string;
  body_sha256: string;
  signal_secret_env: string | null;
  /** The hub project whose agents the run asks (null: a run of no project, its requests kept in the outbox). */
  project_id: string | null;
  /** Why a failed run ended, when a person ended it: `rejected` (an approval stage was rejected). */
  ended_reason?: string | null;
  status: RunStatus;
  stage_index: number;
  created_at: number;
  updated_at: number;
}

export interface StageRow {
  run_id: string;
  position: number;
  id: string;
  kind: StageKind;
  state: StageState;
  attempt: number;
  min_producers: number | null;
  prompt: string | null;
  signal: string | null;
  timeout_ms: number | null;
  mode: string | null;
  started_at: number | null;
  ended_at: number | null;
}

/** What every step needs: the audit key that seals run events, and the time. */
export interface StepContext {
  key: Buffer;
  now: number;
}

/** The run row, locked until the transaction ends (SQLite's BEGIN IMMEDIATE already holds the database). */
export async function lockRun(tx: Sql, runId: string): Promise<RunRow | undefined> {
  const lock = tx.dialect === 'postgres' ? ' FOR UPDATE' : '';
  const [row] = await tx.query<RunRow>(`SELECT * FROM hub_runs WHERE id = $1${lock}`, [runId]);
  return row && { ...row, stage_index: Number(row.stage_index) };
}

export async function stageAt(sql: Sql, runId: string, position: number): Promise<StageRow | undefined> {
  const [row] = await sql.query<StageRow>(
    'SELECT * FROM hub_run_stages WHERE run_id = $1 AND position = $2',
    [runId, position],
  );
  return row && numbered(row);
}

/** The stage a run is at (its current position), if the run is still running. */
export async function currentStage(tx: Sql, run: RunRow): Promise<StageRow | undefined> {
  if (run.status !== 'running') return undefined;
  return stageAt(tx, run.id, run.stage_index);
}

function numbered(row: StageRow): StageRow {
  return {
    ...row,
    position: Number(row.position),
    attempt: Number(row.attempt),
    min_producers: row.min_producers === null ? null : Number(row.min_producers),
    timeout_ms: row.timeout_ms === null ? null : Number(row.timeout_ms),
  };
}

/** Start the stage at `position` (attempt `attempt`), or end the run as succeeded when there is none. */
export async function activateStage(
  tx: Sql,
  ctx: StepContext,
  runId: string,
  position: number,
  attempt: number,
): Promise<void> {
  const stage = await stageAt(tx, runId, position);
  if (!stage) {
    await tx.run(
      `UPDATE hub_runs SET status = 'succeeded', stage_index = $2, updated_at = $3 WHERE id = $1`,
      [runId, position, ctx.now],
    );
    await appendRunEvent(tx, ctx.key, runId, ctx.now, 'run_succeeded', {});
    return;
  }
  const parks = stage.kind === 'await_signal' || stage.kind === 'approval';
  await tx.run(`UPDATE hub_runs SET status = 'running', stage_index = $2, updated_at = $3 WHERE id = $1`, [
    runId,
    position,
    ctx.now,
  ]);
  await tx.run(
    `UPDATE hub_run_stages SET state = $3, attempt = $4, started_at = $5, ended_at = NULL
     WHERE run_id = $1 AND position = $2`,
    [runId, position, parks ? 'parked' : 'active', attempt, ctx.now],
  );
  if (stage.timeout_ms !== null)
    await tx.run(
      `INSERT INTO hub_timers (id, kind, run_id, stage_id, attempt, due_at) VALUES ($1, 'stage_timeout', $2, $3, $4, $5)`,
      [randomUUID(), runId, stage.id, attempt, ctx.now + stage.timeout_ms],
    );
  if (!parks) {
    const requests = await sendRequests(tx, ctx, stage, attempt);
    await appendRunEvent(tx, ctx.key, runId, ctx.now, 'stage_started', {
      stage: stage.id,
      kind: stage.kind,
      attempt,
      requests,
    });
    return;
  }
  await appendRunEvent(tx, ctx.key, runId, ctx.now, 'stage_parked', {
    stage: stage.id,
    kind: stage.kind,
    attempt,
    ...(stage.signal ? { signal: stage.signal } : {}),
  });
  if (stage.kind === 'await_signal' && stage.signal) await consumeWaitingSignal(tx, ctx, stage, attempt);
}

/** The hub's own request to each frozen eligible agent of a stage, kept in its outbox with the request's hash. */
async function sendRequests(tx: Sql, ctx: StepContext, stage: StageRow, attempt: number) {
  const agents = await tx.query<{ agent_id: string; agent_name: string }>(
    'SELECT agent_id, agent_name FROM hub_stage_eligible WHERE run_id = $1 AND stage_id = $2 ORDER BY agent_name',
    [stage.run_id, stage.id],
  );
  const sent: { agent_id: string; agent_name: string; message_id: string; request_hash: string }[] = [];
  for (const agent of agents) {
    const body = canonicalJson({
      workflow_run: stage.run_id,
      stage: stage.id,
      attempt,
      kind: stage.kind,
      mode: stage.mode ?? 'ask',
      prompt: stage.prompt ?? '',
      to: agent.agent_id,
    });
    const messageId = randomUUID();
    const requestHash = sha256(body);
    await tx.run(
      `INSERT INTO hub_stage_requests (message_id, run_id, stage_id, attempt, agent_id, request_hash, body, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
      [messageId, stage.run_id, stage.id, attempt, agent.agent_id, requestHash, body, ctx.now],
    );
    // into the agent's inbox as a hub message, in this transaction, when the run belongs to a hub project
    await deliverRequest(tx, {
      messageId,
      runId: stage.run_id,
      agentId: agent.agent_id,
      body,
      now: ctx.now,
    });
    sent.push({ ...agent, message_id: messageId, request_hash: requestHash });
  }
  return sent;
}

/** A signal stored before its stage parked is consumed now (the oldest one for that name). */
async function consumeWaitingSignal(
  tx: Sql,
  ctx: StepContext,
  stage: StageRow,
  attempt: number,
): Promise<void> {
  const [waiting] = await tx.query<{ signal_id: string; body_sha256: string }>(
    `SELECT signal_id, body_sha256 FROM hub_signals
     WHERE run_id = $1 AND name = $2 AND consumed_stage IS NULL ORDER BY received_at, signal_id LIMIT 1`,
    [stage.run_id, stage.signal],
  );
  if (!waiting) return;
  await consumeSignal(tx, ctx, { ...stage, attempt }, waiting);
}

/** Mark a signal consumed by a parked stage and finish the stage with it as evidence. */
export async function consumeSignal(
  tx: Sql,
  ctx: StepContext,
  stage: StageRow,
  signal: { signal_id: string; body_sha256: string },
): Promise<void> {
  await tx.run(
    'UPDATE hub_signals SET consumed_stage = $3, consumed_attempt = $4 WHERE run_id = $1 AND signal_id = $2',
    [stage.run_id, signal.signal_id, stage.id, stage.attempt],
  );
  await completeStage(tx, ctx, stage, {
    signal: stage.signal,
    signal_id: signal.signal_id,
    body_sha256: signal.body_sha256,
  });
}

/** Finish a stage (its timers go), record the evidence, and start the next. */
export async function completeStage(
  tx: Sql,
  ctx: StepContext,
  stage: StageRow,
  evidence: Record<string, unknown>,
): Promise<void> {
  await tx.run(
    `UPDATE hub_run_stages SET state = 'done', ended_at = $3 WHERE run_id = $1 AND position = $2`,
    [stage.run_id, stage.position, ctx.now],
  );
  await tx.run('DELETE FROM hub_timers WHERE run_id = $1 AND stage_id = $2', [stage.run_id, stage.id]);
  await appendRunEvent(tx, ctx.key, stage.run_id, ctx.now, 'stage_done', {
    stage: stage.id,
    kind: stage.kind,
    attempt: stage.attempt,
    evidence,
  });
  await activateStage(tx, ctx, stage.run_id, stage.position + 1, 1);
}

/**
 * A person rejected a parked approval stage: the stage ends (its timers go), and the run ends as failed
 * with `ended_reason` `rejected`, which every view shows as the run's status `rejected`.
 */
export async function rejectStage(tx: Sql, ctx: StepContext, stage: StageRow, by: string): Promise<void> {
  await tx.run(
    `UPDATE hub_run_stages SET state = 'done', ended_at = $3 WHERE run_id = $1 AND position = $2`,
    [stage.run_id, stage.position, ctx.now],
  );
  await tx.run('DELETE FROM hub_timers WHERE run_id = $1 AND stage_id = $2', [stage.run_id, stage.id]);
  await tx.run(
    `UPDATE hub_runs SET status = 'failed', ended_reason = 'rejected', updated_at = $2 WHERE id = $1`,
    [stage.run_id, ctx.now],
  );
  await appendRunEvent(tx, ctx.key, stage.run_id, ctx.now, 'run_failed', {
    reason: `stage ${stage.id} rejected by ${by}`,
  });
}

export interface QuorumEvidence {
  agent_id: string;
  request_message_id: string;
  message_id: string;
  request_hash: string;
  reply_hash: string;
}

/**
 * The replies that count for a stage's current attempt, computed by the database: replies to requests
 * the hub itself routed for this run, stage and attempt, each from the agent the request went to, that
 * agent among the stage's frozen eligible set (one request per agent and attempt, one reply per request).
 */
export async function countedReplies(tx: Sql, stage: StageRow): Promise<QuorumEvidence[]> {
  return tx.query<QuorumEvidence>(
    `SELECT r.agent_id, r.request_message_id, r.message_id, q.request_hash, r.reply_hash
     FROM hub_stage_replies r
     JOIN hub_stage_requests q
       ON q.message_id = r.request_message_id AND q.run_id = r.run_id AND q.stage_id = r.stage_id
      AND q.attempt = r.attempt AND q.agent_id = r.agent_id
     JOIN hub_stage_eligible e ON e.run_id = r.run_id AND e.stage_id = r.stage_id AND e.agent_id = r.agent_id
     JOIN hub_run_stages s ON s.run_id = r.run_id AND s.id = r.stage_id AND s.attempt = r.attempt
     WHERE r.run_id = $1 AND r.stage_id = $2 AND s.state = 'active'
     ORDER BY r.agent_id`,
    [stage.run_id, stage.id],
  );
}

/** The number of distinct eligible producers for a stage's current attempt, counted in SQL. */
export async function producerCount(tx: Sql, stage: StageRow): Promise<number> {
  const [row] = await tx.query<{ n: number }>(
    `SELECT COUNT(DISTINCT r.agent_id) AS n
     FROM hub_stage_replies r
     JOIN hub_stage_requests q
       ON q.message_id = r.request_message_id AND q.run_id = r.run_id AND q.stage_id = r.stage_id
      AND q.attempt = r.attempt AND q.agent_id = r.agent_id
     JOIN hub_stage_eligible e ON e.run_id = r.run_id AND e.stage_id = r.stage_id AND e.agent_id = r.agent_id
     JOIN hub_run_stages s ON s.run_id = r.run_id AND s.id = r.stage_id AND s.attempt = r.attempt
     WHERE r.run_id = $1 AND r.stage_id = $2 AND s.state = 'active'`,
    [stage.run_id, stage.id],
  );
  return Number(row?.n ?? 0);
}

/** Finish an asking stage if enough distinct eligible agents have answered its current attempt. */
export async function advanceIfSatisfied(tx: Sql, ctx: StepContext, stage: StageRow): Promise<boolean> {
  if (stage.state !== 'active' || stage.min_producers === null) return false;
  const count = await producerCount(tx, stage);
  if (count < stage.min_producers) return false;
  const replies = await countedReplies(tx, stage);
  await completeStage(tx, ctx, stage, { min_producers: stage.min_producers, producers: count, replies });
  return true;
}
