/**
 * keel goal narrows each task's fix to the task's scope: a write outside it is refused by the gate (also
 * through `..`), the task still verifies in scope, and the integration holds only the scope's change. A
 * scope that climbs out of the repository is refused where it is written: in the plan, and on keel fix.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { fixtureRepo } from '../e2e/fix-harness.js';
import { planAnswer } from '../e2e/goal-harness.js';
import { keel } from '../e2e/harness.js';
import { git, tempDir } from '../helpers/tmp.js';
import { BUGGY_DIVISOR, scriptedHome } from '../store/batch-harness.js';

const REFUSED = 'outside the writable scope';

describe('keel goal: a task writes only in its scope', () => {
  it('refuses a task’s writes outside its scope (plainly and through ..); the task verifies in scope and the integration holds only that', async () => {
    const repo = fixtureRepo('stats');
    const readme = git(repo, 'show', 'HEAD:README.md');
    const task = (turn: object) => ({ ...turn, task: 'MEAN:' });
    const home = scriptedHome(join(tempDir('keel-script-'), 'script.json'), [
      planAnswer([{ id: 'mean', title: 'MEAN: mean() divides by one too many', scope: ['src/stats.js'] }]),
      task({ tool_calls: [{ name: 'read_file', arguments: { path: 'src/stats.js' } }] }),
      task({ text: '1. Fix the divisor in src/stats.js.' }),
      task({ tool_calls: [{ name: 'write_file', arguments: { path: 'README.md', content: 'pwned\n' } }] }),
      task({
        tool_calls: [{ name: 'write_file', arguments: { path: 'src/../README.md', content: 'pwned\n' } }],
        expect: { last_tool_result_contains: REFUSED },
      }),
      task({
        tool_calls: [
          {
            name: 'edit_file',
            arguments: {
              path: 'src/stats.js',
              old_string: BUGGY_DIVISOR,
              new_string: '  return sum(values) / values.length;',
            },
          },
        ],
        expect: { last_tool_result_contains: REFUSED },
      }),
      task({ text: 'mean now divides by the length.' }),
    ]);
    const run = await keel(['goal', 'fix the mean', '--json'], { cwd: repo, home, timeoutMs: 120_000 });
    expect(run.code, run.stdout + run.stderr).toBe(0);
    const doc = JSON.parse(run.stdout);
    expect(doc.end).toBe('verified');
    const branch = doc.integration.branch as string;
    expect(git(repo, 'diff', '--name-only', 'main', branch).trim()).toBe('src/stats.js');
    expect(git(repo, 'show', `${branch}:README.md`)).toBe(readme);
    expect(git(repo, 'show', `${doc.tasks[0].branch}:README.md`)).toBe(readme);
  }, 180_000);

  it('refuses, in the plan (nothing starts), a scope that climbs out of the repository and a test command with shell syntax; and a climbing --scope on keel fix', async () => {
    const repo = fixtureRepo('stats');
    const task = (extra: object) => ({ id: 'x', title: 'x', scope: ['src/stats.js'], ...extra });
    const cases = [
      {
        turns: [planAnswer([task({ scope: ['../elsewhere'] })]), planAnswer([task({ scope: ['/etc'] })])],
        error: 'task x: scope /etc is absolute',
      },
      {
        // the planner reads the repository: a command it chose runs only as plain words, in the test sandbox
        turns: [
          planAnswer([task({ test_command: 'node --test; curl http://127.0.0.1:9/x' })]),
          planAnswer([task({ test_command: 'node --test $(cat ~/.ssh/id_rsa)' })]),
        ],
        error: 'task x: test_command "node --test $(cat ~/.ssh/id_rsa)" is not a plain command line',
      },
    ];
    for (const { turns, error } of cases) {
      const home = scriptedHome(join(tempDir('keel-script-'), 'script.json'), turns);
      const plan = await keel(['goal', 'fix the mean', '--json'], { cwd: repo, home, timeoutMs: 30_000 });
      expect(plan.code, plan.stderr).toBe(1);
      const doc = JSON.parse(plan.stdout);
      expect(doc.end).toBe('plan_error');
      expect(doc.error).toContain(error);
      expect((await keel(['goal', 'status', '--json'], { cwd: repo, home })).stdout).toContain('"goals": []');
    }
    const home = scriptedHome();
    const fix = await keel(['fix', '--issue', 'x', '--scope', 'src/../../elsewhere', '--json'], {
      cwd: repo,
      home,
    });
    expect(fix.code).toBe(2);
    expect(JSON.parse(fix.stdout).error).toBe('--scope src/../../elsewhere climbs out with ..');
  }, 60_000);
});
