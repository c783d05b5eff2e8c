/** Temporary folders and git repositories for tests; removed after each test file. */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll } from 'vitest';

const made: string[] = [];
// removing a file's folders is cleanup, not a test: the fix-runner files leave installed node_modules trees
// that take longer than the default hook timeout to delete on a loaded machine
afterAll(() => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
}, 180_000);

/** A fresh, canonical temporary folder. */
export function tempDir(prefix = 'keel-test-'): string {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
  made.push(dir);
  return dir;
}

/** Write files (path -> content) under `root`, creating folders. */
export function writeFiles(root: string, files: Record<string, string>): void {
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), content);
  }
}

/** Run git in a folder with a clean git environment. */
export function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, {
    cwd,
    encoding: 'utf8',
    env: {
      PATH: process.env.PATH,
      HOME: cwd,
      GIT_AUTHOR_NAME: 'test',
      GIT_AUTHOR_EMAIL: 't@example.com',
      GIT_COMMITTER_NAME: 'test',
      GIT_COMMITTER_EMAIL: 't@example.com',
    },
  });
}

/** A temporary git repository with `files` committed. */
export function gitRepo(files: Record<string, string> = { 'README.md': '# demo\n' }): string {
  const dir = tempDir('keel-repo-');
  git(dir, 'init', '-q', '-b', 'main');
  writeFiles(dir, files);
  git(dir, 'add', '-A');
  git(dir, 'commit', '-q', '-m', 'initial');
  return dir;
}
