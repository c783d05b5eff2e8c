/**
 * The hub's workflow routes, mounted on its Hono app: `POST /v1/webhooks/NAME` starts a run of workflow
 * NAME from a signed delivery, `POST /v1/runs/RUN/signals/NAME` resumes a run parked on signal NAME.
 * The raw body is verified before it is parsed; only its sha256 is kept. Every refusal is a JSON error
 * with a code. The answer is sent after the run (or the signal) is committed.
 */
import type { Context, Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { ForeignAuditKey } from './runs-chain.js';
import { RunRefused, type RunsStore } from './runs-store.js';
import { runSignalKey, runSignalSecret } from './signals.js';
import {
  deliveryEvent,
  eventMatches,
  type Headers,
  standardKey,
  type Verified,
  verifyGithub,
  verifyJira,
  verifyStandard,
} from './webhook-verify.js';
import { type LoadedWorkflow, WorkflowError } from './workflow-file.js';

/** The largest webhook or signal body taken. */
export const MAX_BODY = 1024 * 1024;

export interface WorkflowRoutesOptions {
  runs: RunsStore;
  /** Workflow NAME of the project the hub serves, valid and trusted (workflow-file.ts loadWorkflow); throws WorkflowError. */
  workflow: (name: string) => LoadedWorkflow;
  /** Where the secrets the workflows name are read (the hub's environment). */
  env: NodeJS.ProcessEnv;
  now?: () => number;
  /** Told of every refusal (the hub writes it to the audit chain): the route, the workflow or run, the code. */
  onRefusal?: (refusal: Refusal) => void;
  /** Told after a start or a signal committed a run's step (the hub wakes the streams of its agents). */
  onRunMoved?: (runId: string) => void;
}

/** A refused webhook or signal, for the audit chain: never the body, nor a header's value. */
export interface Refusal {
  type: 'hub_webhook_refused' | 'hub_signal_refused';
  /** The workflow name (webhooks) or run id (signals) the request named. */
  target: string;
  status: number;
  code: string;
}

type Status = 400 | 401 | 403 | 404 | 409 | 413 | 422 | 503;

function fail(c: Context, status: Status, code: string, error: string) {
  return c.json({ code, error }, status);
}

/** The status of each signature refusal (the OpenAPI document lists them too). */
export const REFUSAL_STATUS: Record<Exclude<Verified, { ok: true }>['code'], 400 | 401> = {
  missing_signature: 401,
  bad_signature: 401,
  stale_timestamp: 401,
  future_timestamp: 401,
  bad_timestamp: 400,
  missing_delivery_id: 400,
};

function headersOf(c: Context): Headers {
  return (name) => c.req.header(name);
}

function parseObject(body: Uint8Array): Record<string, unknown> | undefined {
  try {
    const value = JSON.parse(Buffer.from(body).toString('utf8')) as unknown;
    return value !== null && typeof value === 'object' && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/** Mount the webhook and signal routes on `app`. */
export function mountWorkflowRoutes(app: Hono, opts: WorkflowRoutesOptions): void {
  const now = opts.now ?? Date.now;
  const refuser =
    (c: Context, type: Refusal['type'], target: string) => (status: Status, code: string, error: string) => {
      opts.onRefusal?.({ type, target, status, code });
      return fail(c, status, code, error);
    };
  const limit = bodyLimit({
    maxSize: MAX_BODY,
    onError: (c) => fail(c, 413, 'body_too_large', `the body is over ${MAX_BODY} bytes`),
  });

  app.post('/v1/webhooks/:name', limit, async (c) => {
    const refuse = refuser(c, 'hub_webhook_refused', c.req.param('name'));
    let loaded: LoadedWorkflow;
    try {
      loaded = opts.workflow(c.req.param('name'));
    } catch (err) {
      if (!(err instanceof WorkflowError)) throw err;
      const status = err.code === 'no_such_workflow' ? 404 : err.code === 'untrusted_workflow' ? 403 : 422;
      return refuse(status, err.code, err.message);
    }
    const { trigger } = loaded.workflow;
    const secret = opts.env[trigger.secret_env];
    if (!secret)
      return refuse(
        503,
        'secret_missing',
        `the hub has no ${trigger.secret_env} for workflow ${loaded.name}`,
      );
    const signals = trigger.signal_secret_env;
    // a run that parks for a signal no one could sign would only wait for its timeout
    if (signals && !opts.env[signals])
      return refuse(503, 'secret_missing', `the hub has no ${signals} for workflow ${loaded.name}'s signals`);
    const body = new Uint8Array(await c.req.arrayBuffer());
    const headers = headersOf(c);
    let verified: Verified;
    if (trigger.source === 'github') verified = verifyGithub(secret, headers, body);
    else if (trigger.source === 'jira') verified = verifyJira(secret, headers, body);
    else {
      const key = standardKey(secret);
      if (!key)
        return refuse(
          503,
          'secret_missing',
          `${trigger.secret_env} is not a whsec_<base64> secret of 16 bytes or more`,
        );
      verified = verifyStandard(key, headers, body, now());
    }
    if (!verified.ok) return refuse(REFUSAL_STATUS[verified.code], verified.code, verified.error);
    const payload = parseObject(body);
    if (!payload) return refuse(400, 'bad_payload', 'the body is not a JSON object');
    const event = deliveryEvent(trigger.source, headers, payload);
    if (!eventMatches(trigger.event, event))
      return c.json(
        { ignored: true, reason: `event ${JSON.stringify(event)} is not ${JSON.stringify(trigger.event)}` },
        200,
      );
    try {
      const receipt = await opts.runs.startRun({
        workflow: loaded,
        deliveryId: verified.deliveryId,
        bodySha256: verified.bodySha256,
        event,
        payload,
      });
      if (receipt.repeated) return c.json(receipt, 200);
      opts.onRunMoved?.(receipt.run_id);
      // the run's signal key is shown once, to the delivery that started it: a replayed delivery
      // (GitHub's and Jira's carry no timestamp) must not hand it to whoever captured one
      const signalSecret = signals ? opts.env[signals] : undefined;
      const shown = signalSecret ? { signal_secret: runSignalSecret(signalSecret, receipt.run_id) } : {};
      return c.json({ ...receipt, ...shown }, 202);
    } catch (err) {
      if (err instanceof RunRefused) return refuse(err.status, err.code, err.message);
      throw err;
    }
  });

  app.post('/v1/runs/:run/signals/:name', limit, async (c) => {
    const runId = c.req.param('run');
    const refuse = refuser(c, 'hub_signal_refused', runId);
    const [run] = await opts.runs.store.query<{ signal_secret_env: string | null }>(
      'SELECT signal_secret_env FROM hub_runs WHERE id = $1',
      [runId],
    );
    if (!run) return refuse(404, 'no_such_run', `no run ${runId}`);
    const secret = run.signal_secret_env ? opts.env[run.signal_secret_env] : undefined;
    if (!secret) return refuse(404, 'no_signals', `run ${runId} takes no signals (no signal secret)`);
    const body = new Uint8Array(await c.req.arrayBuffer());
    const verified = verifyStandard(runSignalKey(secret, runId), headersOf(c), body, now());
    if (!verified.ok) return refuse(REFUSAL_STATUS[verified.code], verified.code, verified.error);
    let outcome: Awaited<ReturnType<RunsStore['signal']>>;
    try {
      outcome = await opts.runs.signal({
        runId,
        name: c.req.param('name'),
        signalId: verified.deliveryId,
        bodySha256: verified.bodySha256,
      });
    } catch (err) {
      if (err instanceof ForeignAuditKey) return refuse(409, err.code, err.message);
      throw err;
    }
    if (!outcome.ok) return refuse(outcome.status, outcome.code, outcome.error);
    if (!outcome.receipt.repeated) opts.onRunMoved?.(runId);
    return c.json(outcome.receipt, outcome.receipt.repeated ? 200 : 202);
  });
}
