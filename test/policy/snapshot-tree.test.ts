/** The snapshot tree against real repositories: what it records, what it leaves out, and why. */
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openRepoAt } from '../../src/policy/git.js';
import { SafetyNet } from '../../src/policy/safety-net.js';
import { snapshotTree } from '../../src/policy/snapshot-tree.js';
import { applyUndo, describeStep, planUndo } from '../../src/policy/undo.js';
import { git, gitRepo as newRepo, tempDir, writeFiles } from '../helpers/tmp.js';

/** A committed repository, opened the way a session opens its workspace. */
function gitRepo(files?: Record<string, string>): string {
  const repo = newRepo(files);
  openRepoAt(repo);
  return repo;
}

const SMALL = { maxFileBytes: 100, maxTotalBytes: 250 };

/** Path -> blob (or link) content of a tree, for the paths asked about. */
function files(repo: string, tree: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of git(repo, 'ls-tree', '-r', '-z', tree).split('\0').filter(Boolean)) {
    const [meta = '', path = ''] = line.split('\t');
    const [mode, , sha = ''] = meta.split(' ');
    out.set(path, mode === '160000' ? `gitlink ${sha}` : git(repo, 'cat-file', 'blob', sha));
  }
  return out;
}

function head(repo: string): string {
  return git(repo, 'rev-parse', 'HEAD').trim();
}

describe('snapshotTree', () => {
  it('records tracked changes, deletions and untracked files, as git add -A would', () => {
    const repo = gitRepo({ 'a.txt': 'a\n', 'b.txt': 'b\n', 'dir/c.txt': 'c\n', '.gitignore': '*.log\n' });
    writeFiles(repo, { 'a.txt': 'a2\n', 'new/n.txt': 'n\n', 'debug.log': 'ignored\n', 'staged.txt': 's\n' });
    git(repo, 'add', 'staged.txt');
    writeFiles(repo, { 'staged.txt': 's2, after staging\n' });
    rmSync(join(repo, 'b.txt'));
    const { tree, skipped } = snapshotTree(repo, head(repo));
    expect(skipped).toEqual([]);
    const t = files(repo, tree);
    expect([...t.keys()].sort()).toEqual(['.gitignore', 'a.txt', 'dir/c.txt', 'new/n.txt', 'staged.txt']);
    expect(t.get('a.txt')).toBe('a2\n');
    expect(t.get('staged.txt')).toBe('s2, after staging\n');
    // git's own answer for the same work tree
    const index = join(tempDir(), 'index');
    const env = { ...process.env, GIT_INDEX_FILE: index };
    execFileSync('git', ['add', '-A'], { cwd: repo, env });
    expect(tree).toBe(execFileSync('git', ['write-tree'], { cwd: repo, env, encoding: 'utf8' }).trim());
  });

  it('leaves out nested repositories, names git refuses, special files and huge files, and names each', () => {
    const repo = gitRepo({ 'a.txt': 'a\n', 'tracked-big.bin': 'small at first\n', 'pipe-was-file': 'f\n' });
    writeFiles(repo, {
      'vendor/lib/x.js': 'x\n',
      '.git./config': '[core]\n',
      'sub/.GIT/hooks': 'h\n',
      'big.bin': 'x'.repeat(101),
      'tracked-big.bin': 'y'.repeat(150),
      'm1.bin': 'm'.repeat(100),
      'm2.bin': 'm'.repeat(100),
      'm3.bin': 'm'.repeat(100),
    });
    git(join(repo, 'vendor/lib'), 'init', '-q');
    rmSync(join(repo, 'pipe-was-file'));
    execFileSync('mkfifo', [join(repo, 'pipe-was-file')]);
    const { tree, skipped } = snapshotTree(repo, head(repo), SMALL);
    const reasons = Object.fromEntries(skipped.map((s) => [s.path, s.reason]));
    expect(reasons).toMatchObject({
      'vendor/lib/': 'a nested repository (left to its owner)',
      '.git./config': 'git refuses this path name',
      'sub/.GIT/hooks': 'git refuses this path name',
      'big.bin': expect.stringMatching(/^larger than 0 MB/),
      'tracked-big.bin': expect.stringMatching(/^larger than/),
      'pipe-was-file': 'not a regular file',
    });
    // two of the three 100-byte files fit in the 250-byte total; the third is named
    const total = skipped.filter((s) => s.reason.startsWith("past the snapshot's"));
    expect(total).toHaveLength(1);
    const t = files(repo, tree);
    expect(t.has('big.bin') || t.has('tracked-big.bin') || t.has('pipe-was-file')).toBe(false);
    expect([...t.keys()].filter((p) => p.startsWith('m')).length).toBe(2);
    expect(
      [...t.keys()].some((p) => p.startsWith('vendor') || p.startsWith('.git') || p.startsWith('sub')),
    ).toBe(false);
  });

  it('keeps a submodule as HEAD records it and never reads inside it', () => {
    const lib = gitRepo({ 'index.js': 'module\n' });
    const repo = gitRepo({ 'a.txt': 'a\n' });
    git(repo, '-c', 'protocol.file.allow=always', 'submodule', 'add', '-q', lib, 'lib');
    git(repo, 'commit', '-q', '-m', 'submodule');
    writeFiles(repo, { 'lib/index.js': 'dirty\n', 'a.txt': 'a2\n' });
    const { tree, skipped } = snapshotTree(repo, head(repo));
    expect(skipped).toEqual([]);
    expect(files(repo, tree).get('lib')).toBe(`gitlink ${head(lib)}`);
    expect(files(repo, tree).get('a.txt')).toBe('a2\n');
  });

  it('records a tracked path beneath a link, or turned into a folder, as gone', () => {
    const repo = gitRepo({ 'a/b.txt': 'b\n', f: 'file\n' });
    const outside = tempDir();
    writeFiles(outside, { 'b.txt': 'outside\n' });
    rmSync(join(repo, 'a'), { recursive: true });
    symlinkSync(outside, join(repo, 'a'));
    rmSync(join(repo, 'f'));
    mkdirSync(join(repo, 'f'));
    writeFileSync(join(repo, 'f/inner.txt'), 'inner\n');
    const t = files(repo, snapshotTree(repo, head(repo)).tree);
    expect(t.get('a')).toBe(outside);
    expect(t.has('a/b.txt')).toBe(false);
    expect(t.get('f/inner.txt')).toBe('inner\n');
  });

  it('sees a change made in the same second as the index was written (racy git), through its copy', () => {
    const repo = gitRepo({ 'r.txt': 'AAAA\n' });
    // the racy case: the file is rewritten (same size) in the second the index was written, so its stat
    // data matches; only the index file's own mtime tells git to look at the content
    for (let attempt = 0; attempt < 5; attempt++) {
      writeFileSync(join(repo, 'r.txt'), 'AAAA\n');
      git(repo, 'add', 'r.txt');
      writeFileSync(join(repo, 'r.txt'), 'BBBB\n');
      const second = (p: string) => Math.floor(statSync(p).mtimeMs / 1000);
      if (second(join(repo, '.git/index')) === second(join(repo, 'r.txt'))) break;
    }
    // the snapshot runs a second later, as a session's first write does: a copy of the index stamped then
    // would look newer than the change
    const next = (Math.floor(statSync(join(repo, '.git/index')).mtimeMs / 1000) + 1) * 1000;
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, Math.max(0, next - Date.now() + 20));
    expect(files(repo, snapshotTree(repo, head(repo)).tree).get('r.txt')).toBe('BBBB\n');
  });
});

describe('undo and what the snapshot skipped', () => {
  it('leaves a file it never saved, says so, and still removes a huge file the session made', () => {
    const repo = gitRepo({ 'a.txt': 'a\n' });
    writeFiles(repo, { 'user-big.bin': 'u'.repeat(500) });
    const undoDir = tempDir();
    const net = new SafetyNet({ root: repo, sessionId: 's1', undoDir, limits: SMALL });
    const records = net.beforeWrite([join(repo, 'a.txt')]);
    expect(records[0]).toMatchObject({
      kind: 'git',
      skipped: [{ path: join(repo, 'user-big.bin'), reason: expect.stringMatching(/^larger than/) }],
    });
    // the session edits a.txt, changes the big file it could not save, and makes a big file of its own
    writeFiles(repo, {
      'a.txt': 'session\n',
      'user-big.bin': 'v'.repeat(600),
      'session-big.bin': 's'.repeat(500),
    });
    const plan = planUndo(records, repo);
    expect(plan.steps.map((s) => describeStep(s, repo))).toEqual([
      'restore a.txt',
      'remove session-big.bin',
      'leave user-big.bin as it is (not saved: larger than 0 MB (0 MB))',
    ]);
    applyUndo(plan);
    expect(git(repo, 'status', '--porcelain')).toBe('?? user-big.bin\n');
    expect(statSync(join(repo, 'user-big.bin')).size).toBe(600);
  });

  it('outside git, does not copy a file over the cap, and undo leaves it', () => {
    const root = tempDir();
    writeFiles(root, { 'big.bin': 'b'.repeat(500), 'small.txt': 'small\n' });
    const net = new SafetyNet({ root, sessionId: 's2', undoDir: tempDir(), limits: SMALL });
    const [record] = net.beforeWrite([join(root, 'big.bin'), join(root, 'small.txt')]);
    expect(record).toMatchObject({ kind: 'copy', skipped: [{ path: join(root, 'big.bin') }] });
    writeFiles(root, { 'big.bin': 'session\n', 'small.txt': 'session\n' });
    const plan = planUndo(record ? [record] : [], root);
    expect(plan.steps.map((s) => describeStep(s, root))).toEqual([
      'restore small.txt',
      'leave big.bin as it is (not saved: larger than 0 MB)',
    ]);
  });
});
