/**
 * Who may decide a workflow's `approval` stage on `keel hub start --workflow-project demo` (the real
 * binary): a person, with the run's project token or the admin token. An agent key of the same project,
 * another project's token, a revoked token, no token, a stage that is not the parked one, and a second
 * decision are all refused, and the stage stays as it was. The decision is a sealed run event naming the
 * credential that made it.
 */
import { describe, expect, it } from 'vitest';
import {
  githubWebhook,
  HUB_ENV,
  projectWithAgents,
  type RunningHub,
  startHub,
  workflowProject,
} from '../e2e/hub-harness.js';
import { tempDir } from '../helpers/tmp.js';

const GATED = `version: 1
trigger: {source: github, event: pull_request, secret_env: KEEL_WH_GITHUB}
stages:
  - {id: sign-off, kind: approval, prompt: "Ship PR {{pull_request.number}}?"}
  - {id: ship, kind: agent, agent: shipper, mode: ask}
`;

async function show(hub: RunningHub, runId: string) {
  const shown = await hub.cli(['runs', 'show', runId, '--json']);
  expect(shown.code, shown.stderr).toBe(0);
  return JSON.parse(shown.stdout);
}

describe('hub approval attacks', () => {
  it('only the run project token or the admin token decides a parked approval stage, once', async () => {
    const home = tempDir('keel-hub-home-');
    const cwd = workflowProject(home, { gate: GATED });
    const hub = await startHub({ home, cwd, env: HUB_ENV, args: ['--workflow-project', 'demo'] });
    const demo = await projectWithAgents(hub, 'demo', 'shipper', 'lead');
    const other = await projectWithAgents(hub, 'other', 'shipper');
    const start = async (n: number) => {
      const res = await githubWebhook(hub, 'gate', { action: 'opened', pull_request: { number: n } });
      expect(res.status).toBe(202);
      return ((await res.json()) as { run_id: string }).run_id;
    };
    // the hub's document names the route and who may call it
    const doc = (await hub.api('GET', '/v1/openapi.json')).body;
    expect(doc.paths['/v1/runs/{run}/stages/{stage}/approval'].post['x-keel-access']).toBe('person');
    const runId = await start(1);
    const decide = (token: string | undefined, body: unknown, run = runId, stage = 'sign-off') =>
      hub.api('POST', `/v1/runs/${run}/stages/${stage}/approval`, token, body);
    const approve = { decision: 'approve' };

    // an agent's key is no person's: neither the shipper that would run next nor any other agent of demo
    for (const key of [demo.keys.shipper, demo.keys.lead]) {
      const refused = await decide(key, approve);
      expect(refused.status).toBe(403);
      expect(refused.body.code).toBe('person_only');
    }
    // another project's token, and another project's agent, see no such run
    expect((await decide(other.token, approve)).status).toBe(404);
    expect((await decide(other.keys.shipper, approve)).status).toBe(403);
    // no token, a made-up one, a token of the right shape with a wrong secret
    expect((await decide(undefined, approve)).status).toBe(401);
    expect((await decide('khp_00_nothing', approve)).status).toBe(401);
    expect((await decide(`${demo.token.slice(0, -4)}AAAA`, approve)).status).toBe(401);
    // a stage that is not the parked one, a run that does not exist, a body that is no decision
    expect((await decide(demo.token, approve, runId, 'ship')).body.code).toBe('stage_not_waiting');
    expect((await decide(demo.token, approve, 'no-such-run')).status).toBe(404);
    expect((await decide(demo.token, { decision: 'yes' })).status).toBe(400);
    expect((await decide(demo.token, { decision: 'approve', by: 'the boss' })).status).toBe(400);
    // a revoked project token (a second one of demo's) is no one's
    const spare = await hub.api('POST', '/v1/projects/demo/tokens', hub.adminToken);
    expect((await hub.api('POST', `/v1/tokens/${spare.body.token_id}/revoke`, hub.adminToken)).status).toBe(
      200,
    );
    expect((await decide(spare.body.token, approve)).status).toBe(401);

    let run = await show(hub, runId);
    expect(run.status).toBe('running');
    expect(run.stages[0]).toMatchObject({ id: 'sign-off', state: 'parked' });
    expect(run.events.map((e: { type: string }) => e.type)).not.toContain('stage_approved');

    // the project's own token approves: the next stage asks its agent, and a second decision is refused
    const ok = await decide(demo.token, { decision: 'approve', reason: 'looks right' });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect(ok.body).toMatchObject({ run_id: runId, stage: 'sign-off', decision: 'approve' });
    expect((await decide(demo.token, approve)).status).toBe(409);
    expect((await decide(hub.adminToken, { decision: 'reject' })).status).toBe(409);
    run = await show(hub, runId);
    expect(run.stages.map((s: { state: string }) => s.state)).toEqual(['done', 'active']);
    const approved = run.events.find((e: { type: string }) => e.type === 'stage_approved');
    expect(approved.data).toEqual({
      stage: 'sign-off',
      attempt: 1,
      decision: 'approve',
      by: `project token ${demo.tokenId}`,
      reason: 'looks right',
    });

    // the admin token rejects another run: it ends rejected, and nothing decides it after
    const second = await start(2);
    const rejected = await decide(hub.adminToken, { decision: 'reject', reason: 'not today' }, second);
    expect(rejected.status).toBe(200);
    expect((await decide(demo.token, approve, second)).status).toBe(409);
    run = await show(hub, second);
    expect(run.status).toBe('rejected');
    expect(run.stages[0].state).toBe('rejected');
    expect(run.stages[1].state).toBe('pending');
    expect(run.events.find((e: { type: string }) => e.type === 'stage_rejected').data).toMatchObject({
      decision: 'reject',
      by: 'admin token',
      reason: 'not today',
    });
    // the shipper got a request for the approved run only
    const inbox = (await hub.api('GET', '/v1/inbox', demo.keys.shipper)).body.messages;
    expect(inbox.map((m: { body: string }) => JSON.parse(m.body).workflow_run)).toEqual([runId]);
    for (const id of [runId, second]) {
      const verified = await hub.cli(['runs', 'verify', id]);
      expect(verified.code, verified.stdout + verified.stderr).toBe(0);
    }
  });
});
