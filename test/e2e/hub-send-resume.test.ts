/**
 * hub_send across a resume, through the real binaries: a keel session sends with hub_send (no
 * idempotency key) and waits for the reply; it is killed with SIGKILL while it waits; the other agent
 * answers; `keel sessions resume` runs the cut-off call again, and because the session derived the key
 * from its id and the call's, the hub gives the original message back with its reply: one message sent,
 * never two.
 */
import type { ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { gitRepo } from '../helpers/tmp.js';
import { chatBodies, keel, keelHome, model, modelFlags, requestMessages } from './harness.js';
import { projectWithAgents, startHub } from './hub-harness.js';

describe('hub_send in a resumed session', () => {
  it('a session killed while hub_send waits resumes with the original message, not a second one', async () => {
    const hubHome = keelHome();
    const repo = gitRepo();
    const hub = await startHub({ home: hubHome, cwd: repo });
    const { token, keys } = await projectWithAgents(hub, 'demo', 'helper');
    const env = { KEEL_HUB_URL: hub.url, KEEL_HUB_TOKEN: token, KEEL_AGENT_NAME: 'lead' };
    const home = keelHome();
    const server = await model([
      { tool_calls: [{ name: 'tools', arguments: { activate: ['hub_send'] } }] },
      { tool_calls: [{ name: 'hub_send', arguments: { to: 'helper', text: 'ping', wait_s: 60 } }] },
      { text: 'the helper said pong', expect: { last_tool_result_contains: 'pong' } },
    ]);
    let child: ChildProcess | undefined;
    const first = keel(['run', '--json', ...modelFlags(server), 'ask the helper'], {
      cwd: repo,
      home,
      env,
      timeoutMs: 60_000,
      onSpawn: (c) => (child = c),
    });
    // the message is in the helper's inbox and the session waits for its reply: kill it there
    const inbox = async () =>
      (await hub.api('GET', '/v1/inbox', keys.helper)).body.messages as Array<{ id: string; body: string }>;
    let sent: Array<{ id: string; body: string }> = [];
    for (const end = Date.now() + 30_000; !sent.length && Date.now() < end; await sleep(50))
      sent = await inbox();
    expect(sent.map((m) => m.body)).toEqual(['ping']);
    child?.kill('SIGKILL');
    expect((await first).signal).toBe('SIGKILL');
    const reply = await hub.api('POST', `/v1/messages/${sent[0]?.id}/reply`, keys.helper, { body: 'pong' });
    expect(reply.status).toBe(201);

    const listed = JSON.parse((await keel(['sessions', 'list', '--json'], { cwd: repo, home })).stdout);
    const id = listed.sessions[0].id as string;
    const resumed = await keel(['sessions', 'resume', id, ...modelFlags(server), '--json'], {
      cwd: repo,
      home,
      env,
      timeoutMs: 60_000,
    });
    expect(resumed.code, resumed.stdout + resumed.stderr).toBe(0);
    expect(JSON.parse(resumed.stdout)).toMatchObject({ session_id: id, code: 'COMPLETED' });
    // the call ran again and got the first message back, with the reply to it
    const result = JSON.parse(requestMessages(chatBodies(server).at(-1)).pop()?.content ?? '{}');
    expect(result).toMatchObject({
      id: sent[0]?.id,
      created: false,
      reply: { from: 'helper', text: 'pong' },
    });
    // nothing new reached the helper
    expect(await inbox()).toEqual([]);
  }, 120_000);
});
