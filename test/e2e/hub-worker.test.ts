/** `keel worker` through the real binary: it answers a request with a session; killed mid-request, it answers once. */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/tmp.js';
import { chatBodies, model } from './harness.js';
import { projectWithAgents, startHub } from './hub-harness.js';
import { keptAgentKey, startWorker } from './worker-harness.js';

describe('keel worker', () => {
  it('killed -9 mid-request, gets the message again on restart and replies exactly once (the key keeps a second reply out)', async () => {
    const home = tempDir('keel-worker-home-');
    const hubHome = tempDir('keel-worker-hub-');
    const cwd = tempDir('keel-worker-ws-');
    writeFileSync(join(cwd, 'README.md'), 'a small project\n');
    const hub = await startHub({ home: hubHome, cwd: hubHome });
    const { token, keys } = await projectWithAgents(hub, 'demo', 'alice');
    // the first session's answer never comes (the worker is killed while it waits); the second's does
    const server = await model([
      { hang: true },
      { text: 'It is a small project.' },
      { hang: true },
      { text: 'Two files.' },
    ]);

    const first = startWorker({
      home,
      cwd,
      hubUrl: hub.url,
      token,
      name: 'rev',
      server,
      args: ['--role', 'reviewer'],
    });
    await first.until((e) => e.event === 'ready');
    const peers = await hub.api('GET', '/v1/agents', keys.alice);
    expect(peers.body.agents).toEqual(
      expect.arrayContaining([expect.objectContaining({ name: 'rev', role: 'reviewer' })]),
    );
    const sent = await hub.api('POST', '/v1/messages', keys.alice, {
      to: 'rev',
      body: 'what is this project?',
      idempotency_key: 'q-1',
    });
    expect(sent.status, JSON.stringify(sent.body)).toBe(201);
    const id = sent.body.message.id as string;
    await first.until((e) => e.event === 'request' && e.id === id);
    while (chatBodies(server).length === 0) await new Promise((r) => setTimeout(r, 50));
    first.child.kill('SIGKILL');
    await first.exited;
    const meanwhile = await hub.api('GET', `/v1/messages/${id}`, keys.alice);
    expect(meanwhile.body.message.state).toBe('delivered');
    expect(meanwhile.body.reply).toBeUndefined();

    const second = startWorker({ home, cwd, hubUrl: hub.url, token, name: 'rev', server });
    const done = await second.until((e) => e.event === 'done' && e.id === id);
    expect(done).toMatchObject({ from: 'alice', mode: 'ask', code: 'COMPLETED' });
    expect(second.stderr()).toMatch(
      new RegExp(`request ${id} from alice: ask, COMPLETED, done in [0-9.]+ s`),
    );
    const answered = await hub.api('GET', `/v1/messages/${id}`, keys.alice);
    expect(answered.body.message.state).toBe('replied');
    expect(answered.body.reply).toMatchObject({
      body: 'It is a small project.',
      from: 'rev',
      reply_to: id,
      idempotency_key: `keel-worker:${id}`,
    });

    // answering again (as a worker killed after its reply would) returns the original, no second reply
    const again = await hub.api('POST', `/v1/messages/${id}/reply`, keptAgentKey(home), {
      body: 'It is a small project.',
      idempotency_key: `keel-worker:${id}`,
    });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ created: false, message: { id: answered.body.reply.id } });
    const inbox = await hub.api('GET', '/v1/inbox', keys.alice);
    expect(inbox.body.messages.filter((m: { reply_to: string }) => m.reply_to === id)).toHaveLength(1);

    // SIGTERM mid-request: a clean exit, the message left unacked, and the next worker answers it
    const q2 = await hub.api('POST', '/v1/messages', keys.alice, {
      to: 'rev',
      body: 'how many files?',
      idempotency_key: 'q-2',
    });
    const id2 = q2.body.message.id as string;
    await second.until((e) => e.event === 'request' && e.id === id2);
    while (chatBodies(server).length < 3) await new Promise((r) => setTimeout(r, 50));
    second.child.kill('SIGTERM');
    expect((await second.exited).code, second.stderr()).toBe(0);
    expect(second.events().at(-1)).toEqual({ event: 'stopping' });
    expect((await hub.api('GET', `/v1/messages/${id2}`, keys.alice)).body.message.state).toBe('delivered');
    const third = startWorker({ home, cwd, hubUrl: hub.url, token, name: 'rev', server });
    await third.until((e) => e.event === 'done' && e.id === id2);
    expect((await hub.api('GET', `/v1/messages/${id2}`, keys.alice)).body.reply.body).toBe('Two files.');
    // the first request, answered before, is not run again by the new worker
    expect(
      third
        .events()
        .filter((e) => e.event === 'request')
        .map((e) => e.id),
    ).toEqual([id2]);
  });
});
