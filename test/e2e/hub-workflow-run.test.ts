/**
 * A workflow run for real: `keel hub start --workflow-project demo` serves the cwd's trusted workflows;
 * a GitHub-signed webhook starts a quorum of 2 among 3 agents, the hub's requests land in their
 * `keel hub inbox`, and only their replies through the hub count.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { freshPgDatabase, skipReason } from '../helpers/pg.js';
import { tempDir } from '../helpers/tmp.js';
import {
  githubWebhook,
  HUB_ENV,
  projectWithAgents,
  QUORUM,
  readEvents,
  startHub,
  workflowProject,
} from './hub-harness.js';

const pgUrl = await freshPgDatabase();
const engines = [
  { name: 'SQLite', env: {} as Record<string, string>, skip: '' },
  { name: 'PostgreSQL', env: pgUrl ? { KEEL_STORE: pgUrl } : {}, skip: pgUrl ? '' : skipReason },
];

describe.each(engines)('keel hub start serves workflows on $name', ({ env, skip }) => {
  it.skipIf(skip)(
    'a signed webhook starts a quorum; the requests reach the inboxes; two eligible replies finish the stage, and nothing else counts',
    async () => {
      const home = tempDir('keel-hub-home-');
      const cwd = workflowProject(home, { pr: QUORUM });
      const hub = await startHub({
        home,
        cwd,
        env: { ...HUB_ENV, ...env },
        args: ['--workflow-project', 'demo'],
      });
      const { token, keys } = await projectWithAgents(hub, 'demo', 'rev-b', 'rev-c', 'lead');
      // rev-a registers through the CLI on first use
      expect((await hub.cli(['peers', '--json'], { agent: 'rev-a', token })).code).toBe(0);

      // rev-c listens on its event stream before the webhook comes
      const streamed = readEvents(hub.url, keys['rev-c'] as string, (e) => e.length >= 1);
      const started = await githubWebhook(hub, 'pr', { action: 'opened', pull_request: { number: 7 } });
      expect(started.status).toBe(202);
      const receipt = (await started.json()) as { run_id: string; stage: string };
      expect(receipt.stage).toBe('review');

      // the hub's own request, with the run, stage and attempt, in rev-a's inbox
      const inbox = await hub.cli(['inbox', '--json'], { agent: 'rev-a', token });
      expect(inbox.code, inbox.stderr).toBe(0);
      const [request] = JSON.parse(inbox.stdout).messages;
      expect(request.from).toBe('@hub');
      expect(JSON.parse(request.body)).toMatchObject({
        workflow_run: receipt.run_id,
        stage: 'review',
        attempt: 1,
        prompt: 'Review PR 7',
      });
      const [event] = await streamed;
      expect(event?.data).toMatchObject({ from: '@hub', to: 'rev-c' });
      expect(JSON.parse(String(event?.data.body))).toMatchObject({
        workflow_run: receipt.run_id,
        attempt: 1,
      });
      const requestB = (await hub.api('GET', '/v1/inbox', keys['rev-b'])).body.messages[0];
      expect(JSON.parse(requestB.body)).toMatchObject({ workflow_run: receipt.run_id, stage: 'review' });
      // the system sender is no peer, and no one can address it
      const peers = (await hub.api('GET', '/v1/agents', keys.lead)).body.agents.map(
        (a: { name: string }) => a.name,
      );
      expect(peers).toEqual(['lead', 'rev-a', 'rev-b', 'rev-c']);
      expect(
        (await hub.api('POST', '/v1/messages', keys.lead, { to: '@hub', body: 'x', idempotency_key: 'k' }))
          .status,
      ).toBe(400);

      const show = async () => {
        const shown = await hub.cli(['runs', 'show', receipt.run_id, '--json']);
        expect(shown.code, shown.stderr).toBe(0);
        return JSON.parse(shown.stdout);
      };
      // one reply: the stage stays open; the same agent's second reply is refused
      const first = await hub.cli(['reply', request.id, '--json', 'LGTM'], { agent: 'rev-a', token });
      expect(first.code, first.stderr).toBe(0);
      const again = await hub.cli(['reply', request.id, '--idempotency-key', 'twice', 'LGTM again'], {
        agent: 'rev-a',
        token,
      });
      expect(again.code).toBe(1);
      let run = await show();
      expect(run.stages[0]).toMatchObject({ id: 'review', state: 'active', producers: 1 });

      // a coordinator's plain messages, to the reviewers or claiming a review, count for nothing
      for (const to of ['rev-b', 'rev-c'])
        expect(
          (
            await hub.api('POST', '/v1/messages', keys.lead, {
              to,
              body: 'approved, rev-b agrees',
              idempotency_key: `c-${to}`,
            })
          ).status,
        ).toBe(201);
      // nor does an eligible agent's new message pointing at its request instead of replying to it
      expect(
        (
          await hub.api('POST', '/v1/messages', keys['rev-c'], {
            to: 'lead',
            body: 'LGTM',
            idempotency_key: 'c-reply',
            reply_to: (await hub.api('GET', '/v1/inbox', keys['rev-c'])).body.messages[0].id,
          })
        ).status,
      ).toBe(201);
      run = await show();
      expect(run.stages[0]).toMatchObject({ state: 'active', producers: 1 });

      // the second eligible reply completes the quorum
      expect(
        (await hub.api('POST', `/v1/messages/${requestB.id}/reply`, keys['rev-b'], { body: 'ship it' }))
          .status,
      ).toBe(201);
      run = await show();
      expect(run.status).toBe('running');
      expect(run.project).toBe('demo');
      expect(run.stages[0].state).toBe('done');
      expect(run.stages[1]).toMatchObject({ id: 'sign-off', state: 'parked' });
      const done = run.events.find((e: { type: string }) => e.type === 'stage_done');
      const sha = (t: string) => createHash('sha256').update(t).digest('hex');
      expect(done.data.evidence.producers).toBe(2);
      expect(
        done.data.evidence.replies
          .map((r: { request_message_id: string; request_hash: string; reply_hash: string }) => [
            r.request_message_id,
            r.request_hash,
            r.reply_hash,
          ])
          .sort(),
      ).toEqual(
        [
          [request.id, sha(request.body), sha('LGTM')],
          [requestB.id, sha(requestB.body), sha('ship it')],
        ].sort(),
      );
      const verified = await hub.cli(['runs', 'verify', receipt.run_id]);
      expect(verified.code, verified.stdout + verified.stderr).toBe(0);
    },
  );
});
