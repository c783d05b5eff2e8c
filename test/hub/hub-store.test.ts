/** The hub store's contract, on SQLite and on PostgreSQL: one suite, both engines. */
import { describe, expect, it } from 'vitest';
import { GroupCommit } from '../../src/hub/group-commit.js';
import { type Caller, HubError, HubStore, REDELIVER_MS } from '../../src/hub/hub-store.js';
import type { Store } from '../../src/store/engine.js';
import { storeEngines } from '../helpers/engines.js';

const engines = await storeEngines();

function clock(start = 1_800_000_000_000) {
  let t = start;
  return {
    now: () => t,
    advance: (ms: number) => {
      t += ms;
    },
  };
}

async function refusal(p: Promise<unknown>): Promise<{ status: number; code: string }> {
  try {
    await p;
  } catch (err) {
    if (err instanceof HubError) return { status: err.status, code: err.code };
    throw err;
  }
  throw new Error('expected a refusal');
}

let projects = 0;

/** A project with agents registered under one project token. */
async function project(hub: HubStore, ...names: string[]) {
  const created = await hub.createProjectToken(`p${++projects}-${Math.random().toString(36).slice(2, 8)}`);
  const auth = await hub.projectOf(created.token);
  if (!auth) throw new Error('the new token opens nothing');
  const agents: Record<string, Caller & { key: string }> = {};
  for (const name of names) {
    const reg = await hub.registerAgent(auth, name);
    const caller = await hub.agentOf(reg.agent_key);
    if (!caller) throw new Error('the new key opens nothing');
    agents[name] = { ...caller, key: reg.agent_key };
  }
  return { token: created, auth, agents };
}

describe.each(engines)('hub store on $name', (engine) => {
  const test = it.skipIf(engine.skip !== '');
  let store: Store;
  const c = clock();
  const open = async () => {
    store ??= await engine.open();
    return new HubStore(store, { now: c.now });
  };

  test('tokens: only hashes are kept, a token opens its own project, a wrong secret or kind opens nothing', async () => {
    const hub = await open();
    const { token, agents } = await project(hub, 'a');
    const rows = await store.query<{ hash: string }>('SELECT hash FROM hub_tokens');
    // `khp_<18 hex id>_<43-character secret>`: the secret itself may hold a `_`
    const secret = token.token.slice(4 + 18 + 1);
    expect(secret).toHaveLength(43);
    for (const row of rows) {
      expect(row.hash).toMatch(/^[0-9a-f]{64}$/);
      expect(token.token).not.toContain(row.hash);
    }
    expect(JSON.stringify(await hub.tokens())).not.toContain(secret);
    // the same id with another secret, an agent key offered as a project token, and the reverse
    const forged = `${token.token.slice(0, 4 + 18 + 1)}${'A'.repeat(43)}`;
    expect(await hub.projectOf(forged)).toBeUndefined();
    expect(await hub.projectOf(agents.a?.key as string)).toBeUndefined();
    expect(await hub.agentOf(token.token)).toBeUndefined();
  });

  test('send, deliver, ack, reply: states move in order, numbered per recipient, the reply goes back', async () => {
    const hub = await open();
    const { agents } = await project(hub, 'alice', 'bob');
    const alice = agents.alice as Caller;
    const bob = agents.bob as Caller;
    const first = await hub.send(alice, { to: 'bob', body: 'one', idempotency_key: 'k1' });
    const second = await hub.send(alice, { to: 'bob', body: 'two', idempotency_key: 'k2' });
    expect([first.message.seq, second.message.seq, first.message.state]).toEqual([1, 2, 'queued']);
    expect((await hub.due(bob.agentId, { all: true })).map((m) => m.body)).toEqual(['one', 'two']);
    await hub.markDelivered(bob.agentId, [first.message.id, second.message.id]);
    // delivered and within 30 s: not due again yet
    expect(await hub.due(bob.agentId, { all: false, after: 2 })).toEqual([]);
    expect((await hub.ack(bob, first.message.id)).state).toBe('acked');
    const reply = await hub.reply(bob, first.message.id, { body: 'done' });
    expect(reply.message).toMatchObject({
      from: 'bob',
      to: 'alice',
      reply_to: first.message.id,
      hop: 1,
      seq: 1,
    });
    const seen = await hub.message(alice, first.message.id);
    expect(seen.message.state).toBe('replied');
    expect(seen.reply?.body).toBe('done');
    // the reply is in alice's stream, not bob's
    expect((await hub.due(alice.agentId, { all: true })).map((m) => m.id)).toEqual([reply.message.id]);
  });

  test('a delivered message not acked falls due again after 30 s, computed from its row', async () => {
    const hub = await open();
    const { agents } = await project(hub, 'a', 'b');
    const sent = await hub.send(agents.a as Caller, { to: 'b', body: 'x', idempotency_key: 'k' });
    const b = (agents.b as Caller).agentId;
    await hub.markDelivered(b, [sent.message.id]);
    expect(await hub.nextRedelivery(b)).toBe(c.now() + REDELIVER_MS);
    c.advance(REDELIVER_MS);
    // a fresh store object (a restarted hub) sees the same thing: nothing was kept in memory
    const again = new HubStore(store, { now: c.now });
    expect((await again.due(b, { all: false, after: sent.message.seq })).map((m) => m.id)).toEqual([
      sent.message.id,
    ]);
    await again.markDelivered(b, [sent.message.id]);
    expect((await again.message(agents.b as Caller, sent.message.id)).message.deliveries).toBe(2);
  });

  test('fewer requests per message: a reply acks what it answers; ackMany acks only the caller’s live messages', async () => {
    const hub = await open();
    const { agents } = await project(hub, 'a', 'b', 'c');
    const a = agents.a as Caller;
    const b = agents.b as Caller;
    // replied without an ack first: acked by the reply, never delivered again
    const asked = await hub.send(a, { to: 'b', body: 'q', idempotency_key: 'q' });
    await hub.markDelivered(b.agentId, [asked.message.id]);
    const reply = await hub.reply(b, asked.message.id, { body: 'r' });
    c.advance(REDELIVER_MS);
    expect(await hub.due(b.agentId, { all: true })).toEqual([]);
    expect(await hub.nextRedelivery(b.agentId)).toBeUndefined();

    const send = (from: Caller, to: string, key: string, ttl_s?: number) =>
      hub.send(from, { to, body: key, idempotency_key: key, ...(ttl_s ? { ttl_s } : {}) });
    const one = await send(b, 'a', 'one');
    const two = await send(b, 'a', 'two');
    const acked = await send(b, 'a', 'acked');
    await hub.ack(a, acked.message.id);
    const cancelled = await send(b, 'a', 'cancelled');
    await hub.cancel(b, cancelled.message.id);
    const stale = await send(b, 'a', 'stale', 1);
    const others = await send(b, 'c', 'for-c');
    c.advance(1000);
    const ids = [
      one.message.id,
      two.message.id,
      reply.message.id,
      acked.message.id,
      asked.message.id, // a's own message to b: not a's to ack
      others.message.id, // c's
      cancelled.message.id,
      stale.message.id,
      'm_nosuchmessage',
      one.message.id, // twice is once
    ];
    expect(await hub.ackMany(a, ids)).toEqual({
      acked: [one.message.id, two.message.id, reply.message.id, acked.message.id],
      skipped: [
        asked.message.id,
        others.message.id,
        cancelled.message.id,
        stale.message.id,
        'm_nosuchmessage',
      ],
    });
    const state = async (who: Caller, id: string) => (await hub.message(who, id)).message.state;
    expect(await state(a, one.message.id)).toBe('acked');
    expect(await state(a, reply.message.id)).toBe('acked');
    expect(await state(agents.c as Caller, others.message.id)).toBe('queued');
    expect(await state(a, cancelled.message.id)).toBe('cancelled');
    expect(await state(a, stale.message.id)).toBe('expired');
    expect(await state(a, asked.message.id)).toBe('replied');
    expect(await hub.due(a.agentId, { all: true })).toEqual([]);
  });

  test('idempotency: the same request is the original back, another request under the key is 409', async () => {
    const hub = await open();
    const { agents } = await project(hub, 'a', 'b');
    const a = agents.a as Caller;
    const one = await hub.send(a, { to: 'b', body: 'same', idempotency_key: 'key' });
    const two = await hub.send(a, { to: 'b', body: 'same', idempotency_key: 'key' });
    expect([one.created, two.created, two.message.id]).toEqual([true, false, one.message.id]);
    expect(await refusal(hub.send(a, { to: 'b', body: 'other', idempotency_key: 'key' }))).toEqual({
      status: 409,
      code: 'IDEMPOTENCY_CONFLICT',
    });
    // another sender's key space is its own
    const b = await hub.send(agents.b as Caller, { to: 'a', body: 'same', idempotency_key: 'key' });
    expect(b.created).toBe(true);
    // a reply under a key b used for that send is refused, and leaves the message unanswered
    expect(
      await refusal(hub.reply(agents.b as Caller, one.message.id, { body: 'ok', idempotency_key: 'key' })),
    ).toEqual({ status: 409, code: 'IDEMPOTENCY_CONFLICT' });
    expect((await hub.message(a, one.message.id)).message).toMatchObject({ state: 'queued', reply_id: null });
    // one reply per message: a retry returns it, a second different reply is refused
    const r1 = await hub.reply(agents.b as Caller, one.message.id, { body: 'ok' });
    const r2 = await hub.reply(agents.b as Caller, one.message.id, { body: 'ok' });
    expect([r2.created, r2.message.id]).toEqual([false, r1.message.id]);
    expect(
      await refusal(hub.reply(agents.b as Caller, one.message.id, { body: 'changed my mind' })),
    ).toMatchObject({
      status: 409,
    });
    expect(
      await refusal(
        hub.reply(agents.b as Caller, one.message.id, { body: 'again', idempotency_key: 'fresh' }),
      ),
    ).toEqual({ status: 409, code: 'ALREADY_REPLIED' });
    const count = await store.query<{ n: number }>(
      'SELECT COUNT(*) AS n FROM hub_messages WHERE reply_to = $1',
      [one.message.id],
    );
    expect(Number(count[0]?.n)).toBe(1);
  });

  test('isolation: another agent cannot ack, reply to or read a message; another project cannot name it', async () => {
    const hub = await open();
    const { agents } = await project(hub, 'a', 'b', 'c');
    const other = await project(hub, 'b');
    const sent = await hub.send(agents.a as Caller, { to: 'b', body: 'for b only', idempotency_key: 'k' });
    const id = sent.message.id;
    for (const intruder of [agents.c as Caller, other.agents.b as Caller]) {
      expect(await refusal(hub.ack(intruder, id))).toEqual({ status: 404, code: 'NOT_FOUND' });
      expect(await refusal(hub.reply(intruder, id, { body: 'mine now' }))).toEqual({
        status: 404,
        code: 'NOT_FOUND',
      });
      expect(await refusal(hub.message(intruder, id))).toEqual({ status: 404, code: 'NOT_FOUND' });
      expect((await hub.inbox(intruder)).map((m) => m.id)).not.toContain(id);
      expect(
        await refusal(hub.send(intruder, { to: 'x', body: '', idempotency_key: 'r', reply_to: id })),
      ).toMatchObject({
        status: 404,
      });
    }
    // the sender cannot ack its own message for the recipient either
    expect(await refusal(hub.ack(agents.a as Caller, id))).toEqual({ status: 404, code: 'NOT_FOUND' });
    // a name in another project is not reachable
    expect(
      await refusal(hub.send(other.agents.b as Caller, { to: 'a', body: 'hi', idempotency_key: 'z' })),
    ).toEqual({
      status: 404,
      code: 'UNKNOWN_AGENT',
    });
    expect((await hub.peers(other.auth.projectId)).map((p) => p.name)).toEqual(['b']);
  });

  test('expiry: past its TTL an untaken message is expired for every reader, and cannot be acked or replied', async () => {
    const hub = await open();
    const { agents } = await project(hub, 'a', 'b');
    const sent = await hub.send(agents.a as Caller, {
      to: 'b',
      body: 'soon stale',
      idempotency_key: 'k',
      ttl_s: 1,
    });
    c.advance(1000);
    expect(await hub.due((agents.b as Caller).agentId, { all: true })).toEqual([]);
    expect(await refusal(hub.ack(agents.b as Caller, sent.message.id))).toEqual({
      status: 410,
      code: 'EXPIRED',
    });
    expect(await refusal(hub.reply(agents.b as Caller, sent.message.id, { body: 'late' }))).toEqual({
      status: 410,
      code: 'EXPIRED',
    });
    expect(await hub.expire()).toBeGreaterThanOrEqual(1);
    expect((await hub.message(agents.a as Caller, sent.message.id)).message.state).toBe('expired');
  });

  test('revoking a project token revokes the agent keys registered with it, not another token’s', async () => {
    const hub = await open();
    const { token, auth, agents } = await project(hub, 'a');
    const second = await hub.createProjectToken(
      (
        await store.query<{ name: string }>('SELECT name FROM hub_projects WHERE id = $1', [auth.projectId])
      )[0]?.name as string,
    );
    const auth2 = await hub.projectOf(second.token);
    const kept = await hub.registerAgent(auth2 as NonNullable<typeof auth2>, 'b');
    expect(await hub.revokeToken(token.token_id)).toEqual({
      token_id: token.token_id,
      agent_keys_revoked: 1,
    });
    expect(await hub.agentOf(agents.a?.key as string)).toBeUndefined();
    expect(await hub.projectOf(token.token)).toBeUndefined();
    expect(await refusal(hub.registerAgent(auth, 'c'))).toEqual({ status: 401, code: 'UNAUTHORIZED' });
    expect(await hub.agentOf(kept.agent_key)).toBeDefined();
    expect(await hub.revokeToken('nosuchtoken')).toBeUndefined();
  });

  test('hop limit: a chain of forwards stops at the limit', async () => {
    const hub = await open();
    const { agents } = await project(hub, 'a', 'b');
    expect(
      await refusal(hub.send(agents.a as Caller, { to: 'b', body: 'x', idempotency_key: 'h', hop: 17 })),
    ).toEqual({
      status: 400,
      code: 'HOP_LIMIT',
    });
    let parent = await hub.send(agents.a as Caller, { to: 'b', body: 'x', idempotency_key: 'h0', hop: 15 });
    parent = await hub.send(agents.b as Caller, {
      to: 'a',
      body: 'fwd',
      idempotency_key: 'h1',
      reply_to: parent.message.id,
    });
    expect(parent.message.hop).toBe(16);
    expect(
      await refusal(
        hub.send(agents.a as Caller, {
          to: 'b',
          body: 'fwd',
          idempotency_key: 'h2',
          reply_to: parent.message.id,
        }),
      ),
    ).toEqual({ status: 400, code: 'HOP_LIMIT' });
  });

  test('group commit: concurrent writes share transactions, each answered after commit; one refusal spoils none', async () => {
    store ??= await engine.open();
    let commits = 0;
    const group = new GroupCommit(store, { onCommit: () => commits++, maxOps: 64 });
    const hub = new HubStore(store, { now: c.now, write: (op) => group.run(op) });
    const { agents } = await project(hub, 'a', 'b');
    commits = 0;
    const sends = Array.from({ length: 40 }, (_, i) =>
      hub.send(agents.a as Caller, { to: i === 7 ? 'nobody' : 'b', body: `m${i}`, idempotency_key: `g${i}` }),
    );
    const settled = await Promise.allSettled(sends);
    expect(settled.filter((s) => s.status === 'fulfilled')).toHaveLength(39);
    expect(settled[7]).toMatchObject({ status: 'rejected', reason: { code: 'UNKNOWN_AGENT' } });
    expect(commits).toBeLessThan(10);
    // numbers are dense and in order in b's stream
    const seqs = (await hub.due((agents.b as Caller).agentId, { all: true })).map((m) => m.seq);
    expect(seqs).toEqual(Array.from({ length: 39 }, (_, i) => i + 1));
  });

  test('the same send and the same reply through two connections at once (two hub processes): one message, one reply', async () => {
    const hub = await open();
    const other = new HubStore(await engine.open(), { now: c.now });
    const { agents } = await project(hub, 'a', 'b');
    const a = agents.a as Caller;
    const b = agents.b as Caller;
    for (let round = 0; round < 5; round++) {
      const input = { to: 'b', body: `same ${round}`, idempotency_key: `twin-${round}` };
      const [x, y] = await Promise.all([hub.send(a, input), other.send(a, input)]);
      expect(x.message.id).toBe(y.message.id);
      expect([x.created, y.created].sort()).toEqual([false, true]);
      const [r, q] = await Promise.all([
        hub.reply(b, x.message.id, { body: 'ok' }),
        other.reply(b, x.message.id, { body: 'ok' }),
      ]);
      expect(r.message.id).toBe(q.message.id);
    }
  });
});
