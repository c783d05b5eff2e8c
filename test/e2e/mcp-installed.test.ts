/**
 * MCP servers the user installed and configured, through the real binary: a node package under the
 * user's home (`~/.local/lib/node_modules/fake-mcp`, its bin linked from `~/.local/bin` on PATH) starts in
 * the bwrap sandbox, which hides homes; `sandbox = "none"` in the user's own config runs one as the user;
 * and a server that cannot start says why in `keel mcp list-tools` and `keel doctor`.
 */
import { chmodSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { bundleMcpFixture } from '../helpers/mcp-fixtures.js';
import { gitRepo, tempDir } from '../helpers/tmp.js';
import { chatBodies, keel, keelHome, model, modelFlags } from './harness.js';

/** A user home with `fake-mcp` installed as `npm install -g --prefix ~/.local` would, and a broken server. */
async function userHomeWithServers(): Promise<string> {
  const home = tempDir('keel-user-');
  const pkg = join(home, '.local', 'lib', 'node_modules', 'fake-mcp');
  const dep = join(pkg, 'node_modules', 'fake-dep');
  mkdirSync(join(pkg, 'bin'), { recursive: true });
  mkdirSync(join(home, '.local', 'bin'), { recursive: true });
  writeFileSync(join(pkg, 'package.json'), '{"name":"fake-mcp","bin":{"fake-mcp":"bin/cli.js"}}\n');
  // the bin only requires a dependency from the package's own node_modules, as real servers do
  writeFileSync(join(pkg, 'bin', 'cli.js'), "#!/usr/bin/env node\nrequire('fake-dep');\n");
  chmodSync(join(pkg, 'bin', 'cli.js'), 0o755);
  await bundleMcpFixture('normal', join(dep, 'index.js'));
  writeFileSync(join(dep, 'package.json'), '{"name":"fake-dep","main":"index.js"}\n');
  symlinkSync('../lib/node_modules/fake-mcp/bin/cli.js', join(home, '.local', 'bin', 'fake-mcp'));
  const broken = join(home, '.local', 'bin', 'broken-mcp');
  writeFileSync(
    broken,
    '#!/bin/sh\necho "loading settings" >&2\necho "broken-mcp: no API token set" >&2\nexit 3\n',
  );
  chmodSync(broken, 0o755);
  return home;
}

describe('MCP servers installed under the user home', () => {
  it('start in the sandbox, run unsandboxed with sandbox = "none", and say why one did not start', async () => {
    const user = await userHomeWithServers();
    const repo = gitRepo();
    const home = keelHome(
      [
        '[[mcp_servers]]\nname = "fx"\ncommand = ["fake-mcp"]\nread_only_tools = ["echo"]\n',
        '[[mcp_servers]]\nname = "free"\ncommand = ["fake-mcp"]\nsandbox = "none"\n',
        '[[mcp_servers]]\nname = "broken"\ncommand = ["broken-mcp"]\n',
        '[[mcp_servers]]\nname = "fetched"\ncommand = ["npx", "-y", "fake-mcp"]\n',
      ].join('\n'),
    );
    const env = { HOME: user, PATH: `${join(user, '.local', 'bin')}:${process.env.PATH}` };

    const listed = await keel(['mcp', 'list-tools', 'fx'], { cwd: repo, home, env, timeoutMs: 30_000 });
    expect(listed.stderr).toBe('');
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(/mcp__fx__echo\s+read/);

    const failed = await keel(['mcp', 'list-tools', 'broken', '--json'], { cwd: repo, home, env });
    expect(failed.code).not.toBe(0);
    const error = (JSON.parse(failed.stdout) as { error: string }).error;
    expect(error).toContain('mcp server "broken" could not start');
    expect(error).toContain('exit code 3');
    expect(error).toContain('broken-mcp: no API token set');

    const doctor = await keel(['doctor', '--json'], { cwd: repo, home, env, timeoutMs: 60_000 });
    const checks = (
      JSON.parse(doctor.stdout) as { checks: Array<{ name: string; status: string; detail: string }> }
    ).checks;
    const mcp = checks.filter((c) => c.name.startsWith('mcp '));
    expect(mcp.map((c) => [c.name, c.status])).toEqual([
      ['mcp fx', 'ok'],
      ['mcp free', 'ok'],
      ['mcp broken', 'warn'],
      ['mcp fetched', 'warn'],
    ]);
    expect(mcp[0]?.detail).toContain('3 tools');
    expect(mcp[1]?.detail).toContain('sandbox = "none"');
    expect(mcp[2]?.detail).toContain('exit code 3');
    expect(mcp[2]?.detail).toContain('broken-mcp: no API token set');
    // npx downloads what it runs: with no network it is refused at once, with the ways out
    expect(mcp[3]?.detail).toContain('the sandbox has no network');
    expect(mcp[3]?.detail).toContain('sandbox = "none"');

    const server = await model([
      {
        tool_calls: [
          { name: 'mcp__fx__echo', arguments: { text: 'from home' } },
          { name: 'mcp__fx__probe', arguments: {} },
          { name: 'mcp__free__probe', arguments: {} },
        ],
      },
      { text: 'done' },
    ]);
    const run = await keel(['edit', ...modelFlags(server), '-m', 'use the servers'], {
      cwd: repo,
      home,
      env: { ...env, OPENAI_API_KEY: 'sk-not-for-servers' },
      timeoutMs: 60_000,
    });
    expect(run.code, run.stderr).toBe(0);
    // the broken one is left out with its reason; the others start
    expect(run.stderr).toContain('mcp server "broken" could not start');
    expect(run.stderr).not.toContain('"fx"');
    const answer = JSON.stringify(chatBodies(server)[1]);
    expect(answer).toContain('echo: from home');
    // fx in the sandbox (HOME on its private /tmp), free as the user; neither sees keel's key
    expect(answer).toContain('home=/tmp/home key=hidden');
    expect(answer).toContain(`home=${user} key=hidden`);
  }, 180_000);
});
