/**
 * `keel runs prune` removes folders and branches: it must remove only what a run made. A kept worktree
 * holding a link to the user's files (what a hostile attempt could leave), and a worktree folder swapped
 * for a link to a user's folder, are pruned without touching what the links point to.
 */
import { existsSync, readFileSync, renameSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { editTurns, fixtureRepo, leftovers, planTurns } from '../e2e/fix-harness.js';
import { keel, keelHome, model, modelFlags } from '../e2e/harness.js';
import { tempDir, writeFiles } from '../helpers/tmp.js';

const TURNS = [
  ...planTurns('src/stats.js', '1. Look.'),
  ...editTurns('README.md', 'Small statistics helpers.', 'Small helpers.', 'Fixed!'),
];

/** An unverified fix run whose worktree is kept; returns the worktree folder. */
async function keptRun(repo: string, home: string): Promise<string> {
  const server = await model(TURNS);
  const run = await keel(
    [
      'fix',
      '--repo',
      repo,
      '--json',
      '--max-attempts',
      '1',
      ...modelFlags(server),
      '--issue',
      'mean is wrong',
    ],
    { cwd: home, home, timeoutMs: 25_000 },
  );
  const doc = JSON.parse(run.stdout);
  expect(doc.code, run.stderr).toBe('VERIFICATION_FAILED');
  expect(existsSync(doc.worktree)).toBe(true);
  return doc.worktree as string;
}

describe('keel runs prune removes only what runs made', () => {
  it('a link inside a kept worktree is removed as a link; the user files it points to stay', async () => {
    const repo = fixtureRepo('stats');
    const home = keelHome();
    const victim = tempDir('keel-victim-');
    writeFiles(victim, { 'precious.txt': 'mine\n' });
    const worktree = await keptRun(repo, home);
    symlinkSync(victim, join(worktree, 'escape'));

    const prune = await keel(['runs', 'prune', '--all', '-y'], { cwd: home, home });
    expect(prune.code, prune.stderr).toBe(0);
    expect(existsSync(worktree)).toBe(false);
    expect(readFileSync(join(victim, 'precious.txt'), 'utf8')).toBe('mine\n');
    expect(leftovers(repo)).toEqual({ branches: [], worktrees: 0 });
  });

  it('a worktree folder swapped for a link to a user folder is not removed through the link', async () => {
    const repo = fixtureRepo('stats');
    const home = keelHome();
    const victim = tempDir('keel-victim-');
    writeFiles(victim, { 'precious.txt': 'mine\n' });
    const worktree = await keptRun(repo, home);
    renameSync(worktree, `${worktree}.moved`);
    symlinkSync(victim, worktree);

    const prune = await keel(['runs', 'prune', '--all', '-y'], { cwd: home, home });
    expect(prune.code, prune.stderr).toBe(0);
    expect(prune.stdout).not.toContain(`worktree ${worktree}`);
    expect(readFileSync(join(victim, 'precious.txt'), 'utf8')).toBe('mine\n');
  });
});
