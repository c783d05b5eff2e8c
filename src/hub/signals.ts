/**
 * Signals resume a parked `await_signal` stage. Each run has its own signal key, HMAC-SHA256(the
 * workflow's signal secret, run id), handed out once as `signal_secret` (`whsec_<base64>`) when the run
 * starts; a signal is a Standard Webhooks message signed with it, so a reporter given one run's key can
 * signal that run and no other, and cannot start runs (the start secret is another variable). A signal
 * that arrives before its stage parks is kept and consumed when the stage parks.
 */
import { createHmac } from 'node:crypto';
import type { Sql } from '../store/engine.js';
import { appendRunEvent } from './runs-chain.js';
import { consumeSignal, currentStage, lockRun, type StepContext } from './runs-stages.js';
import { standardKey, standardSecret } from './webhook-verify.js';

/** The bytes of the workflow's signal secret: a `whsec_<base64>` value decoded, any other value as text. */
function secretBytes(secret: string): Buffer {
  return standardKey(secret) ?? Buffer.from(secret, 'utf8');
}

/** A run's signal key: HMAC-SHA256(signal secret, run id). */
export function runSignalKey(signalSecret: string, runId: string): Buffer {
  return createHmac('sha256', secretBytes(signalSecret)).update(runId).digest();
}

/** A run's signal key as its reporter is given it (`whsec_<base64>`). */
export function runSignalSecret(signalSecret: string, runId: string): string {
  return standardSecret(runSignalKey(signalSecret, runId));
}

export interface SignalInput {
  runId: string;
  /** The signal's name, as a stage's `signal` names it. */
  name: string;
  /** The message's `webhook-id`: a repeat of it is answered with the first receipt. */
  signalId: string;
  bodySha256: string;
}

export interface SignalReceipt {
  run_id: string;
  signal: string;
  signal_id: string;
  body_sha256: string;
  /** Whether a parked stage took it at once (false: kept until its stage parks). */
  consumed: boolean;
  repeated: boolean;
}

export type SignalOutcome =
  | { ok: true; receipt: SignalReceipt }
  | { ok: false; status: 404 | 409; code: string; error: string };

/** Record a verified signal and resume the run if its stage is parked on it; inside the caller's transaction. */
export async function deliverSignal(tx: Sql, ctx: StepContext, input: SignalInput): Promise<SignalOutcome> {
  const run = await lockRun(tx, input.runId);
  if (!run) return { ok: false, status: 404, code: 'no_such_run', error: `no run ${input.runId}` };
  const [seen] = await tx.query<{ name: string; body_sha256: string; consumed_stage: string | null }>(
    'SELECT name, body_sha256, consumed_stage FROM hub_signals WHERE run_id = $1 AND signal_id = $2',
    [input.runId, input.signalId],
  );
  if (seen) {
    if (seen.body_sha256 !== input.bodySha256 || seen.name !== input.name)
      return {
        ok: false,
        status: 409,
        code: 'signal_id_conflict',
        error: `signal id ${input.signalId} was already used for another message`,
      };
    return { ok: true, receipt: receipt(input, seen.consumed_stage !== null, true) };
  }
  if (run.status !== 'running')
    return { ok: false, status: 409, code: 'run_not_running', error: `run ${input.runId} is ${run.status}` };
  const [awaited] = await tx.query<{ id: string }>(
    `SELECT id FROM hub_run_stages WHERE run_id = $1 AND kind = 'await_signal' AND signal = $2`,
    [input.runId, input.name],
  );
  if (!awaited)
    return {
      ok: false,
      status: 404,
      code: 'no_such_signal',
      error: `no stage of run ${input.runId} awaits a signal named ${JSON.stringify(input.name)}`,
    };
  await tx.run(
    'INSERT INTO hub_signals (run_id, signal_id, name, body_sha256, received_at) VALUES ($1, $2, $3, $4, $5)',
    [input.runId, input.signalId, input.name, input.bodySha256, ctx.now],
  );
  await appendRunEvent(tx, ctx.key, input.runId, ctx.now, 'signal_received', {
    signal: input.name,
    signal_id: input.signalId,
    body_sha256: input.bodySha256,
  });
  const stage = await currentStage(tx, run);
  const parkedOnIt =
    stage?.kind === 'await_signal' && stage.state === 'parked' && stage.signal === input.name;
  if (stage && parkedOnIt)
    await consumeSignal(tx, ctx, stage, { signal_id: input.signalId, body_sha256: input.bodySha256 });
  return { ok: true, receipt: receipt(input, parkedOnIt, false) };
}

function receipt(input: SignalInput, consumed: boolean, repeated: boolean): SignalReceipt {
  return {
    run_id: input.runId,
    signal: input.name,
    signal_id: input.signalId,
    body_sha256: input.bodySha256,
    consumed,
    repeated,
  };
}
