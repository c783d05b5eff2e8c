/** `keel batch report`, `keel batch clean` and a --run-id given another tasks file, through the real binary. */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openStore } from '../../src/store/engine.js';
import { appendEvent } from '../../src/store/queue.js';
import { editTurns, fixtureRepo, planTurns } from '../e2e/fix-harness.js';
import { keel, keelHome } from '../e2e/harness.js';
import { git, tempDir } from '../helpers/tmp.js';

const TURNS = [
  ...planTurns('src/stats.js', '1. mean divides by one too many.\n2. Divide by values.length.'),
  ...editTurns(
    'src/stats.js',
    '  return sum(values) / (values.length + 1);',
    '  return sum(values) / values.length;',
    'mean now divides by the length.',
  ),
];

function scriptedHome(script: string, turns: unknown[]): string {
  writeFileSync(script, JSON.stringify({ turns }));
  return keelHome(`provider = "scripted"\nmodel = "scripted"\nscript = "${script}"\n`);
}

const line = (task: Record<string, unknown>) => `${JSON.stringify(task)}\n`;

function pgrep(pattern: string): number[] {
  try {
    return execFileSync('pgrep', ['-f', pattern], { encoding: 'utf8' })
      .split('\n')
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
}

/** Whether a process runs (a zombie does not: it holds nothing, and only its parent can reap it). */
function alive(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

describe('keel batch report and clean', () => {
  it('report recomputes verdicts, attempts and spend from the store; the same --run-id with other tasks is refused by id', async () => {
    const script = join(tempDir('keel-script-'), 'script.json');
    const home = scriptedHome(script, TURNS);
    const dir = tempDir('keel-batch-');
    const repo = fixtureRepo('stats');
    const file = join(dir, 'tasks.jsonl');
    writeFileSync(
      file,
      line({ id: 'ok', repo, issue: 'mean() of [2, 4, 6] returns 3, not 4' }) +
        line({ id: 'gone', repo: 'no-such-repo', issue: 'x' }),
    );
    const run = await keel(['batch', file, '--run-id', 'r1', '--json'], {
      cwd: dir,
      home,
      timeoutMs: 120_000,
    });
    expect(run.code, run.stderr).toBe(1);
    // a model that would answer nothing now: the report calls none
    writeFileSync(script, JSON.stringify({ turns: [{ hang: true }] }));
    const report = await keel(['batch', 'report', 'r1', '--json'], { cwd: dir, home });
    expect(report.code, report.stderr).toBe(1);
    const doc = JSON.parse(report.stdout);
    expect(doc.tasks).toEqual([
      {
        id: 'ok',
        verdict: 'verified',
        attempts: 1,
        calls: 4,
        cost_usd: 0,
        unknown_cost_calls: 4,
        branch: expect.stringMatching(/^keel\/fix-/),
        error: null,
      },
      {
        id: 'gone',
        verdict: 'failed',
        attempts: 1,
        calls: 0,
        cost_usd: 0,
        unknown_cost_calls: 0,
        branch: null,
        error: `repo ${join(dir, 'no-such-repo')} does not exist`,
      },
    ]);
    expect(doc.totals).toEqual({ tasks: 2, verified: 1, calls: 4, cost_usd: 0, unknown_cost_calls: 4 });
    const text = await keel(['batch', 'report', 'r1'], { cwd: dir, home });
    expect(text.stdout).toContain('ok  verified  1 attempt  $0.0000 + 4 calls of unknown cost');
    expect(text.stdout).toContain('batch r1: 1/2 verified, 4 calls, $0.0000 + 4 calls of unknown cost');
    expect((await keel(['batch', 'report', 'nope'], { cwd: dir, home })).code).toBe(2);
    // the same run id with a changed task and a new one: refused, naming both; nothing queued or run
    const other = join(dir, 'other.jsonl');
    writeFileSync(
      other,
      line({ id: 'ok', repo, issue: 'another issue' }) +
        line({ id: 'gone', repo: 'no-such-repo', issue: 'x' }) +
        line({ id: 'extra', repo, issue: 'y' }),
    );
    const refused = await keel(['batch', other, '--run-id', 'r1'], { cwd: dir, home });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(`run r1 was started with other tasks: ok, extra differ from ${other}`);
    const after = await keel(['batch', 'report', 'r1', '--json'], { cwd: dir, home });
    expect(JSON.parse(after.stdout).tasks.map((t: { id: string }) => t.id)).toEqual(['ok', 'gone']);
  }, 180_000);

  it('clean ends a stuck attempt’s processes and removes its worktree and branch; the verified branch stays', async () => {
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
    const branchesBefore = git(repo, 'branch', '--list', 'keel/fix-*').split('\n').filter(Boolean);
    expect(branchesBefore).toHaveLength(2);
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
    const stuckBranch = branchesBefore.map((b) => b.replace(/^[*+ ]+/, '')).find((b) => b !== verifiedBranch);
    expect(doc.removed.filter((r) => !r.startsWith('run folder '))).toEqual([
      `process ${fix[0]} (keel fix of task c0)`,
      `process ${worker[0]} (batch worker c c0 1)`,
      expect.stringMatching(new RegExp(`^worktree ${join(home, 'worktrees')}/`)),
      `branch ${stuckBranch} in ${repo}`,
    ]);
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
