/**
 * Webhooks and signals against the hub's routes, mounted on a bare Hono app served on 127.0.0.1, on
 * both engines: forged, replayed, late and early deliveries and signals, a signal for another run, the
 * start secret used as a signal key, an untrusted workflow, and the body kept only as its hash.
 */
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { trustFile } from '../../src/config/trust.js';
import { verifyRunChain } from '../../src/hub/runs-chain.js';
import { readRun } from '../../src/hub/runs-read.js';
import { type AgentDirectory, RunsStore } from '../../src/hub/runs-store.js';
import { runSignalSecret } from '../../src/hub/signals.js';
import { mountWorkflowRoutes, type Refusal } from '../../src/hub/webhook-routes.js';
import { signStandard, standardKey } from '../../src/hub/webhook-verify.js';
import { loadWorkflow } from '../../src/hub/workflow-file.js';
import type { Store } from '../../src/store/engine.js';
import { storeEngines } from '../helpers/engines.js';
import { tempDir, writeFiles } from '../helpers/tmp.js';

const engines = await storeEngines();

const STAGES = `stages:
  - {id: review, kind: quorum, eligible: [rev-a, rev-b], min_producers: 2, prompt: "Review PR {{pull_request.number}}"}
  - {id: ci, kind: await_signal, signal: ci-result, timeout: 2h}
`;
const GITHUB_SECRET = 'gh-shared-secret';
const JIRA_SECRET = 'jira-shared-secret';
const NEW_KEY = randomBytes(32);
const OLD_KEY = randomBytes(32);
const SIGNALS = `whsec_${randomBytes(32).toString('base64')}`;
const ENV = {
  KEEL_WH_GITHUB: GITHUB_SECRET,
  KEEL_WH_JIRA: JIRA_SECRET,
  KEEL_WH_CI: `whsec_${NEW_KEY.toString('base64')}`,
  KEEL_WH_SIGNALS: SIGNALS,
};

const hexSig = (secret: string, body: string) =>
  `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
const seconds = (offsetS = 0) => Math.floor(Date.now() / 1000) + offsetS;

function project(): { root: string; trust: string } {
  const root = tempDir('keel-hub-project-');
  const trust = `${tempDir('keel-hub-home-')}/trust.json`;
  const trigger = (source: string, event: string, env: string) =>
    `version: 1\ntrigger: {source: ${source}, event: ${event}, secret_env: ${env}, signal_secret_env: KEEL_WH_SIGNALS}\n${STAGES}`;
  writeFiles(root, {
    '.keel/workflows/pr.yaml': trigger('github', 'pull_request', 'KEEL_WH_GITHUB'),
    '.keel/workflows/issues.yaml': trigger('jira', 'jira:issue_created', 'KEEL_WH_JIRA'),
    '.keel/workflows/ci.yaml': trigger('generic', 'build.finished', 'KEEL_WH_CI'),
    '.keel/workflows/pr2.yaml': trigger('github', 'pull_request', 'KEEL_WH_GITHUB'),
    '.keel/workflows/untrusted.yaml': trigger('github', 'pull_request', 'KEEL_WH_GITHUB'),
    '.keel/workflows/nosignals.yaml': trigger('github', 'pull_request', 'KEEL_WH_GITHUB').replace(
      'KEEL_WH_SIGNALS',
      'KEEL_WH_UNSET',
    ),
  });
  for (const name of ['pr', 'pr2', 'issues', 'ci', 'nosignals'])
    trustFile(`${root}/.keel/workflows/${name}.yaml`, trust);
  return { root, trust };
}

const agents: AgentDirectory = {
  resolve: async (_tx, names) => new Map(names.map((n) => [n, `id-${n}`] as [string, string])),
};

describe.each(engines)('hub webhooks and signals on $name', (engine) => {
  let store: Store;
  let port: number;
  let close: () => Promise<void>;
  const key = randomBytes(32);
  const refusals: Refusal[] = [];
  beforeAll(async () => {
    if (engine.skip) return;
    store = await engine.open();
    const { root, trust } = project();
    const app = new Hono();
    mountWorkflowRoutes(app, {
      runs: new RunsStore(store, { key, agents }),
      workflow: (name) => loadWorkflow(root, name, trust),
      env: ENV,
      onRefusal: (r) => refusals.push(r),
    });
    const server = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 });
    await new Promise<void>((resolve) => server.once('listening', () => resolve()));
    port = (server.address() as AddressInfo).port;
    close = () => new Promise((resolve) => server.close(() => resolve()));
  });
  afterAll(async () => {
    if (!engine.skip) await close();
  });
  const test = it.skipIf(engine.skip !== '');

  async function post(path: string, body: string, headers: Record<string, string>) {
    const res = await fetch(`http://127.0.0.1:${port}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body,
    });
    return { status: res.status, json: (await res.json()) as Record<string, unknown> };
  }

  const github = (body: string, delivery: string, sig = hexSig(GITHUB_SECRET, body)) => ({
    'x-github-event': 'pull_request',
    'x-github-delivery': delivery,
    'x-hub-signature-256': sig,
  });

  const standard = (k: Buffer, body: string, id: string, at = seconds()) => ({
    'webhook-id': id,
    'webhook-timestamp': String(at),
    'webhook-signature': signStandard(k, id, at, body),
  });

  async function runCount(): Promise<number> {
    const [row] = await store.query<{ n: number }>('SELECT COUNT(*) AS n FROM hub_runs');
    return Number(row?.n);
  }

  test('GitHub: forged and unsigned deliveries start nothing; a replay gets the first receipt; another body under its id is 409', async () => {
    const marker = `secret-marker-${randomUUID()}`;
    const body = JSON.stringify({ action: 'opened', pull_request: { number: 7, body: marker } });
    const delivery = randomUUID();
    const before = await runCount();
    expect(
      await post('/v1/webhooks/pr', body, github(body, delivery, hexSig('wrong-secret', body))),
    ).toMatchObject({
      status: 401,
      json: { code: 'bad_signature' },
    });
    const { 'x-hub-signature-256': _, ...unsigned } = github(body, delivery);
    expect((await post('/v1/webhooks/pr', body, unsigned)).json.code).toBe('missing_signature');
    // a valid signature over another body: the body is what is signed
    const tampered = body.replace('"number":7', '"number":8');
    expect((await post('/v1/webhooks/pr', tampered, github(body, delivery))).status).toBe(401);
    expect(await runCount()).toBe(before);

    const first = await post('/v1/webhooks/pr', body, github(body, delivery));
    expect(first.status).toBe(202);
    expect(first.json).toMatchObject({
      workflow: 'pr',
      delivery_id: delivery,
      stage: 'review',
      repeated: false,
    });
    const runId = String(first.json.run_id);
    expect(first.json.signal_secret).toBe(runSignalSecret(SIGNALS, runId));
    // committed before the answer: the run and its first stage are there now
    const view = await readRun(store, runId);
    expect(view?.stages[0]).toMatchObject({ id: 'review', state: 'active', prompt: 'Review PR 7' });
    // GitHub signs no timestamp: the replay is caught by the delivery id alone
    const replay = await post('/v1/webhooks/pr', body, github(body, delivery));
    const { signal_secret: shownOnce, ...receipt } = first.json;
    expect(shownOnce).toMatch(/^whsec_/);
    // ...and whoever captured the delivery does not get the run's signal key by replaying it
    expect(replay).toEqual({ status: 200, json: { ...receipt, repeated: true } });
    // nor starts another workflow signed with the same secret (GitHub signs no URL)
    expect(await post('/v1/webhooks/pr2', body, github(body, delivery))).toMatchObject({
      status: 409,
      json: { code: 'delivery_id_conflict' },
    });
    const other = JSON.stringify({ action: 'opened', pull_request: { number: 9 } });
    expect(await post('/v1/webhooks/pr', other, github(other, delivery))).toMatchObject({
      status: 409,
      json: { code: 'delivery_id_conflict' },
    });
    expect(await runCount()).toBe(before + 1);
    // an event the workflow does not take is answered and ignored
    const ping = JSON.stringify({ zen: 'hi' });
    const pinged = await post('/v1/webhooks/pr', ping, {
      ...github(ping, randomUUID()),
      'x-github-event': 'ping',
    });
    expect(pinged).toMatchObject({ status: 200, json: { ignored: true } });
    // the body is never stored: no column of any hub table holds the marker
    for (const table of [
      'hub_runs',
      'hub_run_stages',
      'hub_run_events',
      'hub_deliveries',
      'hub_stage_requests',
    ]) {
      const rows = await store.query(`SELECT * FROM ${table}`);
      expect(JSON.stringify(rows)).not.toContain(marker);
    }
    expect((await verifyRunChain(store, key, runId))?.ok).toBe(true);
  });

  test('Jira: X-Hub-Signature with the webhook identifier; forged and unidentified deliveries refused', async () => {
    const body = JSON.stringify({ webhookEvent: 'jira:issue_created', issue: { key: 'KEEL-1' } });
    const id = String(Date.now());
    const headers = { 'x-hub-signature': hexSig(JIRA_SECRET, body), 'x-atlassian-webhook-identifier': id };
    expect(
      (
        await post('/v1/webhooks/issues', body, {
          ...headers,
          'x-hub-signature': hexSig(GITHUB_SECRET, body),
        })
      ).status,
    ).toBe(401);
    expect(
      (await post('/v1/webhooks/issues', body, { 'x-hub-signature': headers['x-hub-signature'] })).json.code,
    ).toBe('missing_delivery_id');
    // a GitHub-style header does not stand in for Jira's
    expect(
      (
        await post('/v1/webhooks/issues', body, {
          'x-hub-signature-256': headers['x-hub-signature'],
          'x-atlassian-webhook-identifier': id,
        })
      ).json.code,
    ).toBe('missing_signature');
    const started = await post('/v1/webhooks/issues', body, headers);
    expect(started.status).toBe(202);
    const { signal_secret: _, ...receipt } = started.json;
    expect((await post('/v1/webhooks/issues', body, headers)).json).toEqual({ ...receipt, repeated: true });
  });

  test('Standard Webhooks: late, early, forged and replayed deliveries; a rotated key signs beside the old one', async () => {
    const body = JSON.stringify({ type: 'build.finished', data: { ok: true } });
    const before = await runCount();
    const late = await post('/v1/webhooks/ci', body, standard(NEW_KEY, body, 'msg-late', seconds(-6 * 60)));
    expect(late).toMatchObject({ status: 401, json: { code: 'stale_timestamp' } });
    const early = await post('/v1/webhooks/ci', body, standard(NEW_KEY, body, 'msg-early', seconds(6 * 60)));
    expect(early).toMatchObject({ status: 401, json: { code: 'future_timestamp' } });
    expect((await post('/v1/webhooks/ci', body, standard(OLD_KEY, body, 'msg-old'))).json.code).toBe(
      'bad_signature',
    );
    // a signature moved to another timestamp or id no longer matches
    const signed = standard(NEW_KEY, body, 'msg-1');
    expect(
      (await post('/v1/webhooks/ci', body, { ...signed, 'webhook-timestamp': String(seconds(1)) })).status,
    ).toBe(401);
    expect((await post('/v1/webhooks/ci', body, { ...signed, 'webhook-id': 'msg-2' })).status).toBe(401);
    expect(await runCount()).toBe(before);

    const at = seconds();
    const rotated = {
      'webhook-id': 'msg-1',
      'webhook-timestamp': String(at),
      'webhook-signature': `${signStandard(OLD_KEY, 'msg-1', at, body)} ${signStandard(NEW_KEY, 'msg-1', at, body)}`,
    };
    const first = await post('/v1/webhooks/ci', body, rotated);
    expect(first.status).toBe(202);
    // inside the window a replay is stopped by the id; outside it, by the timestamp
    const { signal_secret: _, ...receipt } = first.json;
    expect((await post('/v1/webhooks/ci', body, rotated)).json).toEqual({ ...receipt, repeated: true });
    expect(await runCount()).toBe(before + 1);
  });

  test('signals: only the run key of that very run, inside the window, once; kept until the stage parks', async () => {
    const start = async (n: number) => {
      const body = JSON.stringify({ action: 'opened', pull_request: { number: n } });
      const res = await post('/v1/webhooks/pr', body, github(body, randomUUID()));
      return { runId: String(res.json.run_id), key: standardKey(String(res.json.signal_secret)) as Buffer };
    };
    const a = await start(100);
    const b = await start(101);
    const body = JSON.stringify({ status: 'passed' });
    const path = (run: string) => `/v1/runs/${run}/signals/ci-result`;
    // run A's reporter cannot signal run B; the start secret and the signal secret itself are not run keys
    expect((await post(path(b.runId), body, standard(a.key, body, 'sig-1'))).json.code).toBe('bad_signature');
    expect(
      (await post(path(a.runId), body, standard(standardKey(ENV.KEEL_WH_CI) as Buffer, body, 'sig-1')))
        .status,
    ).toBe(401);
    expect(
      (await post(path(a.runId), body, standard(standardKey(SIGNALS) as Buffer, body, 'sig-1'))).status,
    ).toBe(401);
    expect(
      (await post(path(a.runId), body, standard(a.key, body, 'sig-late', seconds(-301 - 60)))).json.code,
    ).toBe('stale_timestamp');
    expect(
      (await post(path(a.runId), body, standard(a.key, body, 'sig-early', seconds(301 + 60)))).json.code,
    ).toBe('future_timestamp');
    expect(
      (await post(`/v1/runs/${randomUUID()}/signals/ci-result`, body, standard(a.key, body, 'sig-1'))).status,
    ).toBe(404);
    expect(
      (await post(`/v1/runs/${a.runId}/signals/deploy`, body, standard(a.key, body, 'sig-1'))).json.code,
    ).toBe('no_such_signal');
    const signed = standard(a.key, body, 'sig-1');
    const first = await post(path(a.runId), body, signed);
    // the quorum stage is still open: the signal is kept, not lost
    expect(first).toMatchObject({ status: 202, json: { consumed: false, repeated: false } });
    expect((await post(path(a.runId), body, signed)).json).toEqual({ ...first.json, repeated: true });
    const other = JSON.stringify({ status: 'failed' });
    expect((await post(path(a.runId), other, standard(a.key, other, 'sig-1'))).status).toBe(409);
    const stages = await readRun(store, b.runId);
    expect(stages?.events.map((e) => e.type)).not.toContain('signal_received');
  });

  test('an untrusted or unknown workflow is refused, and a body over the limit', async () => {
    const body = JSON.stringify({ action: 'opened', pull_request: { number: 1 } });
    expect(await post('/v1/webhooks/untrusted', body, github(body, randomUUID()))).toMatchObject({
      status: 403,
      json: { code: 'untrusted_workflow' },
    });
    expect((await post('/v1/webhooks/nope', body, github(body, randomUUID()))).status).toBe(404);
    // a run that would park for a signal nobody can sign does not start
    expect(await post('/v1/webhooks/nosignals', body, github(body, randomUUID()))).toMatchObject({
      status: 503,
      json: { code: 'secret_missing' },
    });
    // each refusal is told to the hub for its audit chain, with what was named and why, never the body
    expect(refusals.slice(-3)).toEqual([
      { type: 'hub_webhook_refused', target: 'untrusted', status: 403, code: 'untrusted_workflow' },
      { type: 'hub_webhook_refused', target: 'nope', status: 404, code: 'no_such_workflow' },
      { type: 'hub_webhook_refused', target: 'nosignals', status: 503, code: 'secret_missing' },
    ]);
    expect(refusals.some((r) => r.type === 'hub_signal_refused' && r.code === 'bad_signature')).toBe(true);
    const big = JSON.stringify({ pad: 'x'.repeat(1024 * 1024) });
    expect((await post('/v1/webhooks/pr', big, github(big, randomUUID()))).status).toBe(413);
  });
});
