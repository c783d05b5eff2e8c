/** `keel hub` through the real binary: two agents hand each other work through the CLI; idempotent retries; SSE resume. */
import { spawn } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/tmp.js';
import { baseEnv, KEEL_BIN } from './harness.js';
import { projectWithAgents, readEvents, startHub } from './hub-harness.js';

describe('keel hub', () => {
  it('two agents exchange a request and a reply through the CLI; a retry is the original, a conflicting one is refused', async () => {
    const home = tempDir('keel-hub-home-');
    const cwd = tempDir('keel-hub-cwd-');
    const hub = await startHub({ home, cwd });
    expect((await hub.api('GET', '/health')).body).toEqual({ ok: true });
    expect((await hub.api('GET', '/ready')).body).toEqual({ ready: true });
    const doc = (await hub.api('GET', '/v1/openapi.json')).body;
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining([
        '/v1/agents',
        '/v1/messages',
        '/v1/messages/{id}/ack',
        '/v1/messages/{id}/reply',
        '/v1/events',
      ]),
    );
    expect((await hub.api('GET', '/metrics')).status).toBe(401);
    expect((await hub.api('GET', '/metrics', hub.adminToken)).body).toContain(
      'keel_hub_messages{state="queued"}',
    );

    // the admin makes a project token; it is printed once and never listed
    const created = await hub.cli(['token', 'create', '--project', 'demo', '--json']);
    expect(created.code, created.stderr).toBe(0);
    const { token, token_id } = JSON.parse(created.stdout);
    expect(token).toMatch(/^khp_[0-9a-f]{18}_[\w-]{43}$/);

    // bob registers on first use; alice asks and waits for the answer
    expect((await hub.cli(['peers', '--json'], { agent: 'bob', token })).code).toBe(0);
    const asking = hub.cli(
      ['send', '--to', 'bob', '--idempotency-key', 'req-1', '--wait', '25', '--json', 'please', 'review'],
      {
        agent: 'alice',
        token,
      },
    );
    let request: { id: string; body: string; from: string } | undefined;
    while (!request) {
      const inbox = await hub.cli(['inbox', '--json'], { agent: 'bob', token });
      expect(inbox.code, inbox.stderr).toBe(0);
      request = JSON.parse(inbox.stdout).messages[0];
    }
    expect(request).toMatchObject({ body: 'please review', from: 'alice' });
    const replied = await hub.cli(['reply', request.id, '--json', 'LGTM'], { agent: 'bob', token });
    expect(replied.code, replied.stderr).toBe(0);
    const asked = await asking;
    expect(asked.code, asked.stderr).toBe(0);
    const answer = JSON.parse(asked.stdout);
    expect(answer.reply).toMatchObject({ body: 'LGTM', from: 'bob', reply_to: request.id });
    expect(answer.message.state).toBe('replied');

    // the same request under the same key: the original back, no second message
    const retry = await hub.cli(
      ['send', '--to', 'bob', '--idempotency-key', 'req-1', '--json', 'please', 'review'],
      {
        agent: 'alice',
        token,
      },
    );
    expect(retry.code, retry.stderr).toBe(0);
    expect(JSON.parse(retry.stdout)).toMatchObject({ created: false, message: { id: request.id } });
    // the same key with another request: refused with its code
    const conflict = await hub.cli(
      ['send', '--to', 'bob', '--idempotency-key', 'req-1', '--json', 'something', 'else'],
      {
        agent: 'alice',
        token,
      },
    );
    expect(conflict.code).toBe(1);
    expect(JSON.parse(conflict.stdout)).toMatchObject({
      code: 'IDEMPOTENCY_CONFLICT',
      message_id: request.id,
    });
    // bob retrying his reply gets his reply back; a different second reply is refused
    const again = await hub.cli(['reply', request.id, '--json', 'LGTM'], { agent: 'bob', token });
    expect(JSON.parse(again.stdout)).toMatchObject({ created: false, message: { id: answer.reply.id } });
    const second = await hub.cli(['reply', request.id, '--json', 'actually', 'no'], { agent: 'bob', token });
    expect(second.code).toBe(1);
    expect(JSON.parse(second.stdout).code).toBe('IDEMPOTENCY_CONFLICT');
    const fresh = await hub.cli(['reply', request.id, '--idempotency-key', 'other', '--json', 'no'], {
      agent: 'bob',
      token,
    });
    expect(JSON.parse(fresh.stdout).code).toBe('ALREADY_REPLIED');

    const peers = JSON.parse((await hub.cli(['peers', '--json'], { agent: 'alice', token })).stdout);
    expect(peers.agents.map((a: { name: string; online: boolean }) => [a.name, a.online])).toEqual([
      ['alice', true],
      ['bob', true],
    ]);
    // token list: ids, never a secret; the agent keys are kept 0600 in KEEL_HOME
    const list = await hub.cli(['token', 'list', '--json']);
    expect(list.stdout).toContain(token_id);
    expect(list.stdout).not.toContain(token.slice(4 + 18 + 1));
    const keyDir = join(home, 'hub', 'agents');
    const files = readdirSync(keyDir);
    expect(files).toHaveLength(2);
    for (const f of files) expect(statSync(join(keyDir, f)).mode & 0o777).toBe(0o600);
    expect(statSync(join(home, 'hub', 'admin-token')).mode & 0o777).toBe(0o600);
  }, 90_000);

  it('the event stream numbers by recipient, resumes after Last-Event-ID and re-sends what was not acked', async () => {
    const home = tempDir('keel-hub-home-');
    const cwd = tempDir('keel-hub-cwd-');
    const hub = await startHub({ home, cwd });
    const { keys, token } = await projectWithAgents(hub, 'sse', 'a', 'b');
    const ids: string[] = [];
    for (const body of ['one', 'two', 'three']) {
      const sent = await hub.api('POST', '/v1/messages', keys.a, { to: 'b', body, idempotency_key: body });
      expect(sent.status).toBe(201);
      ids.push(sent.body.message.id);
    }
    const first = await readEvents(hub.url, keys.b as string, (e) => e.length >= 3);
    expect(first.map((e) => [e.id, e.data.body])).toEqual([
      ['1', 'one'],
      ['2', 'two'],
      ['3', 'three'],
    ]);
    expect((await hub.api('POST', `/v1/messages/${ids[0]}/ack`, keys.b)).body.message.state).toBe('acked');
    expect((await hub.api('POST', `/v1/messages/${ids[2]}/reply`, keys.b, { body: 'done' })).status).toBe(
      201,
    );
    // a live stream gets a new message at once, numbered next
    const live = readEvents(hub.url, keys.b as string, (e) => e.some((x) => x.data.body === 'four'), '3');
    await hub.api('POST', '/v1/messages', keys.a, { to: 'b', body: 'four', idempotency_key: 'four' });
    // reconnecting after 3: the one delivered but never acked comes again, then the new one; acked and replied ones do not
    expect((await live).map((e) => [e.id, e.data.body])).toEqual([
      ['2', 'two'],
      ['4', 'four'],
    ]);
    const two = (await hub.api('GET', `/v1/messages/${ids[1]}`, keys.a)).body.message;
    expect(two).toMatchObject({ state: 'delivered', deliveries: 2 });
    // inbox --follow prints the stream as JSON lines, once each
    expect((await hub.cli(['peers'], { agent: 'c', token })).code).toBe(0);
    const follower = spawn(process.execPath, [KEEL_BIN, 'hub', 'inbox', '--follow', '--json'], {
      cwd,
      env: { ...baseEnv(home), KEEL_HUB_URL: hub.url, KEEL_HUB_TOKEN: token, KEEL_AGENT_NAME: 'c' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const printed = new Promise<string>((resolve) => {
      let out = '';
      follower.stdout.on('data', (d) => {
        out += d;
        if (out.includes('\n')) resolve(out);
      });
    });
    await hub.api('POST', '/v1/messages', keys.a, { to: 'c', body: 'for c', idempotency_key: 'c1' });
    const line = await printed;
    follower.kill('SIGKILL');
    expect(JSON.parse(line.split('\n')[0] as string)).toMatchObject({ body: 'for c', from: 'a', seq: 1 });
  });
});
