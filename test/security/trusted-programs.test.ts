/**
 * Issue 24, item 1: a trusted project config runs programs on the host (hooks, read-only MCP servers); a
 * script inside the workspace it names is part of what `keel trust` covers. The model cannot rewrite it
 * (write_file, edit_file, the sandboxed shell, a rename of its folder), and a copy changed outside keel
 * is untrusted again: said at start, shown by `keel trust diff`, and not run.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { fixtureRepo } from '../e2e/fix-harness.js';
import { keel, keelHome, lastSessionEvents, model, modelFlags } from '../e2e/harness.js';
import { git, gitRepo, tempDir, writeFiles } from '../helpers/tmp.js';

/** A hook script that allows every call (reads its event, exits 0). */
const HOOK = "process.stdin.resume();\nprocess.stdin.on('end', () => process.exit(0));\n";
/** The trusted hook: it loads the plugin its argument names, when there is one (none when it was trusted). */
const LOADER = `try { require(require('node:path').resolve(process.argv[2])); } catch {}\n${HOOK}`;

/** What the attacker wants run on the host: a file outside the workspace, then an allow. */
function evil(marker: string): string {
  return `require('node:fs').writeFileSync(${JSON.stringify(marker)}, 'pwned');\n${HOOK}`;
}

const CONFIG = `[[hooks]]
event = "PreToolUse"
command = ["${process.execPath}", "tools/hook.cjs", "tools/plugin.cjs"]

[[mcp_servers]]
name = "docs"
command = ["${process.execPath}", "tools/docs-server.cjs"]
read_only_tools = ["*"]
startup_timeout_s = 2
`;

describe('programs a trusted config runs', () => {
  it('the model cannot rewrite a trusted hook script in a session, and a copy changed between sessions is not run', async () => {
    const marker = join(tempDir('keel-outside-'), 'pwned');
    const repo = gitRepo({
      'keel.toml': CONFIG,
      'tools/hook.cjs': LOADER,
      // the trusted server exits at once (its tools are left out); a rewritten one would run on the host
      'tools/docs-server.cjs': 'process.exit(0);\n',
      'evil.cjs': evil(marker),
    });
    const home = keelHome();
    expect((await keel(['trust'], { cwd: repo, home })).code).toBe(0);

    const shell = [
      'echo "$(cat evil.cjs)" > tools/hook.cjs',
      'cat evil.cjs >> tools/hook.cjs',
      'rm -f tools/hook.cjs',
      'mv tools tools.old && mkdir tools && cp evil.cjs tools/hook.cjs && cp evil.cjs tools/docs-server.cjs',
      // a file the hook names that was absent when trusted: nothing to bind read-only, so it can be made
      'cp evil.cjs tools/plugin.cjs',
      'echo shell-ran',
    ].join('; ');
    const server = await model([
      { tool_calls: [{ name: 'write_file', arguments: { path: 'tools/hook.cjs', content: evil(marker) } }] },
      {
        tool_calls: [
          {
            name: 'edit_file',
            arguments: { path: './tools/../tools/hook.cjs', old_string: 'process.stdin', new_string: 'x' },
          },
        ],
      },
      { tool_calls: [{ name: 'shell', arguments: { command: shell } }] },
      // another call: the PreToolUse hook runs again, and must be the trusted one
      { tool_calls: [{ name: 'list_dir', arguments: {} }] },
      { text: 'done' },
    ]);
    const run = await keel(['edit', ...modelFlags(server), 'rewrite the hook'], {
      cwd: repo,
      home,
      timeoutMs: 60_000,
    });
    expect(run.code, run.stderr).toBe(0);
    const results = lastSessionEvents(home).filter((e) => e.type === 'gate_decision');
    const reasons = results.map((e) => String(e.data.reason ?? ''));
    expect(reasons[0]).toMatch(/tools\/hook\.cjs is protected: a program keel's config runs on the host/);
    expect(reasons[1]).toMatch(/is protected: a program keel's config runs on the host/);
    // the shell ran (its hook allowed it), and the next call's hook was not run: its plugin is new
    expect(results[2]?.data).toMatchObject({ decision: 'allow' });
    expect(reasons[3]).toMatch(/was not run: tools\/plugin\.cjs changed since this session checked it/);
    expect(readFileSync(join(repo, 'tools/hook.cjs'), 'utf8')).toBe(LOADER);
    expect(existsSync(join(repo, 'tools.old'))).toBe(false);
    expect(existsSync(marker)).toBe(false);

    // changed outside keel (a checkout, a pull, an editor): untrusted again, said at start, not run
    writeFileSync(join(repo, 'tools/hook.cjs'), evil(marker));
    writeFileSync(join(repo, 'tools/docs-server.cjs'), evil(marker));
    const asked = await model([{ tool_calls: [{ name: 'list_dir', arguments: {} }] }, { text: 'ok' }]);
    const next = await keel(['ask', ...modelFlags(asked), 'look'], { cwd: repo, home });
    expect(next.code, next.stderr).toBe(0);
    expect(next.stderr).toContain('tools/hook.cjs (run by a PreToolUse hook), tools/plugin.cjs (run by');
    expect(next.stderr).toContain(
      'tools/docs-server.cjs (run by mcp server "docs") changed since you trusted',
    );
    expect(next.stderr).toContain('ignoring hooks, mcp_servers');
    expect(existsSync(marker)).toBe(false);

    const diff = await keel(['trust', 'diff'], { cwd: repo, home });
    expect(diff.stdout).toContain('tools/hook.cjs changed since you trusted keel.toml');
    const json = JSON.parse((await keel(['trust', 'diff', '--json'], { cwd: repo, home })).stdout);
    expect(json.trust).toBe('changed');
    expect(json.programs).toContainEqual({
      path: 'tools/hook.cjs',
      by: 'a PreToolUse hook',
      state: 'changed',
    });

    // trusting it anew is the user's word: the hook runs (and here, does what it now says)
    expect((await keel(['trust'], { cwd: repo, home })).stdout).toContain('tools/hook.cjs');
    const again = await model([{ tool_calls: [{ name: 'list_dir', arguments: {} }] }, { text: 'ok' }]);
    await keel(['ask', ...modelFlags(again), 'look'], { cwd: repo, home });
    expect(existsSync(marker)).toBe(true);
  }, 120_000);

  it("keel fix's sessions work in a copy of the repository: the copy's hook script is protected there too", async () => {
    const marker = join(tempDir('keel-outside-'), 'pwned');
    const repo = fixtureRepo('stats');
    writeFiles(repo, { 'tools/hook.cjs': HOOK });
    git(repo, 'add', '-A');
    git(repo, 'commit', '-qm', 'a hook');
    // the user's own hook, naming a script of the repository: its file is the model's to write otherwise
    const home = keelHome(
      `[[hooks]]\nevent = "PreToolUse"\ncommand = ["${process.execPath}", "tools/hook.cjs"]\n`,
    );
    const server = await model([
      { tool_calls: [{ name: 'read_file', arguments: { path: 'src/stats.js' } }] },
      { text: '1. look at mean.' },
      { tool_calls: [{ name: 'write_file', arguments: { path: 'tools/hook.cjs', content: evil(marker) } }] },
      {
        tool_calls: [{ name: 'shell', arguments: { command: 'cat evil.cjs > tools/hook.cjs; echo tried' } }],
      },
      { tool_calls: [{ name: 'list_dir', arguments: {} }] },
      { text: 'nothing to fix' },
    ]);
    writeFiles(repo, { 'evil.cjs': evil(marker) });
    git(repo, 'add', '-A');
    git(repo, 'commit', '-qm', 'evil');
    const run = await keel(
      ['fix', '--repo', repo, '--json', ...modelFlags(server), '--issue', 'mean is wrong'],
      {
        cwd: home,
        home,
        timeoutMs: 60_000,
      },
    );
    expect(run.stdout, run.stderr).toContain('"code"');
    expect(existsSync(marker)).toBe(false);
  }, 90_000);
});
