/**
 * Hostile repositories against the real binary (issue 7, finding 1): git runs programs a repository
 * configures, so every git keel starts must run none of them. Each hostile program touches a marker in a
 * folder outside the workspace; each test asserts no marker appears, then proves the fixture really is
 * hostile by running plain git once (the control), which does touch the marker.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { branchCommits, editTurns, fix, fixtureRepo, planTurns } from '../e2e/fix-harness.js';
import { keel, keelHome, lastSessionEvents, model, modelFlags } from '../e2e/harness.js';
import { git, gitRepo, tempDir, writeFiles } from '../helpers/tmp.js';

/** A folder outside every workspace, and programs that leave a marker named after themselves in it. */
function markers(): { dir: string; program: (name: string) => string; seen: () => string[] } {
  const dir = tempDir('keel-marks-');
  const bin = tempDir('keel-evil-');
  return {
    dir,
    program: (name) => {
      const path = join(bin, name);
      // cat: a filter or hook that passes its input through, as a real one would
      writeFileSync(path, `#!/bin/sh\ntouch '${join(dir, name)}'\ncat\n`);
      chmodSync(path, 0o755);
      return path;
    },
    seen: () => readdirSync(dir).sort(),
  };
}

/** Plain git as a user would run it (their own environment, no keel overrides): the control. */
function plainGit(cwd: string, ...args: string[]): void {
  try {
    execFileSync('git', args, {
      cwd,
      stdio: 'ignore',
      env: { PATH: process.env.PATH, HOME: cwd, GIT_CONFIG_NOSYSTEM: '1' },
    });
  } catch {
    // a hostile program that breaks the command still ran
  }
}

/** A nested repository at `dir` whose config runs `fsmonitor` on every index read. */
function nestedRepo(dir: string, fsmonitor: string): void {
  writeFiles(dir, { 'lib.js': 'export const needle = 1;\n' });
  git(dir, 'init', '-q');
  git(dir, 'config', 'core.fsmonitor', fsmonitor);
}

const LOOK_INSIDE = (path: string) => [
  { tool_calls: [{ name: 'grep', arguments: { pattern: 'needle', path } }] },
  { tool_calls: [{ name: 'list_dir', arguments: { path } }] },
  { tool_calls: [{ name: 'glob', arguments: { pattern: '**/*.js', path } }] },
];

describe('hostile git configuration never runs a program on the host', () => {
  it('a: keel ask in a downloaded folder with vendor/lib/.git setting core.fsmonitor (folder and repository)', async () => {
    const m = markers();
    const folder = tempDir('keel-download-');
    const repo = gitRepo({ 'README.md': '# repo\n' });
    for (const root of [folder, repo]) {
      nestedRepo(join(root, 'vendor/lib'), m.program('fsmonitor'));
      const server = await model([
        ...LOOK_INSIDE('vendor/lib'),
        { text: 'looked', expect: { last_tool_result_contains: 'lib.js' } },
      ]);
      const run = await keel(['ask', ...modelFlags(server), 'look in vendor/lib'], {
        cwd: root,
        home: keelHome(),
      });
      expect(run.code, run.stderr).toBe(0);
      expect(m.seen()).toEqual([]);
    }
    plainGit(join(folder, 'vendor/lib'), 'status');
    expect(m.seen()).toEqual(['fsmonitor']);
  });

  it('b: keel edit, a nested repository made by the sandboxed shell (and one made before), then list_dir/grep in it', async () => {
    const m = markers();
    const repo = gitRepo({ 'README.md': '# repo\n' });
    const fsmonitor = m.program('fsmonitor');
    nestedRepo(join(repo, 'made'), fsmonitor);
    const command = `git init -q sub && git -C sub config core.fsmonitor '${fsmonitor}' && echo 'needle' > sub/lib.js`;
    const server = await model([
      { tool_calls: [{ name: 'shell', arguments: { command } }] },
      ...LOOK_INSIDE('sub'),
      ...LOOK_INSIDE('made'),
      { text: 'done' },
    ]);
    const run = await keel(['edit', ...modelFlags(server), 'make a repo'], { cwd: repo, home: keelHome() });
    expect(run.code, run.stderr).toBe(0);
    expect(m.seen()).toEqual([]);
    plainGit(join(repo, 'made'), 'status');
    expect(m.seen()).toEqual(['fsmonitor']);
  });

  it('c: a folder a previous session made a repository with a clean filter: the safety net runs no filter', async () => {
    const m = markers();
    const work = tempDir('keel-work-');
    writeFiles(work, { 'a.txt': 'a\n', '.gitattributes': '* filter=x\n' });
    // what `git init && git config filter.x.clean ...` in the sandbox of an earlier session leaves
    git(work, 'init', '-q');
    git(work, 'config', 'filter.x.clean', m.program('clean'));
    git(work, 'config', 'filter.x.smudge', m.program('smudge'));
    git(work, 'config', 'filter.x.required', 'true');
    git(work, 'config', 'filter.p.process', m.program('process'));
    writeFiles(work, { '.gitattributes': '*.txt filter=x\n*.md filter=p\n', 'b.md': 'b\n' });
    const home = keelHome();
    const server = await model([
      { tool_calls: [{ name: 'write_file', arguments: { path: 'a.txt', content: 'changed\n' } }] },
      { text: 'done' },
    ]);
    const run = await keel(['edit', ...modelFlags(server), 'edit a'], { cwd: work, home });
    expect(run.code, run.stderr).toBe(0);
    expect(lastSessionEvents(home).some((e) => e.type === 'safety_net')).toBe(true);
    expect(m.seen()).toEqual([]);
    plainGit(work, 'add', '-A');
    expect(m.seen()).toEqual(expect.arrayContaining(['clean']));
  });

  it('d: core.hooksPath=.husky with reference-transaction and post-index-change: snapshot, --commit and undo run none', async () => {
    const m = markers();
    const repo = gitRepo({ 'README.md': '# repo\n', 'a.txt': 'a\n' });
    git(repo, 'config', 'core.hooksPath', '.husky');
    // the hooks the model wrote in an earlier session (the shell can chmod them)
    const hooks = [
      'reference-transaction',
      'post-index-change',
      'pre-commit',
      'post-commit',
      'post-checkout',
    ];
    for (const hook of hooks) {
      writeFiles(repo, { [`.husky/${hook}`]: `#!/bin/sh\ntouch '${join(m.dir, hook)}'\n` });
      chmodSync(join(repo, '.husky', hook), 0o755);
    }
    const home = keelHome();
    const server = await model([
      { tool_calls: [{ name: 'write_file', arguments: { path: 'a.txt', content: 'changed\n' } }] },
      { text: 'done' },
    ]);
    const run = await keel(['edit', '--commit', ...modelFlags(server), 'edit a'], { cwd: repo, home });
    expect(run.code, run.stderr).toBe(0);
    expect(git(repo, 'log', '-1', '--format=%an')).toContain('keel');
    const undo = await keel(['undo', '--yes'], { cwd: repo, home });
    expect(undo.code, undo.stderr).toBe(0);
    expect(git(repo, 'show', 'HEAD:a.txt')).toBe('a\n');
    expect(m.seen()).toEqual([]);
    plainGit(repo, 'update-ref', 'refs/control', 'HEAD');
    expect(m.seen()).toEqual(['reference-transaction']);
  });

  it('e: textconv, diff.external and core.pager in .git/config: keel trust diff and keel check run none', async () => {
    const m = markers();
    const repo = gitRepo({ 'keel.toml': 'max_rounds = 5\n', 'src/a.ts': 'export const a = 1;\n' });
    writeFiles(repo, { '.gitattributes': '* diff=x\n' });
    git(repo, 'config', 'diff.x.textconv', m.program('textconv'));
    git(repo, 'config', 'diff.x.command', m.program('diffcommand'));
    git(repo, 'config', 'diff.external', m.program('external'));
    git(repo, 'config', 'core.pager', m.program('pager'));
    git(repo, 'add', '.gitattributes');
    writeFiles(repo, { 'keel.toml': 'max_rounds = 50\n', 'src/a.ts': 'export const a = 2;\n' });
    git(repo, 'add', 'src/a.ts');
    git(repo, 'config', 'core.fsmonitor', m.program('fsmonitor'));
    const home = keelHome();
    const trust = await keel(['trust', 'diff', '--base', 'HEAD'], { cwd: repo, home });
    expect(trust.code, trust.stderr).toBe(0);
    const staged = await keel(['check'], { cwd: repo, home });
    expect(staged.code, staged.stderr).toBe(0);
    const all = await keel(['check', '--all-files'], { cwd: repo, home });
    expect(all.code, all.stderr).toBe(0);
    expect(m.seen()).toEqual([]);
    plainGit(repo, 'diff', 'HEAD');
    expect(m.seen().length).toBeGreaterThan(0);
  });

  it('f: keel fix on a repository with a smudge filter, post-checkout and reference-transaction hooks: verified, nothing runs', async () => {
    const m = markers();
    const repo = fixtureRepo('stats');
    // programs the worktree's checkout and branch creation would run (fsmonitor is left to a and b: the
    // harness's own `git status` would trip it)
    writeFiles(repo, { '.gitattributes': '*.js filter=x\n' });
    git(repo, 'add', '.gitattributes');
    git(repo, 'commit', '-q', '--no-verify', '-m', 'attributes');
    git(repo, 'config', 'filter.x.smudge', m.program('smudge'));
    for (const hook of ['post-checkout', 'reference-transaction']) {
      writeFiles(repo, { [`.git/hooks/${hook}`]: `#!/bin/sh\ntouch '${join(m.dir, hook)}'\n` });
      chmodSync(join(repo, '.git/hooks', hook), 0o755);
    }
    const server = await model([
      ...planTurns('src/stats.js', '1. Divide by values.length.'),
      ...editTurns(
        'src/stats.js',
        '  return sum(values) / (values.length + 1);',
        '  return sum(values) / values.length;',
        'now divides by the length',
      ),
    ]);
    const { run, doc } = await fix(repo, server, ['--issue', 'mean() of [2, 4, 6] returns 3, not 4']);
    expect(run.code, run.stderr).toBe(0);
    expect(doc).toMatchObject({ status: 'verified' });
    expect(branchCommits(repo, doc.branch ?? '')).toHaveLength(1);
    expect(m.seen()).toEqual([]);
    plainGit(repo, 'update-ref', 'refs/control', 'HEAD');
    expect(existsSync(join(m.dir, 'reference-transaction'))).toBe(true);
  });
});
