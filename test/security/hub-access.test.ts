/**
 * Attacks on the hub through the real binary: wrong and forged tokens, another project's token,
 * another agent's inbox, an expired message, a revoked token's agent keys, oversized bodies, bad TTLs,
 * forwarding loops, a flood, and a hub asked to listen off loopback without a token of its own.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createHubApp } from '../../src/hub/app.js';
import { HubStore } from '../../src/hub/hub-store.js';
import { RateLimit } from '../../src/hub/rate-limit.js';
import { Wakeups } from '../../src/hub/wakeups.js';
import { openStore } from '../../src/store/engine.js';
import { keel } from '../e2e/harness.js';
import { projectWithAgents, readEvents, startHub } from '../e2e/hub-harness.js';
import { rawRequest } from '../helpers/raw-http.js';
import { tempDir } from '../helpers/tmp.js';

const MiB = 1024 * 1024;

describe('hub access', () => {
  it('refuses wrong tokens, other projects, other inboxes, expired and revoked; every refusal is coded and audited', async () => {
    const home = tempDir('keel-hub-sec-');
    const cwd = tempDir('keel-hub-sec-cwd-');
    const hub = await startHub({ home, cwd, env: { KEEL_HUB_RATE_PER_S: '20' } });
    const one = await projectWithAgents(hub, 'one', 'alice', 'bob', 'carol');
    const two = await projectWithAgents(hub, 'two', 'mallory', 'bob');
    const [alice, bob, carol] = [one.keys.alice, one.keys.bob, one.keys.carol] as [string, string, string];
    const mallory = two.keys.mallory as string;
    const sent = await hub.api('POST', '/v1/messages', alice, {
      to: 'bob',
      body: 'secret plan',
      idempotency_key: 'k1',
    });
    expect(sent.status).toBe(201);
    const id = sent.body.message.id as string;

    // no token, a malformed one, a forged secret under a real id, the wrong kind of token, the admin's for an agent route
    const forged = `${bob.slice(0, 4 + 18 + 1)}${'A'.repeat(43)}`;
    for (const token of [undefined, 'nonsense', forged, one.token, hub.adminToken]) {
      for (const [method, path] of [
        ['GET', '/v1/inbox'],
        ['GET', '/v1/events'],
        ['POST', `/v1/messages/${id}/ack`],
      ] as const) {
        const r = await hub.api(method, path, token);
        expect([r.status, r.body.code], `${method} ${path} with ${token?.slice(0, 4)}`).toEqual([
          401,
          'UNAUTHORIZED',
        ]);
      }
    }
    // the admin's routes want the admin token, not a project token nor an agent key
    for (const token of [one.token, alice]) {
      expect((await hub.api('GET', '/v1/tokens', token)).status).toBe(401);
      expect((await hub.api('POST', '/v1/projects/one/tokens', token)).status).toBe(401);
    }
    // registering wants a project token, not an agent key
    expect((await hub.api('POST', '/v1/agents', alice, { name: 'eve' })).status).toBe(401);

    // another agent of the same project: no read, ack, reply, nor the message in its stream or inbox
    for (const [method, path, body] of [
      ['GET', `/v1/messages/${id}`, undefined],
      ['POST', `/v1/messages/${id}/ack`, undefined],
      ['POST', `/v1/messages/${id}/reply`, { body: 'I am bob' }],
      ['POST', `/v1/messages/${id}/cancel`, undefined],
    ] as const) {
      for (const intruder of [carol, mallory]) {
        const r = await hub.api(method, path, intruder, body);
        expect([r.status, r.body.code], `${method} ${path}`).toEqual([404, 'NOT_FOUND']);
        expect(JSON.stringify(r.body)).not.toContain('secret plan');
      }
    }
    expect((await hub.api('GET', '/v1/inbox', carol)).body.messages).toEqual([]);
    await hub.api('POST', '/v1/messages', alice, { to: 'carol', body: 'for carol', idempotency_key: 'k2' });
    const carolsStream = await readEvents(hub.url, carol, (e) => e.length >= 1);
    expect(carolsStream.map((e) => e.data.body)).toEqual(['for carol']);
    // the other project's "bob" is another agent: mallory reaches only her own project's names
    const cross = await hub.api('POST', '/v1/messages', mallory, {
      to: 'alice',
      body: 'hi',
      idempotency_key: 'm1',
    });
    expect([cross.status, cross.body.code]).toEqual([404, 'UNKNOWN_AGENT']);
    const peers = await hub.api('GET', '/v1/agents', mallory);
    expect(peers.body.agents.map((a: { name: string }) => a.name)).toEqual(['bob', 'mallory']);
    await hub.api('POST', '/v1/messages', mallory, {
      to: 'bob',
      body: 'to bob of two',
      idempotency_key: 'm2',
    });
    expect(
      (await hub.api('GET', '/v1/inbox', bob)).body.messages.map((m: { body: string }) => m.body),
    ).toEqual(['secret plan']);

    // an expired message cannot be acked or replied to, and leaves the inbox
    const stale = await hub.api('POST', '/v1/messages', alice, {
      to: 'bob',
      body: 'stale',
      idempotency_key: 'k3',
      ttl_s: 1,
    });
    await new Promise((r) => setTimeout(r, 1100));
    expect((await hub.api('POST', `/v1/messages/${stale.body.message.id}/ack`, bob)).body.code).toBe(
      'EXPIRED',
    );
    const late = await hub.api('POST', `/v1/messages/${stale.body.message.id}/reply`, bob, { body: 'late' });
    expect([late.status, late.body.code]).toEqual([410, 'EXPIRED']);
    expect(
      (await hub.api('GET', '/v1/inbox', bob)).body.messages.map((m: { body: string }) => m.body),
    ).toEqual(['secret plan']);

    // limits: the body, the TTL, the hop count, the request itself
    const big = 'x'.repeat(256 * 1024);
    expect(
      (await hub.api('POST', '/v1/messages', alice, { to: 'bob', body: big, idempotency_key: 'b1' })).status,
    ).toBe(201);
    const over = await hub.api('POST', '/v1/messages', alice, {
      to: 'bob',
      body: `${big}é`,
      idempotency_key: 'b2',
    });
    expect([over.status, over.body.code]).toEqual([413, 'BODY_TOO_LARGE']);
    // a chunked request past 2 MiB (no Content-Length to refuse up front) is cut off as it streams in
    const huge = await rawRequest(hub.port, '/v1/messages', {
      method: 'POST',
      headers: { authorization: `Bearer ${alice}`, 'content-type': 'application/json' },
      stream: { bytes: 3 * MiB, open: '{"to":"bob","idempotency_key":"b3","body":"', close: '"}' },
    });
    expect([huge.status, JSON.parse(huge.text).code]).toEqual([413, 'TOO_LARGE']);
    for (const ttl_s of [0, -5, 1.5, 7 * 24 * 3600 + 1]) {
      const r = await hub.api('POST', '/v1/messages', alice, {
        to: 'bob',
        body: 'x',
        idempotency_key: `t${ttl_s}`,
        ttl_s,
      });
      expect([r.status, r.body.code], `ttl ${ttl_s}`).toEqual([400, 'BAD_TTL']);
    }
    const loop = await hub.api('POST', '/v1/messages', alice, {
      to: 'bob',
      body: 'x',
      idempotency_key: 'h',
      hop: 99,
    });
    expect([loop.status, loop.body.code]).toEqual([400, 'HOP_LIMIT']);

    // revoking the project token (through the CLI) takes its agents' keys along; the other project is untouched
    const revoked = await hub.cli(['token', 'revoke', one.tokenId, '--json']);
    expect(revoked.code, revoked.stderr).toBe(0);
    expect(JSON.parse(revoked.stdout)).toEqual({ token_id: one.tokenId, agent_keys_revoked: 3 });
    for (const key of [alice, bob, carol]) expect((await hub.api('GET', '/v1/inbox', key)).status).toBe(401);
    expect((await hub.api('POST', '/v1/agents', one.token, { name: 'alice' })).status).toBe(401);
    // the CLI with its kept key is refused too, with the hub's code
    const viaCli = await hub.cli(['inbox', '--json'], { agent: 'alice', token: one.token });
    expect(viaCli.code).toBe(1);
    expect(JSON.parse(viaCli.stdout).code).toBe('UNAUTHORIZED');
    expect((await hub.api('GET', '/v1/inbox', mallory)).status).toBe(200);

    // a flood from one agent is cut off with 429, and only that agent
    const flood = await Promise.all(Array.from({ length: 80 }, () => hub.api('GET', '/v1/agents', mallory)));
    expect(flood.some((r) => r.status === 429 && r.body.code === 'RATE_LIMITED')).toBe(true);
    expect((await hub.api('GET', '/v1/agents', two.keys.bob)).status).toBe(200);

    // each refusal left an audit row with its code, and no secret
    const audit = await hub.api('GET', '/v1/audit', hub.adminToken);
    const codes = new Set(audit.body.refusals.map((r: { code: string }) => r.code));
    for (const code of [
      'UNAUTHORIZED',
      'NOT_FOUND',
      'UNKNOWN_AGENT',
      'EXPIRED',
      'BODY_TOO_LARGE',
      'TOO_LARGE',
      'BAD_TTL',
      'HOP_LIMIT',
      'RATE_LIMITED',
    ])
      expect(codes, code).toContain(code);
    const text = JSON.stringify(audit.body);
    for (const secret of [alice, bob, one.token, hub.adminToken, forged] as string[])
      expect(text).not.toContain(secret.slice(-43));
  });

  it('refuses to listen off loopback without an admin token of its own', async () => {
    const home = tempDir('keel-hub-sec-');
    const r = await keel(['hub', 'start', '--listen', '0.0.0.0:0', '--json'], { cwd: home, home });
    expect(r.code).toBe(2);
    expect(JSON.parse(r.stdout)).toMatchObject({ code: 'CONFIG_ERROR' });
    expect(r.stdout).toContain('KEEL_HUB_ADMIN_TOKEN');
  });

  it('a flood of bad tokens is refused without filling the audit table', async () => {
    const store = await openStore({ engine: 'sqlite', path: join(tempDir('keel-hub-flood-'), 'keel.db') });
    const hub = new HubStore(store);
    const app = createHubApp({
      version: 'test',
      hub,
      adminToken: 'admin',
      rate: new RateLimit(1000),
      wakeups: new Wakeups(store),
      metrics: () => '',
    });
    const refused = [];
    for (let i = 0; i < 400; i++)
      refused.push(
        (
          await app.request('/v1/inbox', {
            headers: { authorization: `Bearer kha_${'0'.repeat(18)}_${'x'.repeat(43)}` },
          })
        ).status,
      );
    expect(new Set(refused)).toEqual(new Set([401]));
    const [row] = await store.query<{ n: number }>('SELECT COUNT(*) AS n FROM hub_audit');
    expect(Number(row?.n)).toBeGreaterThan(0);
    expect(Number(row?.n)).toBeLessThan(400);
    const metrics = await (
      await app.request('/metrics', { headers: { authorization: 'Bearer admin' } })
    ).text();
    expect(Number(/keel_hub_unaudited_refusals_total (\d+)/.exec(metrics)?.[1])).toBe(400 - Number(row?.n));
    await store.close();
  });
});
