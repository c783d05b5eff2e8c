/** The async git path (runGitAsync: the file tools' ls-files in a fix's worktree) waits for another git's lock too. */
import { realpathSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openRepo, runGitAsync } from '../../src/policy/git-runner.js';
import { git, gitRepo } from '../helpers/tmp.js';

describe('runGitAsync and git locks', () => {
  it('a command that meets another git’s lock runs again once the lock is gone', async () => {
    const top = realpathSync(gitRepo({ 'a.txt': 'a\n' }));
    const repo = openRepo(top);
    if (!repo) throw new Error('no repository');
    // another git holds the ref's lock for a moment (as a concurrent fix's branch update does)
    const lock = join(top, '.git', 'refs', 'heads', 'side.lock');
    writeFileSync(lock, '');
    setTimeout(() => rmSync(lock), 300);
    const result = await runGitAsync(repo, top, ['update-ref', 'refs/heads/side', 'HEAD'], {
      signal: new AbortController().signal,
      maxOutputBytes: 1 << 20,
    });
    expect(result.stderr).toBe('');
    expect(result.exitCode).toBe(0);
    expect(git(top, 'rev-parse', 'side')).toBe(git(top, 'rev-parse', 'HEAD'));
  });
});
