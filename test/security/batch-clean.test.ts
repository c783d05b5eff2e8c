import { readFileSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openStore } from '../../src/store/engine.js';
import { appendEvent, RunQueue } from '../../src/store/queue.js';
import { fixtureRepo } from '../e2e/fix-harness.js';
import { keel } from '../e2e/harness.js';
import { git, tempDir } from '../helpers/tmp.js';
import { alive, line, pgrep, scriptedHome, TURNS } from '../store/batch-harness.js';

describe('keel batch clean', () => {
  it('a stuck attempt’s processes, worktree and branch go with the attempt that finishes the task; clean takes nothing a forged journal line names, and the verified branch stays', async () => {
    const script = join(tempDir('keel-script-'), 'script.json');
    const home = scriptedHome(script, [{ hang: true }]);
    const dir = tempDir('keel-batch-');
    const repo = fixtureRepo('stats');
    const file = join(dir, 'tasks.jsonl');
    writeFileSync(file, line({ id: 'c0', repo, issue: 'mean() is wrong' }));
    const supervisor = keel(['batch', file, '--run-id', 'c', '--json'], {
      cwd: dir,
      home,
      timeoutMs: 120_000,
    });
    let fix: number[] = [];
    while (!fix.length) {
      await new Promise((r) => setTimeout(r, 300));
      fix = pgrep(`keel.js fix --repo ${repo}`);
    }
    // the first attempt's worker and fix stop (an event loop stuck): its lease expires, a second attempt verifies
    let worker: number[] = [];
    while (!worker.length) {
      worker = pgrep('batch worker c c0 1');
      if (!worker.length) await new Promise((r) => setTimeout(r, 100));
    }
    // once the fix has its worktree (it then waits for the model)
    while (git(repo, 'worktree', 'list').trim().split('\n').length < 2)
      await new Promise((r) => setTimeout(r, 100));
    for (const pid of [...worker, ...fix]) process.kill(pid, 'SIGSTOP');
    writeFileSync(script, JSON.stringify({ turns: TURNS }));
    // the supervisor waits for every worker, the stuck one too: it ends once the task is verified and the
    // stuck worker is gone
    expect((await supervisor).code).toBe(0);
    // the second attempt ended the stuck fix before its own started (checked as that attempt's fix), and
    // once verified removed what the first attempt left: its worktree, its branch and its stuck worker
    const journalStore = await openStore({ engine: 'sqlite', path: join(home, 'keel.db') });
    try {
      const journal = await new RunQueue(journalStore).events('c');
      expect(journal.find((e) => e.type === 'earlier_fix_ended')).toMatchObject({
        taskId: 'c0',
        attempt: 2,
        data: { fix_pids: fix },
      });
    } finally {
      await journalStore.close();
    }
    // (SIGKILLed: on a loaded machine a process can take a moment to be torn down)
    for (let i = 0; i < 50 && [...fix, ...worker].some(alive); i++)
      await new Promise((r) => setTimeout(r, 200));
    for (const pid of [...fix, ...worker])
      expect(alive(pid), `${pid}: ${cmdlineOf(pid)} (fix ${fix}, worker ${worker})`).toBe(false);
    expect(git(repo, 'branch', '--list', 'keel/fix-*').split('\n').filter(Boolean)).toHaveLength(1);
    // a journal line naming another fix run of this machine (a shared store anyone of the team writes)
    const mine = fixtureRepo('stats');
    const own = JSON.parse(
      (await keel(['fix', '--repo', mine, '--issue', 'mean() is wrong', '--json'], { cwd: mine, home }))
        .stdout,
    );
    const store = await openStore({ engine: 'sqlite', path: join(home, 'keel.db') });
    try {
      await store.transaction((tx) =>
        appendEvent(
          tx,
          'c',
          Date.now(),
          'fix_started',
          { fix_run: own.session_id, host: hostname() },
          'c0',
          1,
        ),
      );
    } finally {
      await store.close();
    }
    const clean = await keel(['batch', 'clean', 'c', '--json'], { cwd: dir, home });
    expect(clean.code, clean.stderr).toBe(0);
    const doc = JSON.parse(clean.stdout) as { removed: string[]; kept: string[] };
    const status = JSON.parse((await keel(['batch', 'status', 'c', '--json'], { cwd: dir, home })).stdout);
    const verifiedBranch = status.tasks[0].result.branch as string;
    expect(doc.removed.filter((r) => !r.startsWith('run folder '))).toEqual([]);
    expect(doc.kept).toEqual([
      `branch ${verifiedBranch} in ${repo} (task c0, verified)`,
      `fix ${own.session_id} of task c0: not a fix of ${repo} in this run`,
    ]);
    expect(git(mine, 'branch', '--list', own.branch).trim()).not.toBe('');
    expect(
      git(repo, 'branch', '--list', 'keel/fix-*')
        .replace(/^[*+ ]+/, '')
        .trim(),
    ).toBe(verifiedBranch);
    expect(git(repo, 'worktree', 'list').trim().split('\n')).toHaveLength(1);
    const again = JSON.parse((await keel(['batch', 'clean', 'c', '--json'], { cwd: dir, home })).stdout);
    expect(again.removed).toEqual([]);
  }, 180_000);
});

function cmdlineOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
  } catch {
    return '(gone)';
  }
}
