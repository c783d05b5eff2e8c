/** The run queue's additions for keel goal, on SQLite and on PostgreSQL: a task added to a running run, a run-level journal line. */
import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../../src/store/engine.js';
import { RunQueue } from '../../src/store/queue.js';
import { storeEngines } from '../helpers/engines.js';

const engines = await storeEngines();

describe.each(engines)('run queue additions on $name', (engine) => {
  let store: Store;
  beforeAll(async () => {
    if (engine.skip) return;
    store = await engine.open();
  });
  const test = it.skipIf(engine.skip !== '');

  test('a task added to a run is claimed after the ones before it; an id taken or a run not there adds nothing; record journals a run-level line', async () => {
    const q = new RunQueue(store);
    const run = randomUUID();
    await q.createRun(run, { concurrency: 2, spec: { kind: 'goal' }, tasks: [] });
    expect(await q.claim(run, 'w')).toBeUndefined();
    expect(await q.addTask(run, { id: 'a', spec: { n: 1 } })).toBe(true);
    expect(await q.addTask(run, { id: 'b', spec: { n: 2 } })).toBe(true);
    expect(await q.addTask(run, { id: 'a', spec: { n: 9 } })).toBe(false);
    expect(await q.addTask(randomUUID(), { id: 'x', spec: {} })).toBe(false);
    const a = await q.claim(run, 'w');
    expect([a?.taskId, a?.spec]).toEqual(['a', { n: 1 }]);
    expect((await q.claim(run, 'w'))?.taskId).toBe('b');
    expect((await q.run(run))?.counts).toMatchObject({ running: 2, queued: 0 });
    expect(await q.record(run, 'integration', { end: 'verified' })).toBe(true);
    expect(await q.record(randomUUID(), 'integration', {})).toBe(false);
    const journal = await q.events(run);
    expect(journal.map((e) => [e.type, e.taskId ?? null])).toEqual([
      ['run_created', null],
      ['task_added', 'a'],
      ['task_added', 'b'],
      ['claimed', 'a'],
      ['claimed', 'b'],
      ['integration', null],
    ]);
    expect(journal.at(-1)?.data).toEqual({ end: 'verified' });
  });
});
