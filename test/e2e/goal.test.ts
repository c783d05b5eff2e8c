import { symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { git, tempDir, writeFiles } from '../helpers/tmp.js';
import { scriptedHome } from '../store/batch-harness.js';
import { BOTH, DOUBLE, goalRepo, PLAN, planAnswer, TRIPLE } from './goal-harness.js';
import { keel } from './harness.js';

const GOAL = 'make both() right, with the helpers it needs';

interface GoalDoc {
  goal_id: string;
  end: string;
  exit_code: number;
  reason?: string;
  error?: string;
  integration: { end: string; branch?: string; commit?: string; files?: string[]; task?: string } | null;
  tasks: Array<{ id: string; state: string; attempts: number; branch: string | null }>;
}

async function status(home: string, cwd: string): Promise<{ goal_id: string; end: string } | undefined> {
  const run = await keel(['goal', 'status', '--json'], { cwd, home });
  return JSON.parse(run.stdout).goals[0];
}

describe('keel goal', () => {
  it('plans (a refused plan repaired once), runs two independent tasks and one on both, survives a SIGKILLed supervisor, integrates; a later conflict exits 5 naming the file', async () => {
    const slowTriple = TRIPLE.map((t, i) => (i === 0 ? { ...t, delay_ms: 6_000 } : t));
    const home = scriptedHome(join(tempDir('keel-script-'), 'script.json'), [
      // an unknown key: refused, and asked again once with the reason
      { text: JSON.stringify({ tasks: PLAN.map((t) => ({ ...t, priority: 1 })) }) },
      { ...planAnswer(PLAN), expect: { last_user_contains: 'unknown key "priority"' } },
      ...DOUBLE,
      ...slowTriple,
      ...BOTH,
    ]);
    const repo = goalRepo();
    const main = git(repo, 'rev-parse', 'main').trim();
    let supervisor = 0;
    const first = keel(['goal', GOAL, '--concurrency', '2', '--json'], {
      cwd: repo,
      home,
      timeoutMs: 120_000,
      onSpawn: (child) => {
        supervisor = child.pid ?? 0;
      },
    });
    // kill -9 the goal's supervisor once dbl verified, while tpl (its first answer slow) still runs
    let goalId = '';
    for (;;) {
      await new Promise((r) => setTimeout(r, 300));
      goalId ||= (await status(home, repo))?.goal_id ?? '';
      if (!goalId) continue;
      const doc = JSON.parse((await keel(['goal', 'status', goalId, '--json'], { cwd: repo, home })).stdout);
      const by = Object.fromEntries((doc.tasks as GoalDoc['tasks']).map((t) => [t.id, t.state]));
      expect(by.dbl === 'failed' || by.tpl === 'failed', JSON.stringify(doc)).toBe(false);
      if (by.dbl === 'verified') {
        expect(by.both).not.toBe('verified');
        break;
      }
    }
    process.kill(supervisor, 'SIGKILL');
    expect((await first).signal).toBe('SIGKILL');

    const resumed = await keel(['goal', 'resume', goalId, '--json'], { cwd: repo, home, timeoutMs: 150_000 });
    expect(resumed.code, resumed.stdout + resumed.stderr).toBe(0);
    const doc = JSON.parse(resumed.stdout) as GoalDoc;
    expect(doc.end).toBe('verified');
    expect(doc.tasks.map((t) => [t.id, t.state, t.attempts])).toEqual([
      ['dbl', 'verified', 1],
      ['tpl', 'verified', 1],
      ['both', 'verified', 1],
    ]);
    // both started from a base holding dbl's and tpl's verified branches: its baseline failed only its own test
    const branch = doc.integration?.branch ?? '';
    expect(branch).toBe(`keel/goal-${goalId.replace(/^goal-/, '')}`);
    expect(git(repo, 'show', `${branch}:src/both.js`)).toContain('return double(x) + triple(x);');
    expect(git(repo, 'show', `${branch}:src/double.js`)).toContain('return x * 2;');
    expect(git(repo, 'show', `${branch}:src/triple.js`)).toContain('return x * 3;');
    // nothing merged into the person's branch
    expect(git(repo, 'rev-parse', 'main').trim()).toBe(main);
    // nothing redone: the plan asked twice (the repair) and never again, each task's fix 4 calls (plan, attempt)
    const ledger = JSON.parse((await keel(['ledger', goalId, '--json'], { cwd: repo, home })).stdout);
    const perTask: Record<string, number> = {};
    for (const c of ledger.calls as Array<{ task_id: string | null }>)
      perTask[c.task_id ?? 'planner'] = (perTask[c.task_id ?? 'planner'] ?? 0) + 1;
    expect(perTask).toEqual({ planner: 2, dbl: 4, tpl: 4, both: 4 });

    // the person commits to the same file meanwhile: the integration onto their branch's tip conflicts
    writeFiles(repo, { 'src/double.js': 'export function double(x) {\n  return x + x;\n}\n' });
    git(repo, 'commit', '-qam', 'my own double');
    const mine = git(repo, 'rev-parse', 'main').trim();
    const again = await keel(['goal', 'resume', goalId, '--json'], { cwd: repo, home, timeoutMs: 60_000 });
    expect(again.code, again.stderr).toBe(5);
    const conflict = JSON.parse(again.stdout) as GoalDoc;
    expect(conflict).toMatchObject({ end: 'merge_conflict', exit_code: 5 });
    expect(conflict.integration).toMatchObject({
      end: 'merge_conflict',
      task: 'dbl',
      files: ['src/double.js'],
    });
    expect(conflict.reason).toContain('conflicts in src/double.js');
    expect(git(repo, 'rev-parse', 'main').trim()).toBe(mine);
    const text = await keel(['goal', 'status', goalId], { cwd: repo, home });
    expect(text.code).toBe(5);
    expect(text.stdout).toContain('conflict: src/double.js');
  }, 300_000);

  it('refuses, after one repair round, a plan whose sibling tasks share a file (also through a link) or whose tasks form a cycle: exit 1, nothing started', async () => {
    const repo = goalRepo();
    symlinkSync('src', join(repo, 'lib'));
    git(repo, 'add', 'lib');
    git(repo, 'commit', '-qm', 'lib is src');
    const task = (id: string, scope: string[], depends_on: string[] = []) => ({
      id,
      title: `task ${id}`,
      scope,
      depends_on,
    });
    const cases = [
      {
        turns: [
          // the same file under two names: the link resolves to it
          planAnswer([task('a', ['src/double.js']), task('b', ['lib/double.js'])]),
          {
            ...planAnswer([task('a', ['src']), task('b', ['src/triple.js/'])]),
            expect: { last_user_contains: 'lib/double.js (both hold src/double.js)' },
          },
        ],
        error:
          'tasks a and b can run at once (neither depends on the other) and their scopes overlap: src and src/triple.js (both hold src/triple.js)',
      },
      {
        turns: [
          planAnswer([
            task('a', ['src/double.js'], ['c']),
            task('b', ['src/triple.js'], ['a']),
            task('c', ['x'], ['b']),
          ]),
          planAnswer([task('a', ['src/double.js'], ['b']), task('b', ['src/triple.js'], ['a'])]),
        ],
        error: 'the tasks depend on each other in a cycle: a -> b -> a',
      },
    ];
    for (const { turns, error } of cases) {
      const home = scriptedHome(join(tempDir('keel-script-'), 'script.json'), turns);
      const run = await keel(['goal', GOAL, '--json'], { cwd: repo, home, timeoutMs: 30_000 });
      expect(run.code, run.stderr).toBe(1);
      const doc = JSON.parse(run.stdout) as GoalDoc;
      expect(doc.end).toBe('plan_error');
      expect(doc.error).toContain(error);
      expect(doc.error).toContain('refused twice');
      // nothing started: no goal stored, no branch made
      expect((await keel(['goal', 'status', '--json'], { cwd: repo, home })).stdout).toContain('"goals": []');
      expect(git(repo, 'branch', '--list', 'keel/*')).toBe('');
    }
  }, 60_000);
});
