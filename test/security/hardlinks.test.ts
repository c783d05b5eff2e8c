/**
 * Issue 24, item 2: a tarball can carry a hard link to `.git/config` (or keel's config, or a hook). The
 * sandbox binds `.git` read-only, but the other name is an ordinary file in the writable workspace, so a
 * command would change `.git/config` through it (a `core.fsmonitor` the user's own `git status` runs).
 * keel refuses the session instead, and says which file and why.
 */
import { linkSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { chatBodies, keel, keelHome, model, modelFlags } from '../e2e/harness.js';
import { git, gitRepo, tempDir } from '../helpers/tmp.js';

const APPEND =
  "printf '[core]\\n\\tfsmonitor = touch /tmp/keel-fsmonitor-ran\\n' >> docs/git-config.txt; echo appended";

describe('hard links to protected files', () => {
  it('a hard link to .git/config or keel.toml refuses an acting session (exit 3) before the model is asked', async () => {
    const repo = gitRepo({ 'docs/README.md': '# docs\n', 'keel.toml': '[budgets]\nmax_rounds = 5\n' });
    linkSync(join(repo, '.git/config'), join(repo, 'docs/git-config.txt'));
    const before = readFileSync(join(repo, '.git/config'), 'utf8');
    const home = keelHome();
    const server = await model([
      { tool_calls: [{ name: 'shell', arguments: { command: APPEND } }] },
      { text: 'ok' },
    ]);
    const run = await keel(['edit', ...modelFlags(server), '--json', 'go'], { cwd: repo, home });
    expect(run.code, run.stderr).toBe(3);
    const out = JSON.parse(run.stdout);
    expect(out.code).toBe('ENVIRONMENT_ERROR');
    expect(out.error).toContain('.git/config has 2 names (hard links)');
    expect(out.error).toContain('find');
    expect(readFileSync(join(repo, '.git/config'), 'utf8')).toBe(before);
    expect(chatBodies(server)).toHaveLength(0);

    // keel's own config through another name: the same refusal
    const other = gitRepo({ 'keel.toml': '[budgets]\nmax_rounds = 5\n' });
    linkSync(join(other, 'keel.toml'), join(other, 'notes.txt'));
    const second = await keel(['run', ...modelFlags(server), '--json', 'go'], { cwd: other, home });
    expect(second.code).toBe(3);
    expect(JSON.parse(second.stdout).error).toContain('keel.toml has 2 names (hard links)');

    // a program a hook runs on the host is protected the same way (issue 24, item 1)
    const third = gitRepo({ 'tools/hook.cjs': 'process.exit(0);\n' });
    linkSync(join(third, 'tools/hook.cjs'), join(third, 'hook-copy.txt'));
    const hooked = keelHome(
      `[[hooks]]\nevent = "Stop"\ncommand = ["${process.execPath}", "tools/hook.cjs"]\n`,
    );
    const last = await keel(['edit', ...modelFlags(server), '--json', 'go'], { cwd: third, home: hooked });
    expect(last.code).toBe(3);
    expect(JSON.parse(last.stdout).error).toContain('tools/hook.cjs has 2 names (hard links)');
  });

  it("a local clone's hard-linked git objects are not protected files: its session runs", async () => {
    const origin = gitRepo({ 'a.txt': 'a\n' });
    const clone = join(tempDir('keel-clone-'), 'c');
    git(origin, 'clone', '-q', '--local', origin, clone);
    const home = keelHome();
    const server = await model([
      { tool_calls: [{ name: 'shell', arguments: { command: 'echo in-clone' } }] },
      { text: 'ok', expect: { last_tool_result_contains: 'in-clone' } },
    ]);
    const run = await keel(['edit', ...modelFlags(server), 'go'], { cwd: clone, home });
    expect(run.code, run.stderr).toBe(0);
  });
});
