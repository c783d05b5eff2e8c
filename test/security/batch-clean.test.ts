import { writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openStore } from '../../src/store/engine.js';
import { appendEvent } from '../../src/store/queue.js';
import { fixtureRepo } from '../e2e/fix-harness.js';
import { keel } from '../e2e/harness.js';
import { git, tempDir } from '../helpers/tmp.js';
import { alive, line, pgrep, scriptedHome, TURNS } from '../store/batch-harness.js';

describe('keel batch clean', () => {
  it('clean ends a stuck attempt’s worker once the next attempt took its fix over; the verified branch stays', async () => {
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
    for (;;) {
      const status = JSON.parse((await keel(['batch', 'status', 'c', '--json'], { cwd: dir, home })).stdout);
      if (status.counts.done === 1) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    // the second attempt took the stuck attempt's fix over (its process stopped, its run resumed from the
    // log, issue 27): one fix, one branch; the stuck worker is left for clean
    const branchesBefore = git(repo, 'branch', '--list', 'keel/fix-*').split('\n').filter(Boolean);
    expect(branchesBefore).toHaveLength(1);
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
    const ended = doc.removed.filter((r) => !r.startsWith('run folder '));
    expect(ended).toEqual([expect.stringMatching(/^process \d+ \(batch worker c c0 1\)$/)]);
    expect(worker).toContain(Number(/\d+/.exec(ended[0] ?? '')?.[0]));
    expect(doc.kept).toEqual([
      `branch ${verifiedBranch} in ${repo} (task c0, verified)`,
      `fix ${own.session_id} of task c0: not a fix of ${repo} in this run`,
    ]);
    expect(git(mine, 'branch', '--list', own.branch).trim()).not.toBe('');
    for (const pid of [...fix, ...worker]) expect(alive(pid)).toBe(false);
    expect(
      git(repo, 'branch', '--list', 'keel/fix-*')
        .replace(/^[*+ ]+/, '')
        .trim(),
    ).toBe(verifiedBranch);
    expect(git(repo, 'worktree', 'list').trim().split('\n')).toHaveLength(1);
    // the supervisor was waiting for its stuck worker: with it gone, the run ends verified
    expect((await supervisor).code).toBe(0);
    const again = JSON.parse((await keel(['batch', 'clean', 'c', '--json'], { cwd: dir, home })).stdout);
    expect(again.removed).toEqual([]);
  }, 180_000);
});
