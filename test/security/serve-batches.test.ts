/**
 * `keel serve` shows batch runs from a team store other projects share: only runs of its own project are
 * listed or read (every task's repository is the project's folder, the rule sessions and fix runs keep).
 * Another project's run, a nested repository's, and a run mixing the project with another are as unknown
 * as none: not in the list, 404 by id.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { keelHome } from '../e2e/harness.js';
import { startServe } from '../e2e/serve-harness.js';
import { claimAndCall, createBatch, seedStore } from '../helpers/batch-seed.js';
import { git, gitRepo } from '../helpers/tmp.js';

describe('keel serve: batch runs of this project only', () => {
  it('lists and reads its own run; another project, a nested repository and a mixed run are 404 and unlisted', async () => {
    const home = keelHome();
    const project = gitRepo({ 'README.md': '# p\n' });
    const other = gitRepo({ 'README.md': '# o\n' });
    const nested = join(project, 'sub');
    mkdirSync(nested);
    git(nested, 'init', '-q');
    const s0 = await seedStore(join(home, 'keel.db'));
    await createBatch(s0, 'mine', { a: project, b: `${project}/` });
    await claimAndCall(s0, 'mine', 2000, 0.004);
    await createBatch(s0, 'theirs', { a: other });
    await claimAndCall(s0, 'theirs', 2000, 0.5);
    await createBatch(s0, 'nested', { a: nested });
    await createBatch(s0, 'mixed', { a: project, b: other });
    await s0.store.close();

    const s = await startServe({ cwd: project, home });
    const list = await s.api('GET', '/v1/batches');
    expect(list.status).toBe(200);
    expect(list.body.batches.map((b: { run_id: string }) => b.run_id)).toEqual(['mine']);
    const mine = await s.api('GET', '/v1/batches/mine');
    expect(mine.status).toBe(200);
    expect(mine.body.tasks.map((t: { task_id: string }) => t.task_id)).toEqual(['a', 'b']);
    expect(mine.body.ledger).toHaveLength(1);
    for (const id of ['theirs', 'nested', 'mixed', 'nothing']) {
      const res = await s.api('GET', `/v1/batches/${id}`);
      expect(res.status, id).toBe(404);
      expect(JSON.stringify(res.body)).not.toContain(other);
    }
    // the token guards these as every other route
    expect((await s.api('GET', '/v1/batches', undefined, { token: null })).status).toBe(401);
  }, 60_000);
});
