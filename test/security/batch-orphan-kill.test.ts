import { type ChildProcess, spawn } from 'node:child_process';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openStore } from '../../src/store/engine.js';
import { appendEvent, RunQueue } from '../../src/store/queue.js';
import { fixtureRepo } from '../e2e/fix-harness.js';
import { baseEnv, KEEL_BIN, keel } from '../e2e/harness.js';
import { alive, scriptedHome } from '../store/batch-harness.js';

describe('keel batch: ending an earlier attempt’s fix', () => {
  it('a forged fix_started line on a shared store cannot make a new attempt kill another process', async () => {
    const home = scriptedHome();
    const repo = fixtureRepo('stats');
    const other = fixtureRepo('stats');
    const decoys: ChildProcess[] = [];
    try {
      // a process that only looks like a keel fix on its command line, and carries the forged fix run id
      decoys.push(
        spawn('sh', ['-c', 'sleep 600', 'keel', 'fix', '--repo', repo], {
          env: { PATH: process.env.PATH, KEEL_BATCH_FIX_RUN_ID: '20261205-000000-aaaaaa' },
          stdio: 'ignore',
        }),
      );
      // a real keel fix of another run's task on this machine, waiting in its model call
      decoys.push(
        spawn(process.execPath, [KEEL_BIN, 'fix', '--repo', other, '--issue', 'mean() is wrong', '--json'], {
          cwd: other,
          env: {
            ...baseEnv(scriptedHome(undefined, [{ hang: true }])),
            KEEL_BATCH_ATTEMPT: JSON.stringify(['other-run', 't0', 1]),
            KEEL_BATCH_FIX_RUN_ID: '20261205-000000-bbbbbb',
          },
          stdio: ['pipe', 'ignore', 'ignore'],
        }),
      );
      const [fake, realFix] = decoys.map((d) => d.pid as number);
      expect(alive(fake as number) && alive(realFix as number)).toBe(true);

      // the run, as another member of the team's store sees it, with lines naming those processes as
      // this task's earlier fixes
      const store = await openStore({ engine: 'sqlite', path: join(home, 'keel.db') });
      try {
        await new RunQueue(store).createRun('r', {
          concurrency: 1,
          spec: {},
          tasks: [{ id: 't0', spec: { id: 't0', repo, issue: 'mean() is wrong' } }],
        });
        await store.transaction(async (tx) => {
          const line = (pid: number, fixRun: string) =>
            appendEvent(
              tx,
              'r',
              Date.now(),
              'fix_started',
              { fix_run: fixRun, host: hostname(), worker_pid: process.pid, fix_pid: pid },
              't0',
              0,
            );
          await line(fake as number, '20261205-000000-aaaaaa');
          await line(realFix as number, '20261205-000000-bbbbbb');
        });
      } finally {
        await store.close();
      }
      const run = await keel(['batch', 'resume', 'r', '--json'], { cwd: repo, home, timeoutMs: 120_000 });
      expect(run.code, run.stderr).toBe(0);
      const status = JSON.parse((await keel(['batch', 'status', 'r', '--json'], { cwd: repo, home })).stdout);
      expect(status.tasks).toMatchObject([{ id: 't0', state: 'done', attempts: 1 }]);
      // neither was the task's fix: both still run, and the journal records no fix ended
      expect(alive(fake as number)).toBe(true);
      expect(alive(realFix as number)).toBe(true);
      const reopened = await openStore({ engine: 'sqlite', path: join(home, 'keel.db') });
      try {
        const journal = await new RunQueue(reopened).events('r');
        expect(journal.filter((e) => e.type === 'earlier_fix_ended')).toEqual([]);
      } finally {
        await reopened.close();
      }
    } finally {
      for (const d of decoys) d.kill('SIGKILL');
    }
  }, 150_000);
});
