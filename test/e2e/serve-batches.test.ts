/**
 * A real `keel batch` run, then `keel serve` in the same project: the page's batch routes read what the
 * batch wrote to the team store (the queue's journal and the ledger), not a copy of their own.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/tmp.js';
import { line, scriptedHome, TURNS } from '../store/batch-harness.js';
import { fixtureRepo } from './fix-harness.js';
import { keel } from './harness.js';
import { startServe } from './serve-harness.js';

describe('keel serve: a keel batch run from the team store', () => {
  it("lists the project's batch and reads its task's verdict, its calls and its spend as keel batch recorded them", async () => {
    const script = join(tempDir('keel-script-'), 'script.json');
    const home = scriptedHome(script, TURNS);
    const repo = fixtureRepo('stats');
    const file = join(tempDir('keel-batch-'), 'tasks.jsonl');
    writeFileSync(file, line({ id: 'mean', repo, issue: 'mean() of [2, 4, 6] returns 3, not 4' }));
    const run = await keel(['batch', file, '--run-id', 'b1', '--json'], {
      cwd: repo,
      home,
      timeoutMs: 120_000,
    });
    expect(run.code, run.stderr).toBe(0);

    const s = await startServe({ cwd: repo, home });
    const list = await s.api('GET', '/v1/batches');
    expect(list.body.batches).toEqual([
      expect.objectContaining({ run_id: 'b1', tasks_total: 1, tasks_ended: 1, calls: 4 }),
    ]);
    const b = (await s.api('GET', '/v1/batches/b1')).body;
    expect(b.tasks).toEqual([
      expect.objectContaining({ task_id: 'mean', state: 'done', verdict: 'verified', calls: 4, cost_usd: 0 }),
    ]);
    expect(b.tasks[0].branch).toMatch(/^keel\/fix-/);
    expect(b.ledger.map((c: { cost_source: string }) => c.cost_source)).toEqual([
      'unknown',
      'unknown',
      'unknown',
      'unknown',
    ]);
    expect(b.spend.map((p: { seq: number }) => p.seq)).toEqual([1, 2, 3, 4]);
    expect(b.totals).toMatchObject({ tasks: 1, verified: 1, calls: 4, unknown_cost_calls: 4 });
  }, 180_000);
});
