import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openDb } from '../../src/store/db.js';
import { openStore } from '../../src/store/engine.js';
import { EventLog } from '../../src/store/event-log.js';
import { fixtureRepo } from '../e2e/fix-harness.js';
import { keel } from '../e2e/harness.js';
import { tempDir } from '../helpers/tmp.js';
import { fixRunsOf, journalOf, leftovers, writesBy } from './batch-chaos-helpers.js';
import { alive, line, pgrep, scriptedHome, TURNS } from './batch-harness.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** How many model requests the sessions in a KEEL_HOME have made. */
function modelRequests(home: string): number {
  const db = openDb(join(home, 'keel.db'));
  try {
    const log = new EventLog(db);
    return log
      .listSessions(100)
      .flatMap((s) => log.events(s.id))
      .filter((e) => e.type === 'model_request').length;
  } finally {
    db.close();
  }
}

describe.concurrent('keel batch: no fix outlives its attempt', () => {
  it('a SIGKILLed worker’s fix stops by itself before the next attempt; a stuck worker’s fix is ended by the next attempt, which then removes what it left', async () => {
    const script = join(tempDir('keel-script-'), 'script.json');
    const home = scriptedHome(script, [{ hang: true }]);
    const dir = tempDir('keel-batch-');
    const [killed, stuck] = [fixtureRepo('stats'), fixtureRepo('stats')];
    const file = join(dir, 'tasks.jsonl');
    writeFileSync(
      file,
      [
        line({ id: 'killed', repo: killed, issue: 'mean() is wrong' }),
        line({ id: 'stuck', repo: stuck, issue: 'mean() is wrong' }),
      ].join(''),
    );
    let supervisorPid = 0;
    const supervisor = keel(['batch', file, '--concurrency', '2', '--run-id', 'o', '--json'], {
      cwd: dir,
      home,
      timeoutMs: 150_000,
      onSpawn: (child) => {
        supervisorPid = child.pid ?? 0;
      },
    });
    // both fixes wait in their first model call, silent (no progress line that would meet a closed pipe)
    while (modelRequests(home) < 2) await sleep(200);
    const [killedFix] = pgrep(`keel.js fix --repo ${killed} `);
    const [stuckFix] = pgrep(`keel.js fix --repo ${stuck} `);
    const [killedWorker] = pgrep('batch worker o killed 1');
    const [stuckWorker] = pgrep('batch worker o stuck 1');
    expect([killedFix, stuckFix, killedWorker, stuckWorker].every((p) => typeof p === 'number')).toBe(true);
    process.kill(killedWorker as number, 'SIGKILL');
    process.kill(stuckWorker as number, 'SIGSTOP'); // its event loop stuck: the fix's pipe stays open
    writeFileSync(script, JSON.stringify({ turns: TURNS }));

    const store = await openStore({ engine: 'sqlite', path: join(home, 'keel.db') });
    try {
      // the killed worker's fix ends on its own: before its task's lease expires and a second attempt starts
      let secondStarted = false;
      while (alive(killedFix as number) && !secondStarted) {
        await sleep(100);
        secondStarted = fixRunsOf(await journalOf(store, 'o'), 'killed').length > 1;
      }
      expect(alive(killedFix as number), 'the orphaned fix ran on into the next attempt').toBe(false);
      expect(secondStarted).toBe(false);

      const run = await supervisor;
      expect(run.code, run.stderr).toBe(0);
      const doc = JSON.parse(run.stdout);
      expect(doc.tasks.map((t: { id: string; attempts: number }) => [t.id, t.attempts])).toEqual([
        ['killed', 2],
        ['stuck', 2],
      ]);
      const journal = await journalOf(store, 'o');
      for (const task of ['killed', 'stuck']) {
        const [first, second] = fixRunsOf(journal, task);
        const claimed = journal.find((e) => e.type === 'claimed' && e.taskId === task && e.attempt === 2);
        // the first attempt's fix (its process, by the pid each event records) wrote nothing once the
        // second attempt held the task
        const writes = writesBy(home, first?.fixRun ?? '', first?.fixPid ?? 0);
        expect(writes.length).toBeGreaterThan(0);
        expect(Math.max(...writes)).toBeLessThan(claimed?.ts ?? 0);
        expect(second?.attempt).toBe(2);
      }
      // the stuck worker's fix never saw its pipe close: the second attempt ended it (checked as that
      // attempt's fix) before starting its own, and once verified removed the first attempt's worktree and
      // branch and its stuck worker
      const ended = journal.find((e) => e.type === 'earlier_fix_ended');
      expect(ended).toMatchObject({ taskId: 'stuck', attempt: 2, data: { fix_pids: [stuckFix] } });
      const stuckSecond = journal.find(
        (e) => e.type === 'fix_started' && e.taskId === 'stuck' && e.attempt === 2,
      );
      expect(ended?.seq ?? Infinity).toBeLessThan(stuckSecond?.seq ?? 0);
      expect(journal.some((e) => e.type === 'earlier_fix_ended' && e.taskId === 'killed')).toBe(false);
      // (SIGKILLed: on a loaded machine a process can take a moment to be torn down)
      const gone = [killedFix, stuckFix, stuckWorker] as number[];
      for (let i = 0; i < 50 && gone.some(alive); i++) await sleep(200);
      for (const pid of gone) expect(alive(pid)).toBe(false);
      for (const [repo, task] of [
        [killed, 'killed'],
        [stuck, 'stuck'],
      ] as const) {
        const result = doc.tasks.find((t: { id: string }) => t.id === task).result;
        expect(leftovers(repo)).toEqual({ worktrees: [], branches: [result.branch] });
      }
    } finally {
      await store.close();
      // a failed run leaves nothing behind for the next test
      for (const pid of [supervisorPid, killedFix, stuckFix, stuckWorker, ...pgrep('batch worker o ')])
        if (pid && alive(pid)) process.kill(pid, 'SIGKILL');
    }
  }, 180_000);
});
