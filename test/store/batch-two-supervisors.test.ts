/** Issue 27: two `keel batch` supervisors (as on two machines) share one run on one PostgreSQL queue. */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openStore } from '../../src/store/engine.js';
import { RunQueue } from '../../src/store/queue.js';
import { fixtureRepo } from '../e2e/fix-harness.js';
import { keel, keelHome } from '../e2e/harness.js';
import { freshPgDatabase, skipReason } from '../helpers/pg.js';
import { git, tempDir } from '../helpers/tmp.js';
import { EDIT, mostRunning, PLAN } from './batch-harness.js';

// a slower plan keeps tasks running while the other supervisor looks for work
const TURNS = [{ ...PLAN[0], delay_ms: 1_000 }, ...PLAN.slice(1), ...EDIT];

const pgUrl = await freshPgDatabase();

describe('two supervisors on one PostgreSQL queue', () => {
  it.skipIf(!pgUrl)(
    `run every task exactly once, within the cap, and both exit 0 ${pgUrl ? '' : `(${skipReason})`}`,
    async () => {
      const script = join(tempDir('keel-script-'), 'script.json');
      writeFileSync(script, JSON.stringify({ turns: TURNS }));
      const config = `provider = "scripted"\nmodel = "scripted"\nscript = "${script}"\n`;
      // two machines: each its own KEEL_HOME (sessions, worktrees), one store
      const homes = [keelHome(config), keelHome(config)];
      const env = { KEEL_STORE: pgUrl as string };
      const dir = tempDir('keel-batch-');
      const repos = [0, 1, 2, 3, 4].map(() => fixtureRepo('stats'));
      const file = join(dir, 'tasks.jsonl');
      writeFileSync(
        file,
        repos
          .map((repo, i) => `${JSON.stringify({ id: `t${i}`, repo, issue: 'mean() is wrong' })}\n`)
          .join(''),
      );
      const args = ['batch', file, '--concurrency', '2', '--run-id', 'shared', '--json'];
      const runs = await Promise.all(
        homes.map((home) => keel(args, { cwd: dir, home, env, timeoutMs: 150_000 })),
      );
      for (const run of runs) {
        expect(run.code, run.stderr).toBe(0);
        expect(JSON.parse(run.stdout).counts).toEqual({
          queued: 0,
          running: 0,
          done: 5,
          failed: 0,
          cancelled: 0,
        });
      }
      const store = await openStore({ engine: 'postgres', url: pgUrl as string });
      try {
        const journal = await new RunQueue(store).events('shared');
        const claims = journal.filter((e) => e.type === 'claimed');
        // every task claimed once and finished once: no task ran twice, none was lost
        expect(claims.map((e) => e.taskId).sort()).toEqual(['t0', 't1', 't2', 't3', 't4']);
        expect(
          journal
            .filter((e) => e.type === 'finished')
            .map((e) => e.taskId)
            .sort(),
        ).toEqual(['t0', 't1', 't2', 't3', 't4']);
        expect(mostRunning(journal)).toBeLessThanOrEqual(2);
        expect(journal.filter((e) => e.type === 'run_created')).toHaveLength(1);
      } finally {
        await store.close();
      }
      for (const repo of repos) expect(git(repo, 'branch', '--list', 'keel/fix-*').trim()).not.toBe('');
    },
    200_000,
  );
});
