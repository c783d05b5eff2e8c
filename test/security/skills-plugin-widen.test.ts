/**
 * A plugin may widen what keel does (an MCP server, a hook, a command allowed without asking) only with the
 * person's yes: a no at the terminal installs nothing, no terminal without --yes installs nothing, a manifest
 * edited after the yes widens nothing, and what no yes can grant (a server outside the sandbox, a key keel
 * does not know) is refused outright.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { keel, keelHome } from '../e2e/harness.js';
import { Pane } from '../e2e/pane.js';
import { gitRepo, tempDir, writeFiles } from '../helpers/tmp.js';

function plugin(manifest: Record<string, unknown>): string {
  const dir = tempDir('keel-plugin-');
  writeFiles(dir, { 'keel-plugin.json': JSON.stringify(manifest) });
  return dir;
}

async function configShow(cwd: string, home: string): Promise<Record<string, unknown>> {
  const run = await keel(['config', 'show', '--json'], { cwd, home });
  expect(run.code, run.stderr).toBe(0);
  const out = JSON.parse(run.stdout) as { config?: Record<string, unknown> } & Record<string, unknown>;
  return out.config ?? out;
}

describe('plugins that widen', () => {
  it('a no at the terminal installs nothing; a yes does; an edit after the yes widens nothing', async () => {
    const home = keelHome();
    const repo = gitRepo();
    const hooked = plugin({
      name: 'hooked',
      hooks: [{ event: 'PreToolUse', matcher: 'shell', command: ['/bin/true'], approver: true }],
    });
    const no = Pane.start(['plugin', 'install', hooked], { cwd: repo, home });
    await no.waitFor('[y/N]');
    expect(no.screen()).toContain('an approver: may let commands run outside the sandbox');
    no.type('n', 'Enter');
    expect(await no.waitFor(/keel exited \d+/)).toContain('[keel exited 1]');
    expect(existsSync(join(home, 'plugins', 'hooked'))).toBe(false);
    expect((await configShow(repo, home)).hooks).toEqual([]);

    const yes = Pane.start(['plugin', 'install', hooked], { cwd: repo, home });
    await yes.waitFor('[y/N]');
    yes.type('y', 'Enter');
    expect(await yes.waitFor(/keel exited \d+/)).toContain('[keel exited 0]');
    expect((await configShow(repo, home)).hooks).toHaveLength(1);
    // what the yes allowed shows in `keel trust diff`
    expect((await keel(['trust', 'diff'], { cwd: repo, home })).stdout).toMatch(
      /plugin +hooked widens: hook PreToolUse on "shell": runs \["\/bin\/true"\] \(an approver: may let commands run outside the sandbox\)/,
    );

    // the installed manifest edited to add a command allowed without asking: nothing of it is in force
    writeFileSync(
      join(home, 'plugins', 'hooked', 'keel-plugin.json'),
      JSON.stringify({
        name: 'hooked',
        hooks: [{ event: 'PreToolUse', matcher: 'shell', command: ['/bin/true'], approver: true }],
        allow_commands: ['curl'],
      }),
    );
    const config = await configShow(repo, home);
    expect(config.hooks).toEqual([]);
    expect(config.allow_commands).toEqual([]);
    const listed = await keel(['plugin', 'list', '--json'], { cwd: repo, home });
    expect(JSON.parse(listed.stdout).plugins[0]).toMatchObject({ name: 'hooked', approved: false });
    const diff = await keel(['trust', 'diff'], { cwd: repo, home });
    expect(diff.stdout).toContain('hooked would widen (not approved: ignored): allow_commands: "curl"');
  }, 60_000);

  it('refuses without a terminal and without --yes, and refuses what no yes can grant', async () => {
    const home = keelHome();
    const repo = gitRepo();
    const allow = plugin({ name: 'allow', allow_commands: ['rm -rf'] });
    const piped = await keel(['plugin', 'install', allow], { cwd: repo, home });
    expect(piped.code).not.toBe(0);
    expect(piped.stderr).toContain('pass --yes');
    expect(existsSync(join(home, 'plugins', 'allow'))).toBe(false);

    const unsandboxed = plugin({
      name: 'loose',
      mcp_servers: [{ name: 'loose', command: ['/bin/sh'], sandbox: 'none' }],
    });
    const loose = await keel(['plugin', 'install', unsandboxed, '--yes'], { cwd: repo, home });
    expect(loose.code).not.toBe(0);
    expect(loose.stderr).toContain('may not run a server outside the sandbox');
    const unknown = await keel(['plugin', 'install', plugin({ name: 'odd', allow_shell: true }), '--yes'], {
      cwd: repo,
      home,
    });
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toMatch(/allow_shell|Unrecognized key/i);
    expect(existsSync(join(home, 'plugins', 'loose')) || existsSync(join(home, 'plugins', 'odd'))).toBe(
      false,
    );
    expect((await configShow(repo, home)).allow_commands).toEqual([]);
  }, 60_000);
});
