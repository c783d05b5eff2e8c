/**
 * kill -9 of the hub under load, then a restart on the same address: every send the hub answered is
 * there, idempotent retries made no second message, and replies retried across the crash made no
 * second reply. On SQLite and on PostgreSQL.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openStore, type StoreTarget } from '../../src/store/engine.js';
import { freshPgDatabase, skipReason } from '../helpers/pg.js';
import { tempDir } from '../helpers/tmp.js';
import { projectWithAgents, startHub } from './hub-harness.js';

const pgUrl = await freshPgDatabase();
const engines = [
  { name: 'sqlite', skip: '' },
  { name: 'postgres', skip: pgUrl ? '' : skipReason },
];

const N = 240;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** POST/GET with retries while the hub is down; the answer once it comes. */
async function call(
  url: string,
  key: string,
  method: string,
  path: string,
  body?: unknown,
  // biome-ignore lint/suspicious/noExplicitAny: the hub's documented JSON
): Promise<{ status: number; json: any }> {
  for (;;) {
    try {
      const res = await fetch(`${url}${path}`, {
        method,
        headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
        ...(body ? { body: JSON.stringify(body) } : {}),
      });
      const json = await res.json();
      if (res.status >= 500) throw new Error(`HTTP ${res.status}`);
      return { status: res.status, json };
    } catch {
      await sleep(30);
    }
  }
}

describe.each(engines)('hub crash on $name', (engine) => {
  it.skipIf(engine.skip !== '')(
    'kill -9 under load and a restart: nothing answered is lost, retries duplicate nothing',
    { timeout: 120_000 },
    async () => {
      const home = tempDir('keel-hub-crash-');
      const cwd = tempDir('keel-hub-crash-cwd-');
      const env: Record<string, string> = engine.name === 'postgres' ? { KEEL_STORE: pgUrl as string } : {};
      const first = await startHub({ home, cwd, env });
      const { url, port } = first;
      const { keys } = await projectWithAgents(first, 'load', 'alice', 'bob');
      const alice = keys.alice as string;
      const bob = keys.bob as string;

      // alice sends N requests, 16 at a time, each retried under its key until the hub answers
      const answered = new Map<string, string>();
      let next = 0;
      const sender = async () => {
        while (next < N) {
          const i = next++;
          const r = await call(url, alice, 'POST', '/v1/messages', {
            to: 'bob',
            body: `job ${i}`,
            idempotency_key: `job-${i}`,
          });
          expect(r.status, JSON.stringify(r.json)).toBeLessThan(300);
          answered.set(`job-${i}`, r.json.message.id);
        }
      };
      // bob replies to whatever his inbox shows, retrying across the crash
      const replied = new Set<string>();
      const responder = async () => {
        while (replied.size < N) {
          const inbox = await call(url, bob, 'GET', '/v1/inbox');
          const open = (inbox.json.messages ?? []) as Array<{ id: string; body: string }>;
          if (!open.length) await sleep(20);
          for (const m of open) {
            const r = await call(url, bob, 'POST', `/v1/messages/${m.id}/reply`, { body: `done: ${m.body}` });
            expect(r.status, JSON.stringify(r.json)).toBeLessThan(300);
            replied.add(m.id);
          }
        }
      };
      let answeredAtKill = 0;
      let restarted: Awaited<ReturnType<typeof startHub>> | undefined;
      const killer = async () => {
        while (answered.size < N / 3) await sleep(5);
        answeredAtKill = answered.size;
        await first.kill();
        restarted = await startHub({ home, cwd, env, listen: `127.0.0.1:${port}` });
      };
      await Promise.all([killer(), ...Array.from({ length: 16 }, sender), responder()]);
      await restarted?.stop();
      // the hub died with work in flight
      expect(answeredAtKill).toBeLessThan(N);

      const target: StoreTarget =
        engine.name === 'postgres'
          ? { engine: 'postgres', url: pgUrl as string }
          : { engine: 'sqlite', path: join(home, 'keel.db') };
      const store = await openStore(target);
      try {
        const sent = await store.query<{ id: string; idempotency_key: string; state: string }>(
          `SELECT m.id, m.idempotency_key, m.state FROM hub_messages m JOIN hub_agents a ON a.id = m.sender_id WHERE a.name = 'alice'`,
        );
        // one message per key, and the one the hub answered with (before or after the crash)
        expect(sent).toHaveLength(N);
        expect(new Map(sent.map((m) => [m.idempotency_key, m.id]))).toEqual(answered);
        expect(sent.every((m) => m.state === 'replied')).toBe(true);
        const replies = await store.query<{ reply_to: string; n: number }>(
          `SELECT reply_to, COUNT(*) AS n FROM hub_messages WHERE reply_to IS NOT NULL GROUP BY reply_to`,
        );
        expect(replies).toHaveLength(N);
        expect(replies.filter((r) => Number(r.n) !== 1)).toEqual([]);
      } finally {
        await store.close();
      }
    },
  );
});
