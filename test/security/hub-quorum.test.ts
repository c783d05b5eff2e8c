/**
 * Who counts for a workflow quorum served by `keel hub start --workflow-project demo` (the real binary):
 * only replies through the hub, from the eligible agents of the run's own project, to the request of the
 * stage's attempt that is waiting. An agent of the same project that is not eligible, a same-named agent
 * of another project, and a reply to a request whose attempt timed out all count for nothing.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { projectAgents } from '../../src/hub/outbox.js';
import { RunsStore } from '../../src/hub/runs-store.js';
import { readAuditKey } from '../../src/store/audit-key.js';
import { openStore } from '../../src/store/engine.js';
import {
  githubWebhook,
  HUB_ENV,
  projectWithAgents,
  QUORUM,
  type RunningHub,
  startHub,
  workflowProject,
} from '../e2e/hub-harness.js';
import { tempDir } from '../helpers/tmp.js';

async function show(hub: RunningHub, runId: string) {
  const shown = await hub.cli(['runs', 'show', runId, '--json']);
  expect(shown.code, shown.stderr).toBe(0);
  return JSON.parse(shown.stdout);
}

async function requestOf(hub: RunningHub, key: string, runId: string) {
  const { messages } = (await hub.api('GET', '/v1/inbox', key)).body;
  return messages.find((m: { body: string }) => m.body.includes(runId));
}

describe('hub quorum attacks', () => {
  it('agents of another project neither satisfy nor answer a run; a non-eligible agent of the project cannot reply', async () => {
    const home = tempDir('keel-hub-home-');
    const cwd = workflowProject(home, { pr: QUORUM });
    writeFileSync(`${cwd}/.keel/workflows/sneaky.yaml`, QUORUM); // never trusted
    const hub = await startHub({ home, cwd, env: HUB_ENV, args: ['--workflow-project', 'demo'] });
    const demo = await projectWithAgents(hub, 'demo', 'rev-a', 'rev-x');
    const other = await projectWithAgents(hub, 'other', 'rev-a', 'rev-b', 'rev-c');

    // demo has one eligible agent; the other project's rev-b and rev-c do not make up the quorum
    const refused = await githubWebhook(hub, 'pr', { pull_request: { number: 1 } });
    expect(refused.status).toBe(422);
    expect(((await refused.json()) as { code: string }).code).toBe('quorum_unsatisfiable');
    expect((await githubWebhook(hub, 'sneaky', { pull_request: { number: 1 } })).status).toBe(403);
    const audit = (await hub.api('GET', '/v1/audit', hub.adminToken)).body.refusals.map(
      (r: { code: string }) => r.code,
    );
    expect(audit).toEqual(expect.arrayContaining(['quorum_unsatisfiable', 'untrusted_workflow']));
    // the other project's agents got nothing
    for (const name of ['rev-a', 'rev-b', 'rev-c'])
      expect((await hub.api('GET', '/v1/inbox', other.keys[name])).body.messages).toEqual([]);

    for (const name of ['rev-b', 'rev-c']) {
      const reg = await hub.api('POST', '/v1/agents', demo.token, { name });
      demo.keys[name] = reg.body.agent_key;
    }
    const started = await githubWebhook(hub, 'pr', { pull_request: { number: 2 } });
    expect(started.status).toBe(202);
    const { run_id: runId } = (await started.json()) as { run_id: string };
    const forA = await requestOf(hub, demo.keys['rev-a'] as string, runId);
    const forB = await requestOf(hub, demo.keys['rev-b'] as string, runId);
    expect(forA && forB).toBeTruthy();
    // no one registers as (or gets a key for) the hub's own sender
    expect((await hub.api('POST', '/v1/agents', demo.token, { name: '@hub' })).status).toBe(400);
    expect(
      (await hub.api('GET', '/v1/tokens', hub.adminToken)).body.tokens.map(
        (t: { agent?: string }) => t.agent,
      ),
    ).not.toContain('@hub');
    // rev-x is in the project but not eligible: it was asked nothing and can answer nothing
    expect(await requestOf(hub, demo.keys['rev-x'] as string, runId)).toBeUndefined();
    expect(
      (await hub.api('POST', `/v1/messages/${forA.id}/reply`, demo.keys['rev-x'], { body: 'LGTM' })).status,
    ).toBe(404);
    expect(
      (
        await hub.api('POST', '/v1/messages', demo.keys['rev-x'], {
          to: 'rev-a',
          body: 'LGTM',
          idempotency_key: 'x',
          reply_to: forA.id,
        })
      ).status,
    ).toBe(404);
    // the other project's rev-a and rev-b bear the eligible names but are not these agents
    for (const [name, request] of [
      ['rev-a', forA],
      ['rev-b', forB],
    ] as const)
      expect(
        (await hub.api('POST', `/v1/messages/${request.id}/reply`, other.keys[name], { body: 'LGTM' }))
          .status,
      ).toBe(404);
    const run = await show(hub, runId);
    expect(run.stages[0]).toMatchObject({ state: 'active', producers: 0 });
    expect(run.events.map((e: { type: string }) => e.type)).not.toContain('reply_received');
  });

  it('a reply to the request of an attempt that timed out does not revive or finish the stage, nor count for the retried attempt', async () => {
    const home = tempDir('keel-hub-home-');
    const cwd = workflowProject(home, {
      pr: QUORUM.replace('min_producers: 2,', 'min_producers: 2, timeout: 1h,'),
    });
    const hub = await startHub({ home, cwd, env: HUB_ENV, args: ['--workflow-project', 'demo'] });
    const { keys } = await projectWithAgents(hub, 'demo', 'rev-a', 'rev-b', 'rev-c');
    const started = await githubWebhook(hub, 'pr', { pull_request: { number: 3 } });
    expect(started.status).toBe(202);
    const { run_id: runId } = (await started.json()) as { run_id: string };
    const forA = await requestOf(hub, keys['rev-a'] as string, runId);
    const forB = await requestOf(hub, keys['rev-b'] as string, runId);
    // attempt 1's timer is made due (no wall-clock race: every attempt's timeout is an hour) and the
    // hub's own timer loop times the stage out
    const db = await openStore({ engine: 'sqlite', path: join(home, 'keel.db') });
    try {
      expect(
        await db.run('UPDATE hub_timers SET due_at = 0 WHERE run_id = $1 AND attempt = 1', [runId]),
      ).toBe(1);
    } finally {
      await db.close();
    }
    let run = await show(hub, runId);
    for (let i = 0; i < 100 && run.status !== 'failed'; i++) {
      await sleep(200);
      run = await show(hub, runId);
    }
    expect(run.status).toBe('failed');
    expect(run.stages[0].state).toBe('timed_out');
    // both eligible agents answer late: the messages take the replies, the run does not move
    for (const [name, request] of [
      ['rev-a', forA],
      ['rev-b', forB],
    ] as const)
      expect(
        (await hub.api('POST', `/v1/messages/${request.id}/reply`, keys[name], { body: 'late' })).status,
      ).toBe(201);
    run = await show(hub, runId);
    expect(run.status).toBe('failed');
    expect(run.stages[0].state).toBe('timed_out');
    expect(run.events.map((e: { type: string }) => e.type)).not.toContain('stage_done');

    // the stage is retried (from another connection, as another hub process would): attempt 2's requests
    // reach the inboxes; rev-a's late reply to attempt 1 still counts for nothing, attempt 2's replies do
    const store = await openStore({ engine: 'sqlite', path: join(home, 'keel.db') });
    try {
      const key = readAuditKey(join(home, 'audit.key')) as Buffer;
      const runs = new RunsStore(store, { key, agents: projectAgents('demo') });
      expect(await runs.retryStage(runId)).toBe(2);
    } finally {
      await store.close();
    }
    const again = (name: string) =>
      hub
        .api('GET', '/v1/inbox', keys[name])
        .then((r) => r.body.messages.find((m: { body: string }) => JSON.parse(m.body).attempt === 2));
    const secondA = await again('rev-a');
    const secondC = await again('rev-c');
    expect(secondA && secondC).toBeTruthy();
    expect(secondA.id).not.toBe(forA.id);
    run = await show(hub, runId);
    expect(run.stages[0]).toMatchObject({ state: 'active', attempt: 2, producers: 0 });
    expect(
      (await hub.api('POST', `/v1/messages/${secondA.id}/reply`, keys['rev-a'], { body: 'ok' })).status,
    ).toBe(201);
    run = await show(hub, runId);
    expect(run.stages[0]).toMatchObject({ state: 'active', producers: 1 });
    expect(
      (await hub.api('POST', `/v1/messages/${secondC.id}/reply`, keys['rev-c'], { body: 'ok' })).status,
    ).toBe(201);
    run = await show(hub, runId);
    expect(run.stages[0].state).toBe('done');
    const done = run.events.find((e: { type: string }) => e.type === 'stage_done');
    expect(
      done.data.evidence.replies.map((r: { request_message_id: string }) => r.request_message_id).sort(),
    ).toEqual([secondA.id, secondC.id].sort());
    const verified = await hub.cli(['runs', 'verify', runId]);
    expect(verified.code, verified.stdout).toBe(0);
  });
});
