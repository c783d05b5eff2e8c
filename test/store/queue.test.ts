/** The run queue's contract, on SQLite and on PostgreSQL: one suite, both engines. */
import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../../src/store/engine.js';
import { appendEvent, LEASE_MS, QUEUE_CHANNEL, type QueueEvent, RunQueue } from '../../src/store/queue.js';
import { storeEngines } from '../helpers/engines.js';

const engines = await storeEngines();

/** A clock the test moves: leases expire when the test says so, not after a wait. */
function clock(start = 1_000_000) {
  let t = start;
  return {
    now: () => t,
    advance: (ms: number) => {
      t += ms;
    },
  };
}

const tasks = (n: number) => Array.from({ length: n }, (_, i) => ({ id: `t${i + 1}`, spec: { n: i + 1 } }));

/** Most tasks held at once, replayed from the run's journal in its order. */
function mostOverlapping(events: QueueEvent[]): number {
  let held = 0;
  let most = 0;
  for (const e of events) {
    if (e.type === 'claimed') held++;
    if (e.type === 'finished' || e.type === 'released' || e.type === 'expired') held--;
    most = Math.max(most, held);
  }
  return most;
}

describe.each(engines)('run queue on $name', (engine) => {
  let store: Store;
  let other: Store;
  beforeAll(async () => {
    if (engine.skip) return;
    store = await engine.open();
    other = await engine.open();
  });
  const test = it.skipIf(engine.skip !== '');

  test('claims in order up to the cap; a finished task frees its slot; the journal shows it', async () => {
    const q = new RunQueue(store);
    const run = randomUUID();
    expect(
      await q.createRun(run, { concurrency: 2, spec: { file: 'tasks.jsonl' }, tasks: tasks(3) }),
    ).toEqual({
      created: true,
    });
    // the same id again is a resume, not a second run
    expect(await q.createRun(run, { concurrency: 9, tasks: tasks(5) })).toEqual({ created: false });
    const a = await q.claim(run, 'w1');
    const b = await q.claim(run, 'w2');
    expect([a?.taskId, b?.taskId, a?.attempt]).toEqual(['t1', 't2', 1]);
    expect(a?.spec).toEqual({ n: 1 });
    expect(await q.claim(run, 'w3')).toBeUndefined();
    expect(a && (await q.finish(a, 'done', { verdict: 'verified' }))).toBe(true);
    const c = await q.claim(run, 'w3');
    expect(c?.taskId).toBe('t3');
    const view = await q.run(run);
    expect(view).toMatchObject({
      concurrency: 2,
      running: 2,
      status: 'running',
      spec: { file: 'tasks.jsonl' },
    });
    expect(view?.counts).toEqual({ queued: 0, running: 2, done: 1, failed: 0, cancelled: 0 });
    const listed = await q.tasks(run);
    expect(listed.map((t) => [t.id, t.state])).toEqual([
      ['t1', 'done'],
      ['t2', 'running'],
      ['t3', 'running'],
    ]);
    expect(listed[0]?.result).toEqual({ verdict: 'verified' });
    const journal = await q.events(run);
    expect(journal.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5]);
    expect(journal.map((e) => e.type)).toEqual(['run_created', 'claimed', 'claimed', 'finished', 'claimed']);
    expect((await q.events(run, 4)).map((e) => e.seq)).toEqual([5]);
  });

  test('a renewed lease holds; an expired one is requeued by another process and the old attempt is fenced', async () => {
    const time = clock();
    const q1 = new RunQueue(store, time);
    const q2 = new RunQueue(other, time); // another process, on its own connection
    const run = randomUUID();
    await q1.createRun(run, { concurrency: 1, tasks: tasks(1) });
    const first = await q1.claim(run, 'w1');
    if (!first) throw new Error('nothing claimed');
    time.advance(LEASE_MS - 2_000);
    expect(await q1.renew(first)).toBe('held');
    time.advance(LEASE_MS - 2_000); // past the first lease, within the renewed one
    expect(await q2.requeueExpired(run)).toBe(0);
    expect(await q2.claim(run, 'w2')).toBeUndefined();
    time.advance(LEASE_MS); // worker 1 stopped renewing: dead, or its event loop stuck
    expect(await q2.requeueExpired(run)).toBe(1);
    const second = await q2.claim(run, 'w2');
    expect(second).toMatchObject({ taskId: 't1', attempt: 2 });
    if (!second) throw new Error('nothing claimed');
    // the zombie of attempt 1 wakes up: it can neither renew, nor finish, nor give the task back
    expect(await q1.renew(first)).toBe('lost');
    expect(await q1.finish(first, 'done', { by: 'zombie' })).toBe(false);
    expect(await q1.release(first, 'zombie')).toBe(false);
    expect(await q2.finish(second, 'failed', { by: 'w2' })).toBe(true);
    expect(await q2.finish(second, 'done')).toBe(false); // once only
    const [task] = await q1.tasks(run);
    expect(task).toMatchObject({ state: 'failed', attempt: 2, result: { by: 'w2' } });
    expect((await q1.run(run))?.running).toBe(0);
    const journal = await q1.events(run);
    expect(journal.filter((e) => e.taskId === 't1').map((e) => [e.type, e.attempt])).toEqual([
      ['claimed', 1],
      ['expired', 1],
      ['claimed', 2],
      ['finished', 2],
    ]);
  });

  test('the supervisor holds a starting worker’s lease until the worker’s first renewal, fenced by attempt', async () => {
    const time = clock();
    const sup = new RunQueue(store, time);
    const q2 = new RunQueue(other, time); // a worker, or another supervisor, on its own connection
    const run = randomUUID();
    await sup.createRun(run, { concurrency: 2, tasks: tasks(2) });
    const slow = await sup.claim(run, 'sup');
    if (!slow) throw new Error('nothing claimed');
    // the worker takes three leases to start: the supervisor's holds keep its attempt
    for (let i = 0; i < 3; i++) {
      time.advance(LEASE_MS - 2_000);
      expect(await sup.holdForWorker(slow)).toBe(true);
    }
    expect(await q2.requeueExpired(run)).toBe(0);
    // the worker renews for itself: the supervisor's hold stops there, and only the worker keeps it alive
    expect(await q2.renew(slow)).toBe('held');
    expect(await sup.holdForWorker(slow)).toBe(false);
    time.advance(LEASE_MS + 1); // the worker stopped renewing: dead, or hung
    expect(await sup.holdForWorker(slow)).toBe(false);
    expect(await q2.requeueExpired(run)).toBe(1);
    // attempt 2 starts afresh (the supervisor holds it again); attempt 1's hold cannot touch its lease
    const next = await sup.claim(run, 'sup');
    expect(next).toMatchObject({ taskId: 't1', attempt: 2 });
    if (!next) throw new Error('nothing claimed');
    const leaseOf = async () => (await sup.tasks(run)).find((t) => t.id === 't1')?.leaseUntil;
    const claimedUntil = await leaseOf();
    time.advance(1_000);
    expect(await sup.holdForWorker(slow)).toBe(false);
    expect(await leaseOf()).toBe(claimedUntil);
    expect(await sup.holdForWorker(next)).toBe(true);
    expect(await leaseOf()).toBe((claimedUntil ?? 0) + 1_000);
    // a finished attempt is held by no one
    expect(await sup.finish(next, 'done')).toBe(true);
    expect(await sup.holdForWorker(next)).toBe(false);
    // a worker that dies before its first renewal: its supervisor stops holding, the lease expires
    const dies = await sup.claim(run, 'sup');
    expect(dies).toMatchObject({ taskId: 't2', attempt: 1 });
    time.advance(LEASE_MS + 1);
    expect(await q2.claim(run, 'sup2')).toMatchObject({ taskId: 't2', attempt: 2 });
  });

  test('a claim requeues expired leases itself, so a dead worker never holds a slot', async () => {
    const time = clock();
    const q = new RunQueue(store, time);
    const run = randomUUID();
    await q.createRun(run, { concurrency: 1, tasks: tasks(2) });
    await q.claim(run, 'dies');
    time.advance(LEASE_MS + 1);
    expect(await q.claim(run, 'w2')).toMatchObject({ taskId: 't1', attempt: 2 });
  });

  test('pause for the provider stops dispatch until resumed; a released task goes back to the queue', async () => {
    const q = new RunQueue(store);
    const run = randomUUID();
    await q.createRun(run, { concurrency: 2, tasks: tasks(2) });
    const a = await q.claim(run, 'w1');
    if (!a) throw new Error('nothing claimed');
    expect(await q.pause(run, 'provider: 401 authentication refused')).toBe(true);
    expect(await q.claim(run, 'w2')).toBeUndefined();
    expect(await q.release(a, 'provider: 401')).toBe(true);
    expect(await q.run(run)).toMatchObject({
      status: 'paused_provider',
      statusReason: 'provider: 401 authentication refused',
      running: 0,
      counts: { queued: 2 },
    });
    expect(await q.resume(run)).toBe(true);
    expect(await q.resume(run)).toBe(false);
    expect(await q.claim(run, 'w2')).toMatchObject({ taskId: 't1', attempt: 2 });
  });

  test('cancel: queued tasks are cancelled, nothing starts, a running attempt learns it and finishes as cancelled', async () => {
    const time = clock();
    const q = new RunQueue(store, time);
    const run = randomUUID();
    await q.createRun(run, { concurrency: 2, tasks: tasks(4) });
    const a = await q.claim(run, 'w1');
    const b = await q.claim(run, 'w2');
    if (!a || !b) throw new Error('nothing claimed');
    expect(await q.cancel(run)).toBe(true);
    expect(await q.cancel(run)).toBe(false);
    expect(await q.resume(run)).toBe(false); // a cancelled run is not resumed as if paused
    expect(await q.claim(run, 'w3')).toBeUndefined();
    expect(await q.renew(a)).toBe('cancelled');
    expect(await q.finish(a, 'cancelled')).toBe(true);
    time.advance(LEASE_MS + 1); // b's worker died: its task is cancelled, not queued again
    expect(await q.requeueExpired(run)).toBe(1);
    expect((await q.run(run))?.counts).toEqual({ queued: 0, running: 0, done: 0, failed: 0, cancelled: 4 });
  });

  test('a change hints a listener on another connection (its own, for LISTEN) to re-read', async () => {
    let hints = 0;
    let heard = () => {};
    const first = new Promise<void>((resolve) => {
      heard = resolve;
    });
    const stop = await other.listen(QUEUE_CHANNEL, () => {
      hints++;
      heard();
    });
    try {
      const q = new RunQueue(store);
      const run = randomUUID();
      await q.createRun(run, { concurrency: 4, tasks: tasks(4) });
      await Promise.all([1, 2, 3, 4].map((i) => q.claim(run, `w${i}`)));
      await first;
      // the listener re-reads and finds the four claims however many hints arrived
      expect((await new RunQueue(other).run(run))?.running).toBe(4);
      expect(hints).toBeGreaterThan(0);
    } finally {
      await stop();
    }
  });

  test('8 concurrent claimers on their own connections never exceed the cap', async () => {
    const run = randomUUID();
    const cap = 3;
    const total = 32;
    const setup = new RunQueue(store);
    await setup.createRun(run, { concurrency: cap, tasks: tasks(total) });
    const claimers = await Promise.all(Array.from({ length: 8 }, () => engine.open()));
    let held = 0;
    let mostHeld = 0;
    let finished = 0;
    const seen: string[] = [];
    await Promise.all(
      claimers.map(async (conn, i) => {
        const q = new RunQueue(conn);
        while (finished < total) {
          const lease = await q.claim(run, `w${i}`);
          if (!lease) {
            await new Promise((r) => setTimeout(r, 2));
            continue;
          }
          held++;
          mostHeld = Math.max(mostHeld, held);
          seen.push(lease.taskId);
          await new Promise((r) => setTimeout(r, Math.random() * 4));
          held--;
          expect(await q.finish(lease, 'done')).toBe(true);
          finished++;
        }
      }),
    );
    expect(mostHeld).toBeLessThanOrEqual(cap);
    expect(seen.sort()).toEqual(
      tasks(total)
        .map((t) => t.id)
        .sort(),
    );
    const journal = await setup.events(run);
    expect(mostOverlapping(journal)).toBeLessThanOrEqual(cap);
    expect(mostOverlapping(journal)).toBeGreaterThan(1); // they did run side by side
    expect(journal.map((e) => e.seq)).toEqual(journal.map((_, i) => i + 1));
    expect((await setup.run(run))?.counts.done).toBe(total);
  });

  test('two interleaved slow transactions lose no row for a reader following the journal', async () => {
    const q = new RunQueue(store);
    const run = randomUUID();
    await q.createRun(run, { concurrency: 1, tasks: [] });
    let cursor = 1; // past run_created
    const read: number[] = [];
    const follow = async () => {
      for (const e of await q.events(run, cursor)) {
        read.push(e.seq);
        cursor = e.seq;
      }
    };
    const gate = () => {
      let open = () => {};
      const opened = new Promise<void>((r) => {
        open = r;
      });
      return { open, opened };
    };
    const firstWrote = gate();
    const releaseFirst = gate();
    const releaseSecond = gate();
    // the first transaction takes its number, then stays open (a slow commit)
    const first = store.transaction(async (tx) => {
      await appendEvent(tx, run, 1, 'slow', { who: 'first' });
      firstWrote.open();
      await releaseFirst.opened;
    });
    await firstWrote.opened;
    // the second starts after it, on another connection; with a global sequence it would commit first
    const second = other.transaction(async (tx) => {
      await appendEvent(tx, run, 2, 'quick', { who: 'second' });
      await releaseSecond.opened;
    });
    releaseSecond.open();
    await new Promise((r) => setTimeout(r, 50));
    await follow();
    releaseFirst.open();
    await Promise.all([first, second]);
    await follow();
    expect(read).toEqual([2, 3]);
    expect((await q.events(run)).map((e) => e.data.who ?? e.type)).toEqual([
      'run_created',
      'first',
      'second',
    ]);
  });
});
