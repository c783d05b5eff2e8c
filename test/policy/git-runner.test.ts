/** The hardened git runner: each override checked with a marker, and the repository pinned, not discovered. */
import { chmodSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { git as keelGit } from '../../src/policy/git.js';
import {
  discoverRepo,
  driverOverrides,
  gitEnv,
  pinWorkspace,
  repoAt,
  runGit,
  withDiffGuards,
  workspaceRepo,
} from '../../src/policy/git-runner.js';
import { git, gitRepo, tempDir, writeFiles } from '../helpers/tmp.js';

/** A repository whose config names a program for every setting git 2.39 runs one for. */
function hostileRepo(): { repo: string; seen: () => string[] } {
  const marks = tempDir('keel-marks-');
  const bin = tempDir('keel-evil-');
  const program = (name: string) => {
    const path = join(bin, name);
    writeFileSync(path, `#!/bin/sh\ntouch '${join(marks, name)}'\ncat\n`);
    chmodSync(path, 0o755);
    return path;
  };
  const repo = gitRepo({ 'a.x': 'a\n', 'b.p': 'b\n', 'c.t': 'c\n' });
  const set = (key: string, value: string) => git(repo, 'config', key, value);
  set('core.fsmonitor', program('fsmonitor'));
  set('filter.x.clean', program('clean'));
  set('filter.x.smudge', program('smudge'));
  set('filter.x.required', 'true');
  set('filter.p.process', program('process'));
  set('filter.p.required', 'true');
  set('diff.t.textconv', program('textconv'));
  set('diff.t.command', program('diffcommand'));
  set('diff.external', program('external'));
  set('core.pager', program('pager'));
  set('core.hooksPath', '.husky');
  for (const hook of ['reference-transaction', 'post-index-change', 'post-checkout', 'pre-commit']) {
    writeFiles(repo, { [`.husky/${hook}`]: `#!/bin/sh\ntouch '${join(marks, hook)}'\n` });
    chmodSync(join(repo, '.husky', hook), 0o755);
  }
  writeFiles(repo, { '.gitattributes': 'a.x filter=x\nb.p filter=p\n*.t diff=t\n' });
  return { repo, seen: () => readdirSync(marks).sort() };
}

describe('the hardened git runner', () => {
  it('runs no program the repository configures: fsmonitor, filters (required, process), textconv, external diff, pager, hooks', () => {
    const { repo, seen } = hostileRepo();
    const found = discoverRepo(repo);
    expect(found?.top).toBe(repo);
    if (!found) return;
    const run = (args: string[], input?: string) => runGit(found, repo, args, input ? { input } : {});
    writeFiles(repo, { 'a.x': 'a2\n', 'b.p': 'b2\n', 'c.t': 'c2\n' });
    run(['add', '-A']);
    run(['diff', 'HEAD']);
    run(['log', '-p', '-1']);
    run(['show', 'HEAD:c.t']);
    run(['status', '--porcelain']);
    const tree = run(['write-tree']).toString('utf8').trim();
    const env = {
      GIT_AUTHOR_NAME: 'k',
      GIT_AUTHOR_EMAIL: 'k@x',
      GIT_COMMITTER_NAME: 'k',
      GIT_COMMITTER_EMAIL: 'k@x',
    };
    const commit = runGit(found, repo, ['commit-tree', tree, '-p', 'HEAD', '-m', 'x'], { env })
      .toString('utf8')
      .trim();
    run(['update-ref', 'refs/keel/test', commit]);
    run(['update-ref', '--stdin', '-z'], `create refs/keel/other\0${commit}\0`);
    rmSync(join(repo, 'a.x'));
    rmSync(join(repo, 'b.p'));
    run(['checkout-index', '-f', 'a.x', 'b.p']);
    run(['worktree', 'add', '-q', join(tempDir(), 'wt'), 'HEAD']);
    expect(seen()).toEqual([]);
    // the control: plain git runs them
    git(repo, 'update-ref', 'refs/control', 'HEAD');
    expect(seen()).toContain('reference-transaction');
  });

  it('overrides every driver the config names, and notices a config change', () => {
    const { repo } = hostileRepo();
    const found = discoverRepo(repo);
    if (!found) throw new Error('no repository');
    const args = driverOverrides(found);
    expect(args).toEqual(
      expect.arrayContaining([
        'filter.x.clean=',
        'filter.p.process=',
        'filter.x.required=false',
        'diff.t.textconv=',
      ]),
    );
    git(repo, 'config', 'merge.m.driver', 'evil');
    expect(driverOverrides(found)).toContain('merge.m.driver=');
  });

  it('drops the caller’s git variables and sets inert ones', () => {
    const saved = { ...process.env };
    Object.assign(process.env, {
      GIT_DIR: '/elsewhere',
      GIT_SSH: 'evil',
      GIT_EXTERNAL_DIFF: 'evil',
      SSH_ASKPASS: 'x',
    });
    try {
      const env = gitEnv();
      expect(env.GIT_DIR).toBeUndefined();
      expect(env.GIT_SSH).toBeUndefined();
      expect(env.GIT_EXTERNAL_DIFF).toBeUndefined();
      expect(env.SSH_ASKPASS).toBeUndefined();
      expect(env).toMatchObject({
        GIT_CONFIG_GLOBAL: '/dev/null',
        GIT_CONFIG_NOSYSTEM: '1',
        GIT_PAGER: 'cat',
      });
    } finally {
      process.env = saved;
    }
  });

  it('adds --no-textconv --no-ext-diff to diff-like commands only', () => {
    expect(withDiffGuards(['-c', 'a=b', 'diff', 'HEAD'])).toEqual([
      '-c',
      'a=b',
      'diff',
      '--no-textconv',
      '--no-ext-diff',
      'HEAD',
    ]);
    expect(withDiffGuards(['add', '-A'])).toEqual(['add', '-A']);
  });

  it('never uses a repository that appears inside a pinned workspace, nor one inside a folder pinned without git', () => {
    const repo = gitRepo();
    pinWorkspace(repo);
    const folder = tempDir('keel-folder-');
    pinWorkspace(folder);
    for (const root of [repo, folder]) {
      writeFiles(root, { 'sub/f.txt': 'f\n' });
      git(join(root, 'sub'), 'init', '-q');
    }
    expect(repoAt(join(repo, 'sub'))?.top).toBe(repo);
    expect(workspaceRepo(join(folder, 'sub'))).toBeNull();
    expect(() => keelGit(join(folder, 'sub'), ['status'])).toThrow(/only in a repository it opened/);
  });

  it('costs little per call once the drivers are read (printed for the report)', () => {
    const { repo } = hostileRepo();
    const found = discoverRepo(repo);
    if (!found) throw new Error('no repository');
    const time = (fn: () => void, n = 20) => {
      const start = performance.now();
      for (let i = 0; i < n; i++) fn();
      return (performance.now() - start) / n;
    };
    const plain = time(() => git(repo, 'rev-parse', 'HEAD'));
    const hardened = time(() => runGit(found, repo, ['rev-parse', 'HEAD']));
    const enumerate = time(() => runGit(found, repo, ['config', '-z', '--name-only', '--get-regexp', '.']));
    console.log(
      `git call: plain ${plain.toFixed(2)} ms, hardened ${hardened.toFixed(2)} ms; enumeration ${enumerate.toFixed(2)} ms once per git dir`,
    );
    expect(hardened).toBeLessThan(plain + 20);
  });
});
