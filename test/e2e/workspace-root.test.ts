/**
 * Repository-root discovery: from a subfolder, the repository's top is the workspace (its keel.toml, the
 * scope, where sessions are recorded), while the paths a user types stay relative to where they stand.
 * The walk never widens into a folder someone else controls.
 */
import { chownSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { git, gitRepo, tempDir, writeFiles } from '../helpers/tmp.js';
import { editTurns, fixtureRepo, planTurns } from './fix-harness.js';
import { chatBodies, keel, keelHome, model, modelFlags, requestMessages } from './harness.js';

/** The project config file `keel config show` finds from `cwd` (null when none): which folder keel took as the workspace. */
async function projectFileFrom(
  cwd: string,
  home: string,
  opts: { args?: string[]; env?: Record<string, string> } = {},
): Promise<string | null> {
  const run = await keel(['config', 'show', '--json', ...(opts.args ?? [])], {
    cwd,
    home,
    ...(opts.env ? { env: opts.env } : {}),
  });
  expect(run.code, run.stdout + run.stderr).toBe(0);
  return (JSON.parse(run.stdout) as { files: { project: string | null } }).files.project;
}

function sessionsJson(stdout: string): { id: string; cwd: string }[] {
  return (JSON.parse(stdout) as { sessions: { id: string; cwd: string }[] }).sessions;
}

describe('keel from a subfolder of a repository', () => {
  it("ask uses the root's keel.toml, reads paths from the root, and records the root as the session's folder", async () => {
    const repo = gitRepo({
      'README.md': 'the top readme\n',
      'keel.toml': 'model = "from-project"\n',
      'src/lib/a.js': '1\n',
    });
    const sub = join(repo, 'src', 'lib');
    const home = keelHome();
    const server = await model([
      { tool_calls: [{ name: 'read_file', arguments: { path: 'README.md' } }] },
      { text: 'it says hello' },
    ]);
    const run = await keel(
      ['ask', '--provider', 'openai', '--base-url', server.url, 'what does the readme say?'],
      {
        cwd: sub,
        home,
      },
    );
    expect(run.code, run.stderr).toBe(0);
    const bodies = chatBodies(server);
    // the model name came from the root's keel.toml
    expect((bodies[0] as { model: string }).model).toBe('from-project');
    // the model's path is relative to the root: README.md is the top one
    const tool = requestMessages(bodies[1]).findLast((m) => m.role === 'tool');
    expect(tool?.content).toContain('the top readme');
    // the model is told where the user stands, so "here" means src/lib
    const system = requestMessages(bodies[0]).find((m) => m.role === 'system')?.content ?? '';
    expect(system).toContain('The user is in src/lib/');
    const listed = await keel(['sessions', 'list', '--json'], { cwd: sub, home });
    expect(sessionsJson(listed.stdout)[0]?.cwd).toBe(repo);
    // --project names a folder the same way: the subfolder means its repository
    const here = await keel(['sessions', 'list', '--json', '--project', '.'], { cwd: sub, home });
    expect(sessionsJson(here.stdout).map((s) => s.cwd)).toEqual([repo]);
    // and -c (this project's newest session) finds it from another subfolder
    mkdirSync(join(repo, 'docs'));
    const server2 = await model([{ text: 'again' }]);
    const again = await keel(['ask', '-c', '--provider', 'openai', '--base-url', server2.url, 'and now?'], {
      cwd: join(repo, 'docs'),
      home,
    });
    expect(again.code, again.stderr).toBe(0);
    const after = await keel(['sessions', 'list', '--json'], { cwd: repo, home });
    expect(sessionsJson(after.stdout)).toHaveLength(1);
  });

  it("edit: the model's paths are relative to the root (the scope), and undo from the subfolder finds the session", async () => {
    const repo = gitRepo({ 'README.md': '# r\n', 'pkg/index.js': 'x\n' });
    const sub = join(repo, 'pkg');
    const home = keelHome();
    const server = await model([
      { tool_calls: [{ name: 'write_file', arguments: { path: 'pkg/new.txt', content: 'in pkg\n' } }] },
      { tool_calls: [{ name: 'write_file', arguments: { path: 'top.txt', content: 'at the top\n' } }] },
      { text: 'wrote both' },
    ]);
    const run = await keel(['edit', ...modelFlags(server), 'write two files'], { cwd: sub, home });
    expect(run.code, run.stderr).toBe(0);
    expect(readFileSync(join(repo, 'pkg', 'new.txt'), 'utf8')).toBe('in pkg\n');
    expect(readFileSync(join(repo, 'top.txt'), 'utf8')).toBe('at the top\n');
    expect(existsSync(join(sub, 'pkg'))).toBe(false);
    expect(existsSync(join(sub, 'top.txt'))).toBe(false);
    const undo = await keel(['undo', '--yes'], { cwd: sub, home });
    expect(undo.code, undo.stderr).toBe(0);
    expect(existsSync(join(repo, 'top.txt'))).toBe(false);
    expect(existsSync(join(repo, 'pkg', 'new.txt'))).toBe(false);
  });

  it("fix from a subfolder fixes the repository, with the root's keel.toml", async () => {
    const repo = fixtureRepo('stats');
    writeFiles(repo, { 'keel.toml': 'model = "from-project"\n' });
    git(repo, 'add', 'keel.toml');
    git(repo, 'commit', '-q', '-m', 'pin the model');
    const server = await model([
      ...planTurns('src/stats.js', '1. Divide by values.length.'),
      ...editTurns(
        'src/stats.js',
        '  return sum(values) / (values.length + 1);',
        '  return sum(values) / values.length;',
        'mean now divides by the length.',
      ),
    ]);
    const home = keelHome();
    const run = await keel(
      ['fix', '--json', '--provider', 'openai', '--base-url', server.url, '--issue', 'mean is off'],
      {
        cwd: join(repo, 'src'),
        home,
        timeoutMs: 25_000,
      },
    );
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ status: 'verified', files_changed: ['src/stats.js'] });
    expect(chatBodies(server).map((b) => (b as { model: string }).model)).toContain('from-project');
  });

  it('paths the user types stay relative to the subfolder (--script)', async () => {
    const repo = gitRepo({
      'tools/script.json': JSON.stringify({ turns: [{ text: 'hello from the script' }] }),
    });
    const run = await keel(['ask', '--provider', 'scripted', '--script', 'script.json', 'hi'], {
      cwd: join(repo, 'tools'),
      home: keelHome(),
    });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain('hello from the script');
  });

  it('-C DIR starts the walk at DIR; trust and config show from a subfolder act on the root keel.toml', async () => {
    const repo = gitRepo({ 'keel.toml': 'allow_shell = true\n', 'a/b/c.txt': 'c\n' });
    const home = keelHome();
    const elsewhere = tempDir('keel-elsewhere-');
    expect(await projectFileFrom(elsewhere, home, { args: ['-C', join(repo, 'a', 'b')] })).toBe(
      join(repo, 'keel.toml'),
    );
    const trust = await keel(['trust', '--json'], { cwd: join(repo, 'a', 'b'), home });
    expect(trust.code, trust.stderr).toBe(0);
    expect(JSON.parse(trust.stdout)).toMatchObject({
      file: join(repo, 'keel.toml'),
      grants: ['allow_shell'],
    });
    const shown = await keel(['config', 'show', '--json'], { cwd: join(repo, 'a'), home });
    expect(JSON.parse(shown.stdout).config.allow_shell).toBe(true);
  });

  it('outside any repository the folder itself is the workspace', async () => {
    const plain = tempDir('keel-plain-');
    writeFiles(plain, { 'keel.toml': 'permission = "plan"\n', 'child/x.txt': 'x\n' });
    expect(await projectFileFrom(join(plain, 'child'), keelHome())).toBe(null);
    expect(await projectFileFrom(plain, keelHome())).toBe(join(plain, 'keel.toml'));
  });
});

describe('where the walk stops (a parent folder must not widen anything)', () => {
  it('at the first .git: a nested repository is its own workspace', async () => {
    const outer = gitRepo({ 'keel.toml': 'permission = "plan"\n' });
    const inner = join(outer, 'vendor', 'lib');
    mkdirSync(inner, { recursive: true });
    git(inner, 'init', '-q');
    writeFiles(inner, { 'keel.toml': 'permission = "ask"\n', 'src/x.js': 'x\n' });
    expect(await projectFileFrom(join(inner, 'src'), keelHome())).toBe(join(inner, 'keel.toml'));
  });

  it('at a .git file (a linked worktree, a submodule), wherever it points', async () => {
    const outer = gitRepo({ 'keel.toml': 'permission = "plan"\n' });
    const inner = join(outer, 'linked');
    // a .git file pointing at the outer repository's own git dir still makes this folder the root
    writeFiles(inner, { '.git': `gitdir: ${join(outer, '.git')}\n`, 'keel.toml': '', 'deep/y.js': 'y\n' });
    expect(await projectFileFrom(join(inner, 'deep'), keelHome())).toBe(join(inner, 'keel.toml'));
    // and a real linked worktree is its own workspace
    const wt = join(tempDir('keel-wt-'), 'wt');
    git(outer, 'worktree', 'add', '-q', wt);
    mkdirSync(join(wt, 'sub'));
    expect(await projectFileFrom(join(wt, 'sub'), keelHome())).toBe(join(wt, 'keel.toml'));
  });

  it('never above $HOME: a repository at ~ (dotfiles) does not make every folder in it one workspace', async () => {
    const home = keelHome();
    git(home, 'init', '-q');
    writeFiles(home, { 'keel.toml': 'permission = "plan"\n', 'notes/today/x.md': 'x\n' });
    expect(await projectFileFrom(join(home, 'notes', 'today'), home)).toBe(null);
    // at $HOME itself, it is the workspace as before
    expect(await projectFileFrom(home, home)).toBe(join(home, 'keel.toml'));
  });

  it('not into a folder named by GIT_CEILING_DIRECTORIES', async () => {
    const repo = gitRepo({ 'keel.toml': 'permission = "plan"\n', 'a/b/x.txt': 'x\n' });
    const home = keelHome();
    const env = { GIT_CEILING_DIRECTORIES: `/nonexistent:${repo}` };
    expect(await projectFileFrom(join(repo, 'a', 'b'), home, { env })).toBe(null);
    expect(await projectFileFrom(join(repo, 'a', 'b'), home)).toBe(join(repo, 'keel.toml'));
  });

  const root = process.getuid?.() === 0;
  it.skipIf(!root)(
    `not into a repository another user owns${root ? '' : ' (skipped: needs root to chown a folder to another user)'}`,
    async () => {
      const planted = tempDir('keel-planted-');
      mkdirSync(join(planted, '.git'));
      writeFiles(planted, { 'keel.toml': 'allow_shell = true\n', 'mine/work/x.txt': 'x\n' });
      // someone else's .git above the user's folder (think /tmp/.git): not adopted
      chownSync(join(planted, '.git'), 65534, 65534);
      expect(await projectFileFrom(join(planted, 'mine', 'work'), keelHome())).toBe(null);
      // unless the user's own git config vouches for it, as git's safe.directory does
      const vouched = keelHome();
      writeFileSync(join(vouched, '.gitconfig'), `[safe]\n\tdirectory = ${planted}\n`);
      expect(await projectFileFrom(join(planted, 'mine', 'work'), vouched)).toBe(join(planted, 'keel.toml'));
      chownSync(join(planted, '.git'), 0, 0);
      expect(await projectFileFrom(join(planted, 'mine', 'work'), keelHome())).toBe(
        join(planted, 'keel.toml'),
      );
    },
  );
});

it('a keel.toml in a subfolder is not the project config: the one at the root is', async () => {
  const repo = gitRepo({ 'pkg/keel.toml': 'permission = "plan"\n', 'pkg/a.js': 'a\n' });
  writeFileSync(join(repo, 'pkg', 'b.js'), 'b\n');
  expect(await projectFileFrom(join(repo, 'pkg'), keelHome())).toBe(null);
  // and keel says so, once, rather than ignoring it silently
  const run = await keel(['config', 'show'], { cwd: join(repo, 'pkg'), home: keelHome() });
  expect(run.stderr).toBe(
    `keel: warning: not reading ${join(repo, 'pkg', 'keel.toml')}: the workspace is the repository root ${repo}, and its project config is the one keel reads\n`,
  );
});
