import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  existsSync,
  lstatSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { runUndo } from '../../src/cli/undo-command.js';
import { commitSessionFiles, SafetyNet, type SafetyNetRecord } from '../../src/policy/safety-net.js';
import { applyUndo, describeStep, planUndo, UndoRefused } from '../../src/policy/undo.js';
import { openDb } from '../../src/store/db.js';
import { EventLog } from '../../src/store/event-log.js';
import { git, gitRepo, tempDir, writeFiles } from '../helpers/tmp.js';

/** Every file under `dir` except .git, with its mode and content hash (ignored files included). */
function fullTree(dir: string, prefix = ''): string[] {
  const out: string[] = [];
  for (const name of readdirSync(join(dir, prefix)).sort()) {
    const rel = prefix ? `${prefix}/${name}` : name;
    if (rel === '.git') continue;
    const st = lstatSync(join(dir, rel));
    if (st.isDirectory()) out.push(`${rel}/`, ...fullTree(dir, rel));
    else if (st.isSymbolicLink()) out.push(`${rel} -> ${readlinkSync(join(dir, rel))}`);
    else out.push(`${rel} ${(st.mode & 0o777).toString(8)} ${hash(readFileSync(join(dir, rel)))}`);
  }
  return out;
}

function hash(data: Buffer | string): string {
  return createHash('sha256').update(data).digest('hex').slice(0, 16);
}

/** What a user sees of a repository: its non-ignored files, status, staged diff, stash and HEAD. */
function fingerprint(repo: string) {
  const files = git(repo, 'ls-files', '-z', '-co', '--exclude-standard').split('\0').filter(Boolean);
  return {
    files: [...new Set(files)].sort().map((f) => {
      if (!existsSync(join(repo, f))) return `${f} missing`;
      const st = lstatSync(join(repo, f));
      return `${f} ${(st.mode & 0o777).toString(8)} ${hash(readFileSync(join(repo, f)))}`;
    }),
    status: git(repo, 'status', '--porcelain', '-uall'),
    cached: git(repo, 'diff', '--cached'),
    stash: git(repo, 'stash', 'list'),
    head: `${git(repo, 'symbolic-ref', 'HEAD')} ${git(repo, 'for-each-ref', '--format=%(objectname)', 'refs/heads')}`,
  };
}

/** A repository with the kinds of uncommitted work a user has: staged, unstaged, untracked, stashed, ignored. */
function busyRepo(): string {
  const repo = gitRepo({
    'README.md': '# demo\n',
    'src/a.ts': 'export const a = 1;\n',
    'src/b.ts': 'export const b = 1;\n',
    'src/c.ts': 'export const c = 1;\n',
    '.gitignore': 'dist/\n*.log\n',
  });
  writeFiles(repo, { 'src/c.ts': 'export const c = 2; // stashed\n' });
  git(repo, 'stash', '-q');
  writeFiles(repo, {
    'src/b.ts': 'export const b = 2; // the user is mid-edit\n',
    'src/c.ts': 'export const c = 3; // staged by the user\n',
    'notes.txt': 'untracked user notes\n',
    'dist/out.js': 'built\n',
    'debug.log': 'old log\n',
  });
  git(repo, 'add', 'src/c.ts');
  return repo;
}

function net(root: string, sessionId = 'sess-1') {
  return new SafetyNet({ root, sessionId, undoDir: join(tempDir('keel-undo-'), 'undo') });
}

/** A session's writes, each announced to the safety net first, as the loop does. */
function simulateSession(repo: string, safety: SafetyNet): SafetyNetRecord[] {
  const records: SafetyNetRecord[] = [];
  const write = (rel: string, content: string | undefined) => {
    records.push(...safety.beforeWrite([join(repo, rel)]));
    if (content === undefined) rmSync(join(repo, rel));
    else writeFiles(repo, { [rel]: content });
  };
  records.push(...safety.beforeWrite([])); // a shell call first: it names no paths
  write('src/a.ts', 'export const a = 99;\n');
  chmodSync(join(repo, 'src/a.ts'), 0o755);
  write('README.md', undefined);
  write('new.txt', 'created\n');
  write('deep/new/dir/x.ts', 'export {};\n');
  write('src/b.ts', 'export const b = 3; // the agent rewrote the user edit\n');
  write('notes.txt', 'the agent touched the notes\n');
  write('debug.log', 'agent log\n');
  write('dist/new.js', 'agent build\n');
  return records;
}

describe('safety net in git', () => {
  it('snapshots the whole work tree without touching files, index, status or stash', () => {
    const repo = busyRepo();
    const before = fingerprint(repo);
    const tree = fullTree(repo);
    const index = hash(readFileSync(join(repo, '.git/index')));
    const head = git(repo, 'rev-parse', 'HEAD').trim();

    const records = net(repo).beforeWrite([]);

    expect(hash(readFileSync(join(repo, '.git/index')))).toBe(index);
    expect(fullTree(repo)).toEqual(tree);
    expect(fingerprint(repo)).toEqual(before);
    expect(records).toHaveLength(1);
    const record = records[0];
    if (record?.kind !== 'git') throw new Error('expected a git record');
    expect(record).toMatchObject({ repo, ref: 'refs/keel/sessions/sess-1', head, branch: 'refs/heads/main' });
    expect(git(repo, 'rev-parse', 'refs/keel/sessions/sess-1').trim()).toBe(record.commit);
    expect(git(repo, 'rev-parse', `${record.commit}^`).trim()).toBe(head);
    expect(record.tag).toMatch(/^refs\/keel\/pre\/\d{8}T\d{6}Z(-\d+)?$/);
    expect(git(repo, 'rev-parse', record.tag ?? '').trim()).toBe(head);
    // nothing among the user's own tags: git describe and git push --tags never see keel
    expect(git(repo, 'tag', '--list')).toBe('');
    // the snapshot holds the user's uncommitted work, and not ignored files
    expect(git(repo, 'show', `${record.commit}:src/b.ts`)).toContain('mid-edit');
    expect(git(repo, 'show', `${record.commit}:notes.txt`)).toBe('untracked user notes\n');
    const files = git(repo, 'ls-tree', '-r', '--name-only', record.commit);
    expect(files).not.toContain('debug.log');
    expect(files).not.toContain('dist/');
  });

  it('snapshots once per session, also when the session resumes in a new process', () => {
    const repo = busyRepo();
    const first = net(repo);
    expect(first.beforeWrite([])).toHaveLength(1);
    expect(first.beforeWrite([join(repo, 'src/a.ts')])).toEqual([]);
    expect(net(repo).beforeWrite([])).toEqual([]);
    const other = net(repo, 'sess-2').beforeWrite([])[0];
    expect(other?.kind === 'git' && other.tag).toMatch(/^refs\/keel\/pre\//);
  });

  it('undo restores exactly the state before the session', () => {
    const repo = busyRepo();
    const before = fingerprint(repo);
    const tree = fullTree(repo);
    const records = simulateSession(repo, net(repo));
    expect(fingerprint(repo)).not.toEqual(before);

    const plan = planUndo(records, repo);
    const steps = plan.steps.map((s) => describeStep(s, repo)).sort();
    expect(steps).toEqual(
      [
        'remove new.txt',
        'remove deep/new/dir/x.ts',
        'remove dist/new.js',
        'restore README.md',
        'restore debug.log',
        'restore notes.txt',
        'restore src/a.ts',
        'restore src/b.ts',
      ].sort(),
    );
    expect(applyUndo(plan).sort()).toEqual(steps);

    expect(fingerprint(repo)).toEqual(before);
    expect(fullTree(repo)).toEqual(tree); // ignored files too, and no folders left behind
    expect(existsSync(join(repo, 'deep'))).toBe(false);
    // the session's work is kept, so the undo can itself be undone
    expect(git(repo, 'show', 'refs/keel/undone/sess-1:new.txt')).toBe('created\n');
    expect(planUndo(records, repo).steps).toEqual([]);
  });

  it('leaves ignored files the session did not write alone', () => {
    const repo = busyRepo();
    const safety = net(repo);
    const records = safety.beforeWrite([]);
    writeFiles(repo, { 'dist/out.js': 'rebuilt by a test run\n', 'build.log': 'log\n' });
    applyUndo(planUndo(records, repo));
    expect(readFileSync(join(repo, 'dist/out.js'), 'utf8')).toBe('rebuilt by a test run\n');
    expect(existsSync(join(repo, 'build.log'))).toBe(true);
  });

  it('works in a repository with no commits yet', () => {
    const repo = tempDir('keel-unborn-');
    git(repo, 'init', '-q', '-b', 'main');
    writeFiles(repo, { 'a.txt': 'staged\n', 'b.txt': 'untracked\n' });
    git(repo, 'add', 'a.txt');
    const before = fingerprint(repo);
    const safety = net(repo);
    const records = safety.beforeWrite([]);
    expect(records[0]).toMatchObject({ kind: 'git', head: null, tag: null, branch: 'refs/heads/main' });
    expect(fingerprint(repo)).toEqual(before);
    writeFiles(repo, { 'a.txt': 'changed\n', 'c/d.txt': 'new\n' });
    rmSync(join(repo, 'b.txt'));
    applyUndo(planUndo(records, repo));
    expect(fingerprint(repo)).toEqual(before);
  });

  it('snapshots once per session in a repository with no commits yet', () => {
    const repo = tempDir('keel-unborn-');
    git(repo, 'init', '-q', '-b', 'main');
    writeFiles(repo, { 'a.txt': 'a\n' });
    expect(net(repo).beforeWrite([])).toHaveLength(1);
    expect(net(repo).beforeWrite([])).toEqual([]);
    expect(net(repo, 'sess-2').beforeWrite([])[0]).toMatchObject({ head: null, branch: 'refs/heads/main' });
  });

  it('records a detached HEAD as no branch', () => {
    const repo = busyRepo();
    git(repo, 'checkout', '-q', '--detach');
    const head = git(repo, 'rev-parse', 'HEAD').trim();
    expect(net(repo).beforeWrite([])[0]).toMatchObject({ kind: 'git', head, branch: null });
  });

  it('takes the next marker name when the HEAD marker is taken, and still creates the session ref', () => {
    const repo = busyRepo();
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      vi.setSystemTime(new Date('2026-03-01T10:00:00Z'));
      git(repo, 'update-ref', 'refs/keel/pre/20260301T100000Z', 'HEAD');
      const record = net(repo).beforeWrite([])[0];
      expect(record).toMatchObject({ kind: 'git', tag: 'refs/keel/pre/20260301T100000Z-2' });
      expect(git(repo, 'rev-parse', 'refs/keel/sessions/sess-1').trim()).toBe(
        record?.kind === 'git' ? record.commit : '',
      );
    } finally {
      vi.useRealTimers();
    }
  });

  it('commits the snapshot as keel, and a session commit as the user or keel when the user has no identity', () => {
    const saved = { ...process.env };
    const home = tempDir('keel-home-');
    for (const key of [
      'GIT_COMMITTER_NAME',
      'GIT_COMMITTER_EMAIL',
      'GIT_AUTHOR_NAME',
      'GIT_AUTHOR_EMAIL',
      'EMAIL',
    ])
      delete process.env[key];
    Object.assign(process.env, { HOME: home, XDG_CONFIG_HOME: home, GIT_CONFIG_NOSYSTEM: '1' });
    const committer = (repo: string, rev: string) =>
      git(repo, 'log', '-1', '--format=%an <%ae>|%cn <%ce>', rev).trim();
    try {
      const nobody = busyRepo();
      const first = net(nobody).beforeWrite([])[0];
      expect(committer(nobody, first?.kind === 'git' ? first.commit : '')).toBe(
        'keel <keel@localhost>|keel <keel@localhost>',
      );
      writeFiles(nobody, { 'src/a.ts': 'export const a = 2;\n' });
      expect(committer(nobody, commitSessionFiles(nobody, ['src/a.ts'], 'keel: a') ?? '')).toBe(
        'keel <keel@localhost>|keel <keel@localhost>',
      );

      const ada = busyRepo();
      git(ada, 'config', 'user.name', 'Ada');
      git(ada, 'config', 'user.email', 'ada@example.com');
      const snap = net(ada).beforeWrite([])[0];
      expect(committer(ada, snap?.kind === 'git' ? snap.commit : '')).toBe(
        'keel <keel@localhost>|keel <keel@localhost>',
      );
      writeFiles(ada, { 'src/a.ts': 'export const a = 2;\n' });
      // a session's commit on the user's branch is the user's: DCO and CLA checks read its author
      expect(committer(ada, commitSessionFiles(ada, ['src/a.ts'], 'keel: a') ?? '')).toBe(
        'Ada <ada@example.com>|Ada <ada@example.com>',
      );
    } finally {
      process.env = saved;
    }
  });

  it('snapshots with a handful of git processes (no add -A), and asks about a path only on its first write', () => {
    const repo = busyRepo();
    const bin = tempDir('keel-bin-');
    const log = join(bin, 'calls');
    const real = execFileSync('sh', ['-c', 'command -v git'], { encoding: 'utf8' }).trim();
    writeFileSync(join(bin, 'git'), `#!/bin/sh\necho "$*" >> '${log}'\nexec '${real}' "$@"\n`);
    chmodSync(join(bin, 'git'), 0o755);
    const calls = () => (existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n') : []);
    const saved = process.env.PATH;
    process.env.PATH = `${bin}:${saved}`;
    try {
      const safety = net(repo);
      expect(safety.beforeWrite([join(repo, 'src/a.ts')])).toHaveLength(1);
      const first = calls();
      // the tree is built path by path: changed files, untracked files, one update-index, one write-tree
      const verb = /(?:^| )((?:diff-files|diff-index|ls-files|update-index|write-tree|add)(?: .*)?)$/;
      expect(first.flatMap((c) => verb.exec(c)?.[1] ?? [])).toEqual([
        'diff-files --no-textconv --no-ext-diff -z --name-only --ignore-submodules=all',
        'ls-files -z --others --exclude-standard',
        'update-index --add --remove -z --stdin',
        'write-tree',
      ]);
      expect(first.length).toBeLessThanOrEqual(12);
      expect(safety.beforeWrite([join(repo, 'src/a.ts')])).toEqual([]);
      expect(calls()).toHaveLength(first.length);
      safety.beforeWrite([join(repo, 'src/a.ts'), join(repo, 'src/b.ts')]);
      expect(
        calls()
          .slice(first.length)
          .map((c) => c.replace(/^.* (?=check-ignore)/, '')),
      ).toEqual(['check-ignore -z --stdin']);
    } finally {
      process.env.PATH = saved;
    }
  });

  it('is not confused by GIT_DIR and friends pointing at another repository', () => {
    const repo = busyRepo();
    const elsewhere = gitRepo({ 'other.txt': 'other\n' });
    const saved = { ...process.env };
    Object.assign(process.env, {
      GIT_DIR: join(elsewhere, '.git'),
      GIT_WORK_TREE: elsewhere,
      GIT_INDEX_FILE: join(elsewhere, '.git/index'),
    });
    try {
      const records = simulateSession(repo, net(repo));
      expect(records[0]).toMatchObject({ kind: 'git', repo });
      applyUndo(planUndo(records, repo));
    } finally {
      process.env = saved;
    }
    expect(git(repo, 'for-each-ref', 'refs/keel/sessions')).toContain('refs/keel/sessions/sess-1');
    expect(git(elsewhere, 'for-each-ref', 'refs/keel')).toBe('');
    expect(git(elsewhere, 'status', '--porcelain')).toBe('');
  });
});

describe('commitSessionFiles', () => {
  it('commits only the given files and keeps the user’s other staged changes staged', () => {
    const repo = busyRepo();
    writeFiles(repo, { '.git/hooks/pre-commit': '#!/bin/sh\nexit 1\n' });
    chmodSync(join(repo, '.git/hooks/pre-commit'), 0o755);
    const before = fingerprint(repo);
    const head = git(repo, 'rev-parse', 'HEAD').trim();
    const safety = net(repo);
    const records = safety.beforeWrite([]);
    writeFiles(repo, { 'src/a.ts': 'export const a = 2;\n', 'src/new.ts': 'export {};\n' });
    rmSync(join(repo, 'README.md'));

    const files = [join(repo, 'src/a.ts'), 'src/new.ts', 'README.md', 'debug.log'];
    const sha = commitSessionFiles(repo, files, 'keel: edit a\n\nKeel-Session: sess-1');

    expect(sha).toMatch(/^[0-9a-f]{40}$/);
    expect(git(repo, 'rev-parse', 'HEAD').trim()).toBe(sha);
    // authored by the user, as the committer is: whoever git names for this repository
    const author = git(repo, 'log', '-1', '--format=%cn <%ce>', 'HEAD').trim();
    expect(git(repo, 'show', '--name-only', '--format=%an <%ae>|%s', 'HEAD').trim().split('\n')).toEqual([
      `${author}|keel: edit a`,
      '',
      'README.md',
      'src/a.ts',
      'src/new.ts',
    ]);
    expect(git(repo, 'diff', '--cached', '--name-only')).toBe('src/c.ts\n');
    expect(git(repo, 'diff', '--cached')).toContain('staged by the user');
    expect(git(repo, 'status', '--porcelain', '-uall')).toBe(' M src/b.ts\nM  src/c.ts\n?? notes.txt\n');
    expect(commitSessionFiles(repo, ['src/a.ts'], 'nothing new')).toBeUndefined();

    // undo moves the branch back, because everything after the snapshot is keel's
    const plan = planUndo(records, repo);
    expect(describeStep(plan.steps[0] ?? { op: 'remove', path: '', stop: '', root: '' }, repo)).toBe(
      `reset branch main to ${head.slice(0, 12)} (drops 1 keel commit)`,
    );
    applyUndo(plan);
    expect(git(repo, 'rev-parse', 'HEAD').trim()).toBe(head);
    expect(fingerprint(repo)).toEqual(before);
  });

  it('undo refuses to rewrite commits that are not keel’s', () => {
    const repo = busyRepo();
    const records = net(repo).beforeWrite([]);
    writeFiles(repo, { 'src/a.ts': 'export const a = 2;\n' });
    commitSessionFiles(repo, ['src/a.ts'], 'keel: edit a\n\nKeel-Session: sess-1');
    git(repo, 'commit', '-q', '-m', 'the user commits their staged work');
    expect(() => planUndo(records, repo)).toThrow(UndoRefused);
    expect(() => planUndo(records, repo)).toThrow(/not keel's[\s\S]*the user commits/);
    // a trailer naming another session is no warrant either
    const other = busyRepo();
    const theirs = net(other).beforeWrite([]);
    writeFiles(other, { 'src/a.ts': 'export const a = 2;\n' });
    commitSessionFiles(other, ['src/a.ts'], 'keel: edit a\n\nKeel-Session: sess-999');
    expect(() => planUndo(theirs, other)).toThrow(/not keel's/);
  });

  it('commits in a repository with no commits yet', () => {
    const repo = tempDir('keel-unborn-');
    git(repo, 'init', '-q', '-b', 'main');
    writeFiles(repo, { 'a.txt': 'a\n', 'b.txt': 'b\n' });
    const records = net(repo).beforeWrite([]);
    const sha = commitSessionFiles(repo, ['a.txt'], 'keel: first\n\nKeel-Session: sess-1');
    expect(git(repo, 'ls-tree', '--name-only', sha ?? 'HEAD')).toBe('a.txt\n');
    expect(git(repo, 'status', '--porcelain')).toBe('?? b.txt\n');
    applyUndo(planUndo(records, repo));
    expect(git(repo, 'status', '--porcelain', '-uall')).toBe('?? a.txt\n?? b.txt\n');
  });
});

describe('safety net without git', () => {
  it('copies each file before its first write; undo restores changed and removes created files', () => {
    const root = tempDir('keel-plain-');
    writeFiles(root, { 'a.txt': 'a\n', 'sub/b.txt': 'b\n', 'keep/c.txt': 'c\n' });
    chmodSync(join(root, 'a.txt'), 0o600);
    const before = fullTree(root);
    const undoDir = join(tempDir('keel-undo-'), 'undo');
    const safety = new SafetyNet({ root, sessionId: 's-plain', undoDir });
    const records: SafetyNetRecord[] = [];

    records.push(...safety.beforeWrite([join(root, 'a.txt')]));
    writeFileSync(join(root, 'a.txt'), 'changed\n');
    chmodSync(join(root, 'a.txt'), 0o644);
    records.push(...safety.beforeWrite([join(root, 'a.txt')]));
    writeFileSync(join(root, 'a.txt'), 'changed twice\n');
    records.push(...safety.beforeWrite([join(root, 'new/deep/c.txt'), join(root, 'keep/d.txt')]));
    writeFiles(root, { 'new/deep/c.txt': 'new\n', 'keep/d.txt': 'new\n' });
    records.push(...safety.beforeWrite([join(root, 'sub/b.txt')]));
    rmSync(join(root, 'sub/b.txt'));
    expect(safety.beforeWrite([])).toEqual([]); // a shell call names no paths: nothing to keep

    expect(records.map((r) => r.kind)).toEqual(['copy', 'copy', 'copy']);
    const manifest = JSON.parse(readFileSync(join(undoDir, 's-plain/manifest.json'), 'utf8'));
    expect(manifest.files.map((f: { path: string; existed: boolean }) => [f.path, f.existed])).toEqual([
      [join(root, 'a.txt'), true],
      [join(root, 'new/deep/c.txt'), false],
      [join(root, 'keep/d.txt'), false],
      [join(root, 'sub/b.txt'), true],
    ]);

    const plan = planUndo(records, root);
    expect(plan.steps.map((s) => describeStep(s, root))).toEqual([
      'restore a.txt',
      'remove new/deep/c.txt',
      'remove keep/d.txt',
      'restore sub/b.txt',
    ]);
    applyUndo(plan);
    expect(fullTree(root)).toEqual(before);
  });
});

describe('keel undo', () => {
  const saved = { ...process.env };
  afterEach(() => {
    process.env = { ...saved };
    vi.restoreAllMocks();
  });

  it('finds the latest session of the workspace, needs --yes without a terminal, then undoes it', async () => {
    const home = tempDir('keel-home-');
    process.env.KEEL_HOME = home;
    const repo = busyRepo();
    const before = fingerprint(repo);
    const db = openDb(join(home, 'keel.db'));
    const log = new EventLog(db);
    const session = { mode: 'edit', cwd: repo, provider: 'scripted', model: 'm', prompt: 'p' };
    log.createSession({ id: 'sess-1', ...session });
    for (const r of simulateSession(repo, net(repo))) log.append('sess-1', 'safety_net', r);
    log.createSession({ id: 'sess-0-elsewhere', ...session, cwd: tempDir() });
    db.close();
    const stdout: string[] = [];
    vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => stdout.push(String(chunk)) > 0);
    vi.spyOn(process.stderr, 'write').mockImplementation(() => true);

    expect(await runUndo('no-such-session', { json: true })).toBe(2);
    // a session with nothing saved: nothing to undo, exit 1 (NOTHING_TO_UNDO), not a usage error
    expect(await runUndo('sess-0', { json: true })).toBe(1);
    stdout.length = 0;
    expect(await runUndo(undefined, { cwd: join(repo, 'src') })).toBe(1);
    expect(stdout.join('')).toContain('remove new.txt');
    expect(fingerprint(repo)).not.toEqual(before);

    stdout.length = 0;
    expect(await runUndo(undefined, { cwd: repo, yes: true, json: true })).toBe(0);
    const doc = JSON.parse(stdout.join(''));
    expect(doc).toMatchObject({ session_id: 'sess-1', applied: true, kept: ['refs/keel/undone/sess-1'] });
    expect(doc.steps).toContain('restore src/b.ts');
    expect(fingerprint(repo)).toEqual(before);
    // undone already: nothing left to undo (exit 1, NOTHING_TO_UNDO)
    expect(await runUndo('sess-1', { yes: true })).toBe(1);
  });
});
