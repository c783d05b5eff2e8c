/**
 * Workflow runs on the team store (SQLite or PostgreSQL, the same SQL): a verified webhook starts a run,
 * replies the hub routed move its asking stages, signals and approvals its parked ones. `startRun`
 * commits the run and its first stage before it returns the receipt the HTTP answer carries; a delivery
 * id seen before returns the first receipt, or a conflict when the body differs. A quorum's eligible
 * agents are resolved when the run starts and frozen with it.
 */
import { randomUUID } from 'node:crypto';
import type { Sql, Store } from '../store/engine.js';
import { appendRunEvent, emptyHead, sealRunHead } from './runs-chain.js';
import {
  activateStage,
  advanceIfSatisfied,
  completeStage,
  currentStage,
  lockRun,
  producerCount,
  type RunStatus,
  rejectStage,
  type StageRow,
  type StepContext,
} from './runs-stages.js';
import { deliverSignal, type SignalInput, type SignalOutcome } from './signals.js';
import { fireDueTimers } from './timers.js';
import { durationMs, type LoadedWorkflow } from './workflow-file.js';
import { renderPrompt } from './workflow-prompt.js';

/** Who the agents a workflow names are: the hub's registry (its agents table), read inside the transaction. */
export interface AgentDirectory {
  /** The agent id (its key's id) of each name registered now; names not registered are left out. */
  resolve(tx: Sql, names: readonly string[]): Promise<Map<string, string>>;
  /** The hub project the runs belong to (its id; undefined: no such project); absent: runs of no project. */
  projectId?(tx: Sql): Promise<string | undefined>;
}

/** A start, reply or action the hub refuses; `status` is the HTTP answer. */
export class RunRefused extends Error {
  override name = 'RunRefused';
  constructor(
    readonly status: 404 | 409 | 422,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export interface StartInput {
  workflow: LoadedWorkflow;
  deliveryId: string;
  bodySha256: string;
  /** The event the delivery carries. */
  event: string;
  /** The parsed payload, for the prompts' `{{fields}}` (not kept). */
  payload: unknown;
}

/** What a started run's webhook answer says (the signal secret is added by whoever holds the secret). */
export interface StartReceipt {
  run_id: string;
  workflow: string;
  delivery_id: string;
  body_sha256: string;
  created_at: string;
  /** The first stage. */
  stage: string;
  /** True when this delivery id was seen before and this is the first answer again. */
  repeated: boolean;
}

export interface ReplyInput {
  /** The hub's request message this replies to (its `reply_to`). */
  requestMessageId: string;
  /** The authenticated agent that sent the reply. */
  agentId: string;
  /** The reply's own message id and the sha256 of its body. */
  messageId: string;
  replyHash: string;
}

export type ReplyOutcome =
  | { counted: true; producers: number; stageDone: boolean }
  | {
      counted: false;
      reason: 'not_a_run_request' | 'not_the_recipient' | 'already_replied' | 'stage_not_waiting';
    };

/** A run's status as people read it: a failed run a person rejected is `rejected`. */
export function shownStatus(run: {
  status: RunStatus;
  ended_reason?: string | null;
}): RunStatus | 'rejected' {
  return run.status === 'failed' && run.ended_reason === 'rejected' ? 'rejected' : run.status;
}

/** A person's decision on a parked approval stage (the hub says who: the credential, never a claimed name). */
export interface DecisionInput {
  runId: string;
  stageId: string;
  decision: 'approve' | 'reject';
  /** Who decided, as the caller authenticated (`project token ID`, `admin token`, `keel serve (user NAME)`). */
  by: string;
  reason?: string;
  /** The project the decider speaks for; a run of another project is refused as unknown. */
  projectId?: string;
}

export interface DecisionReceipt {
  run_id: string;
  stage: string;
  attempt: number;
  decision: 'approve' | 'reject';
  by: string;
  reason?: string;
  /** The run's status after the decision (`rejected` once rejected). */
  status: RunStatus | 'rejected';
}

export interface RunsOptions {
  /** The audit key (store/audit-key.ts) that seals every run's events. */
  key: Buffer;
  agents: AgentDirectory;
  now?: () => number;
}

/** Workflow runs over a team store. */
export class RunsStore {
  private readonly now: () => number;

  constructor(
    readonly store: Store,
    private readonly opts: RunsOptions,
  ) {
    this.now = opts.now ?? Date.now;
  }

  private ctx(): StepContext {
    return { key: this.opts.key, now: this.now() };
  }

  /**
   * Start a run for a verified delivery: resolve and freeze every stage's agents (a quorum they cannot
   * satisfy refuses the start), record the delivery, the run, its stages and its first stage's requests,
   * all in one transaction, committed before this returns.
   */
  async startRun(input: StartInput): Promise<StartReceipt> {
    const ctx = this.ctx();
    const runId = randomUUID();
    const { workflow: loaded } = input;
    const receipt = await this.store.transaction(async (tx) => {
      const secretEnv = loaded.workflow.trigger.secret_env;
      const fresh = await tx.run(
        `INSERT INTO hub_deliveries (secret_env, delivery_id, workflow, body_sha256, run_id, received_at)
         VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (secret_env, delivery_id) DO NOTHING`,
        [secretEnv, input.deliveryId, loaded.name, input.bodySha256, runId, ctx.now],
      );
      if (fresh === 0) return repeatedReceipt(tx, secretEnv, loaded.name, input);
      const projectId = this.opts.agents.projectId ? await this.opts.agents.projectId(tx) : null;
      if (projectId === undefined)
        throw new RunRefused(
          422,
          'no_such_project',
          `workflow ${loaded.name}: the hub's workflow project has no token yet (keel hub token create --project NAME)`,
        );
      const stages = loaded.workflow.stages;
      const names = [...new Set(stages.flatMap((s) => s.eligible ?? (s.agent ? [s.agent] : [])))];
      const ids = names.length ? await this.opts.agents.resolve(tx, names) : new Map<string, string>();
      for (const stage of stages) {
        const wanted = stage.eligible ?? (stage.agent ? [stage.agent] : []);
        if (!wanted.length) continue;
        const known = wanted.filter((n) => ids.has(n));
        const need = stage.kind === 'quorum' ? (stage.min_producers ?? 1) : 1;
        if (known.length < need)
          throw new RunRefused(
            422,
            'quorum_unsatisfiable',
            `workflow ${loaded.name}, stage ${stage.id}: ${known.length} of its agents are registered (${wanted.filter((n) => !ids.has(n)).join(', ')} not), fewer than the ${need} it needs`,
          );
      }
      const head = emptyHead(this.opts.key, runId);
      await tx.run(
        `INSERT INTO hub_runs (id, workflow, workflow_sha256, source, event, delivery_id, body_sha256,
           signal_secret_env, status, stage_index, created_at, updated_at, event_count, head_hash, head_mac, project_id)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'running', 0, $9, $9, 0, $10, $11, $12)`,
        [
          runId,
          loaded.name,
          loaded.sha256,
          loaded.workflow.trigger.source,
          input.event,
          input.deliveryId,
          input.bodySha256,
          loaded.workflow.trigger.signal_secret_env ?? null,
          ctx.now,
          head.hash,
          head.mac,
          projectId,
        ],
      );
      const frozen: Record<string, string[]> = {};
      for (const [position, stage] of stages.entries()) {
        await tx.run(
          `INSERT INTO hub_run_stages (run_id, position, id, kind, state, attempt, min_producers, prompt, signal, timeout_ms, mode)
           VALUES ($1, $2, $3, $4, 'pending', 0, $5, $6, $7, $8, $9)`,
          [
            runId,
            position,
            stage.id,
            stage.kind,
            stage.kind === 'quorum' ? (stage.min_producers ?? null) : stage.kind === 'agent' ? 1 : null,
            stage.prompt === undefined ? null : renderPrompt(stage.prompt, input.payload),
            stage.signal ?? null,
            stage.timeout === undefined ? null : (durationMs(stage.timeout) ?? null),
            stage.kind === 'agent' ? (stage.mode ?? 'ask') : stage.kind === 'quorum' ? 'ask' : null,
          ],
        );
        const wanted = (stage.eligible ?? (stage.agent ? [stage.agent] : [])).filter((n) => ids.has(n));
        for (const name of wanted)
          await tx.run(
            'INSERT INTO hub_stage_eligible (run_id, stage_id, agent_id, agent_name) VALUES ($1, $2, $3, $4)',
            [runId, stage.id, ids.get(name), name],
          );
        if (wanted.length) frozen[stage.id] = wanted.map((n) => `${n}=${ids.get(n)}`);
      }
      await appendRunEvent(tx, this.opts.key, runId, ctx.now, 'run_started', {
        workflow: loaded.name,
        workflow_sha256: loaded.sha256,
        source: loaded.workflow.trigger.source,
        event: input.event,
        delivery_id: input.deliveryId,
        body_sha256: input.bodySha256,
        ...(projectId ? { project_id: projectId } : {}),
        eligible: frozen,
      });
      await activateStage(tx, ctx, runId, 0, 1);
      return {
        run_id: runId,
        workflow: loaded.name,
        delivery_id: input.deliveryId,
        body_sha256: input.bodySha256,
        created_at: new Date(ctx.now).toISOString(),
        stage: stages[0]?.id ?? '',
        repeated: false,
      };
    });
    return receipt;
  }

  /**
   * A reply the hub routed to one of its stage requests (the hub's reply path calls this with the
   * authenticated sender): counted only from the agent the request went to, once, and the stage advances
   * in the same transaction when enough distinct eligible agents have answered its current attempt.
   */
  async recordReply(input: ReplyInput): Promise<ReplyOutcome> {
    return this.store.transaction((tx) => recordReplyIn(tx, this.ctx(), input));
  }

  /** Deliver a verified signal (signals.ts). */
  async signal(input: SignalInput): Promise<SignalOutcome> {
    return this.store.transaction((tx) => deliverSignal(tx, this.ctx(), input));
  }

  /** A person approves a parked approval stage. */
  async approve(runId: string, stageId: string, by: string): Promise<void> {
    await this.decide({ runId, stageId, decision: 'approve', by });
  }

  /**
   * A person's decision on a parked approval stage, sealed as a run event naming who made it: approved,
   * the run goes on to its next stage; rejected, the run ends `rejected` (its status `failed`, its
   * `ended_reason` `rejected`). With `projectId`, a run of another project is as unknown as none.
   */
  async decide(input: DecisionInput): Promise<DecisionReceipt> {
    const ctx = this.ctx();
    return this.store.transaction(async (tx) => {
      const run = await lockRun(tx, input.runId);
      if (!run || (input.projectId !== undefined && run.project_id !== input.projectId))
        throw new RunRefused(404, 'no_such_run', `no run ${input.runId}`);
      // a keel whose audit key is not the one sealing this run (another KEEL_HOME than the hub's?) would
      // break the chain it appends to: it says so instead
      const head = run as unknown as { event_count: number; head_hash: string; head_mac: string };
      const count = Number(head.event_count);
      if (sealRunHead(ctx.key, { run_id: run.id, count, hash: head.head_hash }) !== head.head_mac)
        throw new RunRefused(
          409,
          'foreign_audit_key',
          `run ${run.id} is sealed with another audit key than this keel's (another KEEL_HOME than the hub's?): decide it through the hub, keel hub runs approve`,
        );
      const stage = await currentStage(tx, run);
      if (!stage) throw new RunRefused(409, 'run_not_running', `run ${run.id} is ${shownStatus(run)}`);
      if (stage.id !== input.stageId || stage.kind !== 'approval' || stage.state !== 'parked')
        throw new RunRefused(
          409,
          'stage_not_waiting',
          `run ${input.runId} is not waiting for approval of ${input.stageId} (it is at ${stage.kind} stage ${stage.id}, ${stage.state})`,
        );
      const reason = input.reason?.trim();
      await appendRunEvent(
        tx,
        ctx.key,
        run.id,
        ctx.now,
        input.decision === 'approve' ? 'stage_approved' : 'stage_rejected',
        {
          stage: stage.id,
          attempt: stage.attempt,
          decision: input.decision,
          by: input.by,
          ...(reason ? { reason } : {}),
        },
      );
      if (input.decision === 'approve') await completeStage(tx, ctx, stage, { approved_by: input.by });
      else await rejectStage(tx, ctx, stage, input.by);
      const [after] = await tx.query<{ status: RunStatus; ended_reason: string | null }>(
        'SELECT status, ended_reason FROM hub_runs WHERE id = $1',
        [run.id],
      );
      return {
        run_id: run.id,
        stage: stage.id,
        attempt: stage.attempt,
        decision: input.decision,
        by: input.by,
        ...(reason ? { reason } : {}),
        status: shownStatus(after ?? run),
      };
    });
  }

  /** Start the stage a run failed at again, as its next attempt (replies to earlier attempts stop counting). */
  async retryStage(runId: string): Promise<number> {
    const ctx = this.ctx();
    return this.store.transaction(async (tx) => {
      const run = await lockRun(tx, runId);
      if (!run) throw new RunRefused(404, 'no_such_run', `no run ${runId}`);
      const [stage] = await tx.query<StageRow>(
        `SELECT * FROM hub_run_stages WHERE run_id = $1 AND position = $2 AND state = 'timed_out'`,
        [runId, run.stage_index],
      );
      if (run.status !== 'failed' || !stage)
        throw new RunRefused(409, 'not_retryable', `run ${runId} has no timed-out stage to retry`);
      const attempt = Number(stage.attempt) + 1;
      await appendRunEvent(tx, ctx.key, runId, ctx.now, 'stage_retried', { stage: stage.id, attempt });
      await activateStage(tx, ctx, runId, run.stage_index, attempt);
      return attempt;
    });
  }

  /** Fire due timers (timers.ts) at this store's clock. */
  fireTimers() {
    return fireDueTimers(this.store, this.opts.key, this.now());
  }
}

/** A reply to a stage request, counted in the caller's transaction (see RunsStore.recordReply). */
export async function recordReplyIn(tx: Sql, ctx: StepContext, input: ReplyInput): Promise<ReplyOutcome> {
  const [request] = await tx.query<{
    run_id: string;
    stage_id: string;
    attempt: number;
    agent_id: string;
    request_hash: string;
  }>(
    'SELECT run_id, stage_id, attempt, agent_id, request_hash FROM hub_stage_requests WHERE message_id = $1',
    [input.requestMessageId],
  );
  if (!request) return { counted: false, reason: 'not_a_run_request' };
  const run = await lockRun(tx, request.run_id);
  if (request.agent_id !== input.agentId) return { counted: false, reason: 'not_the_recipient' };
  const inserted = await tx.run(
    `INSERT INTO hub_stage_replies (request_message_id, message_id, run_id, stage_id, attempt, agent_id, request_hash, reply_hash, received_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (request_message_id) DO NOTHING`,
    [
      input.requestMessageId,
      input.messageId,
      request.run_id,
      request.stage_id,
      request.attempt,
      input.agentId,
      request.request_hash,
      input.replyHash,
      ctx.now,
    ],
  );
  if (inserted === 0) return { counted: false, reason: 'already_replied' };
  await appendRunEvent(tx, ctx.key, request.run_id, ctx.now, 'reply_received', {
    stage: request.stage_id,
    attempt: Number(request.attempt),
    agent_id: input.agentId,
    request_message_id: input.requestMessageId,
    message_id: input.messageId,
    request_hash: request.request_hash,
    reply_hash: input.replyHash,
  });
  const stage = run && (await currentStage(tx, run));
  if (
    !stage ||
    stage.id !== request.stage_id ||
    stage.attempt !== Number(request.attempt) ||
    stage.state !== 'active'
  )
    return { counted: false, reason: 'stage_not_waiting' };
  const producers = await producerCount(tx, stage);
  const stageDone = await advanceIfSatisfied(tx, ctx, stage);
  return { counted: true, producers, stageDone };
}

async function repeatedReceipt(
  tx: Sql,
  secretEnv: string,
  workflow: string,
  input: StartInput,
): Promise<StartReceipt> {
  const [seen] = await tx.query<{ workflow: string; body_sha256: string; run_id: string }>(
    'SELECT workflow, body_sha256, run_id FROM hub_deliveries WHERE secret_env = $1 AND delivery_id = $2',
    [secretEnv, input.deliveryId],
  );
  if (!seen || seen.workflow !== workflow)
    throw new RunRefused(
      409,
      'delivery_id_conflict',
      `delivery ${input.deliveryId} was already received for another workflow signed with ${secretEnv}`,
    );
  if (seen.body_sha256 !== input.bodySha256)
    throw new RunRefused(
      409,
      'delivery_id_conflict',
      `delivery ${input.deliveryId} of workflow ${workflow} was already received with another body`,
    );
  const [run] = await tx.query<{ created_at: number }>('SELECT created_at FROM hub_runs WHERE id = $1', [
    seen.run_id,
  ]);
  const [first] = await tx.query<{ id: string }>(
    'SELECT id FROM hub_run_stages WHERE run_id = $1 AND position = 0',
    [seen.run_id],
  );
  return {
    run_id: seen.run_id,
    workflow,
    delivery_id: input.deliveryId,
    body_sha256: seen.body_sha256,
    created_at: new Date(Number(run?.created_at ?? 0)).toISOString(),
    stage: first?.id ?? '',
    repeated: true,
  };
}
