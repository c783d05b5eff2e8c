import { createHash } from 'node:crypto';
import {
  existsSync,
  lstatSync,
  readdirSync,
  readFileSync,
  statSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { git, gitRepo, writeFiles } from '../helpers/tmp.js';
import { keel, keelHome, lastSessionEvents, model, modelFlags } from './harness.js';

describe('keel undo after keel edit', () => {
  it("shows the plan, then restores the user's uncommitted work exactly and removes what the session made", async () => {
    const repo = gitRepo({ 'app.js': 'const a = 1;\n', 'lib.js': 'export {};\n', '.gitignore': 'build/\n' });
    writeFileSync(join(repo, 'app.js'), 'const a = 2; // my edit, not committed\n');
    writeFileSync(join(repo, 'notes.txt'), 'my untracked notes\n');
    const statusBefore = git(repo, 'status', '--porcelain');
    const home = keelHome();
    const server = await model([
      {
        tool_calls: [
          {
            name: 'edit_file',
            arguments: { path: 'app.js', old_string: 'const a = 2;', new_string: 'const a = 3;' },
          },
          { name: 'write_file', arguments: { path: 'src/new.js', content: 'export const x = 1;\n' } },
          { name: 'write_file', arguments: { path: 'notes.txt', content: 'overwritten\n' } },
        ],
      },
      { text: 'done' },
    ]);
    const edit = await keel(['edit', ...modelFlags(server), 'change things'], { cwd: repo, home });
    expect(edit.code).toBe(0);
    expect(readFileSync(join(repo, 'app.js'), 'utf8')).toContain('const a = 3;');

    // without a terminal and without --yes: show the plan, change nothing, exit 1
    const dry = await keel(['undo'], { cwd: repo, home });
    expect(dry.code).toBe(1);
    expect(dry.stdout + dry.stderr).toContain('--yes');
    expect(existsSync(join(repo, 'src/new.js'))).toBe(true);

    const undo = await keel(['undo', '--yes'], { cwd: repo, home });
    expect(undo.code).toBe(0);
    expect(readFileSync(join(repo, 'app.js'), 'utf8')).toBe('const a = 2; // my edit, not committed\n');
    expect(readFileSync(join(repo, 'notes.txt'), 'utf8')).toBe('my untracked notes\n');
    expect(existsSync(join(repo, 'src/new.js'))).toBe(false);
    expect(git(repo, 'status', '--porcelain')).toBe(statusBefore);
    // HEAD was marked under keel's own refs, never among the user's tags
    expect(git(repo, 'for-each-ref', '--format=%(refname)', 'refs/keel/pre/').trim()).not.toBe('');
    expect(git(repo, 'tag', '--list')).toBe('');
  });
});

/** A repository whose work tree holds something that used to break the snapshot. */
function hostileRepo(kind: 'nested-no-commit' | 'nested-commit' | 'submodule' | 'dot-git-dot'): string {
  const repo = gitRepo({ 'app.js': 'const a = 1;\n' });
  if (kind === 'nested-no-commit') {
    // a vendored folder someone ran `git init` in: no commit checked out
    writeFiles(repo, { 'vendor/lib/index.js': 'vendored\n' });
    git(join(repo, 'vendor/lib'), 'init', '-q');
  } else if (kind === 'nested-commit') {
    writeFiles(repo, { 'vendor/lib/index.js': 'vendored\n' });
    git(join(repo, 'vendor/lib'), 'init', '-q');
    git(join(repo, 'vendor/lib'), 'add', '-A');
    git(join(repo, 'vendor/lib'), 'commit', '-q', '-m', 'vendored');
    writeFiles(repo, { 'vendor/lib/index.js': 'vendored, edited\n' });
  } else if (kind === 'submodule') {
    const lib = gitRepo({ 'index.js': 'module\n' });
    git(repo, '-c', 'protocol.file.allow=always', 'submodule', 'add', '-q', lib, 'vendor/lib');
    git(repo, 'commit', '-q', '-m', 'add submodule');
    writeFiles(repo, { 'vendor/lib/index.js': 'module, edited in place\n' });
  } else {
    // core.protectNTFS makes git refuse this name; `git add -A` failed on it
    writeFiles(repo, { '.git./config': '[core]\n' });
  }
  return repo;
}

/** Every file under `dir` with its content, `.git` folders included: what "untouched" means. */
function snapshotOf(dir: string): string[] {
  const out: string[] = [];
  const walk = (rel: string) => {
    for (const name of readdirSync(join(dir, rel)).sort()) {
      const path = rel ? `${rel}/${name}` : name;
      const st = lstatSync(join(dir, path));
      if (st.isDirectory()) walk(path);
      else
        out.push(
          `${path} ${createHash('sha256')
            .update(readFileSync(join(dir, path)))
            .digest('hex')}`,
        );
    }
  };
  walk('');
  return out;
}

describe('the safety net in repositories that hold other repositories or names git refuses', () => {
  it.each(['nested-no-commit', 'nested-commit', 'submodule', 'dot-git-dot'] as const)(
    '%s: keel edit writes, and keel undo --yes restores, leaving the nested repository alone',
    async (kind) => {
      const repo = hostileRepo(kind);
      const nested = kind === 'dot-git-dot' ? join(repo, '.git.') : join(repo, 'vendor/lib');
      const nestedBefore = snapshotOf(nested);
      const home = keelHome();
      const server = await model([
        {
          tool_calls: [
            { name: 'write_file', arguments: { path: 'app.js', content: 'const a = 2;\n' } },
            { name: 'write_file', arguments: { path: 'new.js', content: 'new\n' } },
          ],
        },
        { text: 'done' },
      ]);
      const edit = await keel(['edit', '--json', ...modelFlags(server), 'change app.js'], {
        cwd: repo,
        home,
      });
      expect(edit.stderr).not.toContain('safety net failed');
      expect(JSON.parse(edit.stdout)).toMatchObject({ code: 'COMPLETED', exit_code: 0 });
      expect(edit.code).toBe(0);
      expect(readFileSync(join(repo, 'app.js'), 'utf8')).toBe('const a = 2;\n');
      const net = lastSessionEvents(home).find((e) => e.type === 'safety_net');
      expect(net?.data).toMatchObject({ kind: 'git' });

      const undo = await keel(['undo', '--yes'], { cwd: repo, home });
      expect(undo.stderr).toBe('');
      expect(undo.code).toBe(0);
      expect(readFileSync(join(repo, 'app.js'), 'utf8')).toBe('const a = 1;\n');
      expect(existsSync(join(repo, 'new.js'))).toBe(false);
      expect(snapshotOf(nested)).toEqual(nestedBefore);
    },
  );

  it('a 20 GB sparse untracked file does not stall the first write; it is named as skipped and undo leaves it', async () => {
    const repo = gitRepo({ 'app.js': 'const a = 1;\n' });
    const big = join(repo, 'big.img');
    writeFileSync(big, '');
    truncateSync(big, 20 * 1024 ** 3);
    const home = keelHome();
    const server = await model([
      { tool_calls: [{ name: 'write_file', arguments: { path: 'app.js', content: 'const a = 2;\n' } }] },
      { text: 'done' },
    ]);
    const edit = await keel(['edit', '--json', ...modelFlags(server), 'change app.js'], { cwd: repo, home });
    expect(JSON.parse(edit.stdout)).toMatchObject({ code: 'COMPLETED', exit_code: 0 });
    // hashing 20 GB takes minutes; skipping it takes an lstat
    expect(edit.ms).toBeLessThan(10_000);
    const net = lastSessionEvents(home).find((e) => e.type === 'safety_net');
    expect(net?.data).toMatchObject({
      kind: 'git',
      skipped: [{ path: big, reason: expect.stringMatching(/larger than 64 MB/) }],
    });
    const shown = await keel(['sessions', 'show', '--json', JSON.parse(edit.stdout).session_id], {
      cwd: repo,
      home,
    });
    expect(shown.stdout).toContain('big.img');

    const undo = await keel(['undo', '--yes'], { cwd: repo, home });
    expect(undo.code).toBe(0);
    expect(undo.stdout).toMatch(/leave big\.img as it is \(not saved: larger than 64 MB/);
    expect(readFileSync(join(repo, 'app.js'), 'utf8')).toBe('const a = 1;\n');
    expect(statSync(big).size).toBe(20 * 1024 ** 3);
  });
});

describe('keel undo finds the change still there', () => {
  it('after a keel loop that changed nothing, undo undoes the earlier edit, and the undo is in the audit chain', async () => {
    const repo = gitRepo({ 'app.js': 'const a = 1;\n' });
    const home = keelHome();
    const server = await model([
      {
        tool_calls: [
          {
            name: 'edit_file',
            arguments: { path: 'app.js', old_string: 'const a = 1;', new_string: 'const a = 2;' },
          },
        ],
      },
      { text: 'done' },
      // the loop's one round: the model looks and changes nothing
      { text: 'nothing to change' },
    ]);
    const edit = await keel(['edit', ...modelFlags(server), 'change a'], { cwd: repo, home });
    expect(edit.code, edit.stderr).toBe(0);
    const editId = (lastSessionEvents(home)[0] as { session_id: string }).session_id;
    const loop = await keel(
      ['loop', ...modelFlags(server), '--test-command', 'true', '--max-iterations', '1', '-m', 'look around'],
      { cwd: repo, home },
    );
    expect(loop.code, loop.stderr).toBe(0);
    expect(readFileSync(join(repo, 'app.js'), 'utf8')).toBe('const a = 2;\n');

    const undo = await keel(['undo', '--yes', '--json'], { cwd: repo, home });
    expect(undo.code, undo.stdout + undo.stderr).toBe(0);
    expect(JSON.parse(undo.stdout)).toMatchObject({ session_id: editId, applied: true });
    expect(readFileSync(join(repo, 'app.js'), 'utf8')).toBe('const a = 1;\n');
    // undone now: nothing is left to undo, and it says so
    const again = await keel(['undo', '--yes'], { cwd: repo, home });
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('has anything left to undo');
    // nothing to undo is not a usage error: its own code, exit 1
    const doc = JSON.parse((await keel(['undo', '--yes', '--json'], { cwd: repo, home })).stdout);
    expect(doc).toMatchObject({ code: 'NOTHING_TO_UNDO', exit_code: 1 });

    const tail = await keel(['audit', 'tail', '-n', '200', '--json'], { cwd: repo, home });
    const lines = JSON.parse(tail.stdout).lines as Array<{
      type: string;
      session_id: string;
      applied?: boolean;
    }>;
    expect(lines.filter((l) => l.type === 'undo')).toEqual([
      expect.objectContaining({ session_id: editId, applied: true }),
    ]);
    expect((await keel(['audit', 'verify'], { cwd: repo, home })).code).toBe(0);
  });

  it('a -C folder that does not exist is a usage error naming it', async () => {
    const home = keelHome();
    const missing = join(home, 'no-such-folder');
    const run = await keel(['undo', '-C', missing], { cwd: home, home });
    expect(run.code).toBe(2);
    expect(run.stderr.trim()).toBe(`keel: workspace ${missing} is not a folder`);
    const json = await keel(['undo', '-C', missing, '--json'], { cwd: home, home });
    expect(json.code).toBe(2);
    expect(JSON.parse(json.stdout)).toEqual({
      code: 'CONFIG_ERROR',
      exit_code: 2,
      error: `workspace ${missing} is not a folder`,
    });
  });
});

describe('keel-pre tags from an older keel', () => {
  it('keel doctor names them and --move-tags moves them under refs/keel/pre/, out of the user tags', async () => {
    const repo = gitRepo({ 'app.js': 'const a = 1;\n' });
    git(repo, 'tag', 'v1.0.0');
    git(repo, 'tag', 'keel-pre/20260101T000000Z');
    const head = git(repo, 'rev-parse', 'HEAD').trim();
    const home = keelHome();
    const seen = await keel(['doctor', '--json'], { cwd: repo, home });
    const check = (
      JSON.parse(seen.stdout).checks as Array<{ name: string; status: string; detail: string }>
    ).find((c) => c.name === 'safety net');
    expect(check).toMatchObject({ status: 'warn' });
    expect(check?.detail).toContain('keel doctor --move-tags');
    expect(git(repo, 'tag', '--list')).toBe('keel-pre/20260101T000000Z\nv1.0.0\n');

    const moved = await keel(['doctor', '--json', '--move-tags'], { cwd: repo, home });
    const done = (JSON.parse(moved.stdout).checks as Array<{ name: string; status: string }>).find(
      (c) => c.name === 'safety net',
    );
    expect(done).toMatchObject({ status: 'ok' });
    expect(git(repo, 'tag', '--list')).toBe('v1.0.0\n');
    expect(git(repo, 'rev-parse', 'refs/keel/pre/20260101T000000Z').trim()).toBe(head);
  });
});
