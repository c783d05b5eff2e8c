/**
 * What the hub's hot reads cost, checked without a clock: the stream's and the inbox's reads go by
 * (recipient, state), never through every message an agent ever had; and on PostgreSQL a hint heard
 * wakes only the streams whose agents have queued messages, with one read for all of them.
 */
import { describe, expect, it } from 'vitest';
import { HubStore } from '../../src/hub/hub-store.js';
import { Wakeups } from '../../src/hub/wakeups.js';
import type { Store } from '../../src/store/engine.js';
import { storeEngines } from '../helpers/engines.js';

const engines = await storeEngines();

/** The store, recording the text of every read made outside a transaction. */
function recording(store: Store): { store: Store; reads: string[] } {
  const reads: string[] = [];
  const wrapped: Store = Object.create(store);
  wrapped.query = <T>(text: string, params?: readonly unknown[]) => {
    reads.push(text);
    return store.query<T>(text, params);
  };
  return { store: wrapped, reads };
}

async function agents(hub: HubStore, ...names: string[]) {
  const created = await hub.createProjectToken(`p-${Math.random().toString(36).slice(2, 8)}`);
  const auth = await hub.projectOf(created.token);
  if (!auth) throw new Error('the new token opens nothing');
  const out = [];
  for (const name of names) {
    const caller = await hub.agentOf((await hub.registerAgent(auth, name)).agent_key);
    if (!caller) throw new Error('the new key opens nothing');
    out.push(caller);
  }
  return out;
}

describe.each(engines)('hub reads on $name', (engine) => {
  const test = it.skipIf(engine.skip !== '');

  if (engine.name === 'sqlite')
    test("the stream's and the inbox's reads use the (recipient, state) index, not every message by seq", async () => {
      const base = await engine.open();
      const { store, reads } = recording(base);
      const hub = new HubStore(store);
      const [a, b] = await agents(hub, 'a', 'b');
      if (!a || !b) throw new Error('no agents');
      await hub.send(a, { to: 'b', body: 'x', idempotency_key: 'k1' });
      reads.length = 0;
      await hub.due(b.agentId, { all: true });
      await hub.due(b.agentId, { all: false, after: 1 });
      await hub.inbox(b);
      expect(reads).toHaveLength(3);
      for (const text of reads) {
        const plan = (
          await base.query<{ detail: string }>(`EXPLAIN QUERY PLAN ${text}`, [b.agentId, 0, 0, 0, 0])
        ).map((r) => r.detail);
        const messages = plan.filter((d) => / m USING /.test(d));
        expect(messages, `${text}\n${plan.join('\n')}`).toEqual([
          expect.stringContaining('USING INDEX hub_messages_pending (recipient_id=? AND state=?)'),
        ]);
      }
    });

  if (engine.name === 'postgres')
    test('a hint heard wakes only the agents with queued messages, with one read for all the streams', async () => {
      const base = await engine.open();
      const { store, reads } = recording(base);
      const hub = new HubStore(store);
      const names = Array.from({ length: 20 }, (_, i) => `r${i}`);
      const [sender, ...recipients] = await agents(hub, 's', ...names);
      if (!sender) throw new Error('no agents');
      const wakeups = new Wakeups(store);
      await wakeups.start((ids) => hub.queuedAmong(ids));
      try {
        const woken = new Set<string>();
        const waits = recipients.map((r) => {
          const waiter = wakeups.subscribe(r.agentId);
          return waiter.wait(3000).then((w) => {
            if (w) woken.add(r.name);
            waiter.close();
          });
        });
        // another process's send: committed there, only hinted here
        const other = new HubStore(await engine.open());
        await other.send(sender, { to: 'r7', body: 'x', idempotency_key: 'k' });
        reads.length = 0;
        other.store.hint('keel_hub');
        await Promise.all(waits);
        expect([...woken]).toEqual(['r7']);
        expect(reads.filter((t) => t.includes('hub_messages'))).toHaveLength(1);
      } finally {
        await wakeups.close();
      }
    });
});
