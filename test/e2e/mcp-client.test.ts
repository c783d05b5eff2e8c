/**
 * MCP servers as tools, through the real binary: fixture servers written with the SDK (bundled into the
 * repository, where the sandbox can see them), a scripted model calling `mcp__<server>__<tool>` over the wire.
 */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type HttpFixture, startHttpFixture } from '../fixtures/mcp/http.js';
import { bundleMcpFixture } from '../helpers/mcp-fixtures.js';
import { gitRepo } from '../helpers/tmp.js';
import {
  catalogueOf,
  chatBodies,
  keel,
  keelHome,
  lastSessionEvents,
  model,
  modelFlags,
  offeredTools,
} from './harness.js';

const FIXTURES = ['normal', 'crash', 'hang', 'garbage', 'hostile'];

/** A git repository holding the fixture servers as single files in `mcp/` (the sandbox shows the workspace). */
async function repoWithServers(): Promise<string> {
  const repo = gitRepo();
  await Promise.all(FIXTURES.map((f) => bundleMcpFixture(f, join(repo, 'mcp', `${f}.cjs`))));
  return repo;
}

/** A `[[mcp_servers]]` entry for a fixture in the repository. */
function stdioServer(name: string, fixture: string, extra = ''): string {
  return `[[mcp_servers]]\nname = "${name}"\ncommand = ["node", "mcp/${fixture}.cjs"]\n${extra}\n`;
}

/**
 * Fixture processes of `repo` (none may outlive the session): a `node mcp/*.cjs` whose working folder or
 * command line is this test's repository, so a fixture of another test file running at the same time
 * is not counted.
 */
function fixtureProcesses(repo: string): string[] {
  const found: string[] = [];
  for (const pid of readdirSync('/proc').filter((e) => /^\d+$/.test(e))) {
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
      if (!(cmd.includes('mcp/') && cmd.includes('.cjs'))) continue;
      if (cmd.includes(repo) || readlinkSync(`/proc/${pid}/cwd`) === repo) found.push(`${pid}: ${cmd}`);
    } catch {
      // gone while we looked
    }
  }
  return found;
}

function toolResults(home: string): Array<{ tool: string; output: string; is_error: boolean }> {
  return lastSessionEvents(home)
    .filter((e) => e.type === 'tool_result')
    .map((e) => e.data as { tool: string; output: string; is_error: boolean });
}

function endCode(home: string): string | undefined {
  const end = lastSessionEvents(home).find((e) => e.type === 'session_end');
  return (end?.data as { code?: string } | undefined)?.code;
}

describe('MCP servers as tools', () => {
  it('calls a stdio server in the sandbox, sends the result back, and leaves no child behind', async () => {
    const repo = await repoWithServers();
    const home = keelHome(stdioServer('fx', 'normal', 'read_only_tools = ["echo"]'));
    const server = await model([
      { tool_calls: [{ name: 'mcp__fx__echo', arguments: { text: 'hi there' } }] },
      { tool_calls: [{ name: 'mcp__fx__write_note', arguments: { note: 'from mcp' } }] },
      { tool_calls: [{ name: 'mcp__fx__probe', arguments: {} }] },
      { text: 'done' },
    ]);
    // the check at the end can fail: a fixture server started by hand is seen
    const direct = spawn('node', ['mcp/normal.cjs'], { cwd: repo, stdio: 'pipe' });
    await new Promise((r) => setTimeout(r, 300));
    expect(fixtureProcesses(repo).length).toBeGreaterThan(0);
    direct.kill('SIGKILL');
    await new Promise((r) => direct.once('close', r));
    const run = await keel(['edit', ...modelFlags(server), '-m', 'use the fixture'], {
      cwd: repo,
      home,
      env: { OPENAI_API_KEY: 'sk-not-for-servers' },
      timeoutMs: 60_000,
    });
    expect(run.stderr).not.toContain('warning');
    expect(run.code, run.stderr).toBe(0);
    const bodies = chatBodies(server);
    // offered on demand: the first request names them in the catalogue, and a call by name activates one
    expect(offeredTools(bodies[0]).filter((t) => t.startsWith('mcp__'))).toEqual([]);
    expect(catalogueOf(bodies[0])).toContain('mcp__fx__write_note');
    const tools = (
      bodies[1] as { tools: Array<{ function: { name: string; description: string; parameters: unknown } }> }
    ).tools;
    const echo = tools.find((t) => t.function.name === 'mcp__fx__echo');
    // the first sentence only: the rest would cost tokens in every request
    expect(echo?.function.description).toBe('Echo the text back.');
    expect(echo?.function.parameters).toMatchObject({
      properties: { text: { type: 'string' } },
      required: ['text'],
    });
    expect(offeredTools(bodies[2])).toContain('mcp__fx__write_note');
    expect(JSON.stringify(bodies[1])).toContain('echo: hi there');
    expect(JSON.stringify(bodies[2])).toContain('wrote 8 characters');
    expect(readFileSync(join(repo, 'notes.txt'), 'utf8')).toBe('from mcp');
    // in the sandbox: HOME on its private /tmp, and none of keel's secrets in its environment
    expect(JSON.stringify(bodies[3])).toContain('home=/tmp/home key=hidden');
    const starts = lastSessionEvents(home).filter((e) => e.type === 'gate_decision');
    expect(starts.map((e) => (e.data as { decision: string }).decision)).toEqual(['allow', 'allow', 'allow']);
    expect(fixtureProcesses(repo)).toEqual([]);
  }, 90_000);

  it('calls a Streamable HTTP server with the bearer token named by bearer_token_env', async () => {
    const repo = await repoWithServers();
    const fixture: HttpFixture = await startHttpFixture('s3cret-token');
    try {
      const home = keelHome(
        `[[mcp_servers]]\nname = "web"\nurl = "${fixture.url}"\nbearer_token_env = "WEB_TOKEN"\nread_only_tools = ["shout"]\n`,
      );
      const server = await model([
        { tool_calls: [{ name: 'mcp__web__shout', arguments: { text: 'quiet' } }] },
        { text: 'ok' },
      ]);
      const run = await keel(['ask', ...modelFlags(server), '-m', 'shout'], {
        cwd: repo,
        home,
        env: { WEB_TOKEN: 's3cret-token' },
        timeoutMs: 60_000,
      });
      expect(run.code, run.stderr).toBe(0);
      expect(JSON.stringify(chatBodies(server)[1])).toContain('QUIET!');
      expect(fixture.refused).toBe(0);

      // a wrong token: the server refuses, the session goes on without its tools
      const again = await model([{ text: 'fine' }]);
      const refused = await keel(['ask', ...modelFlags(again), '-m', 'shout'], {
        cwd: repo,
        home,
        env: { WEB_TOKEN: 'wrong' },
        timeoutMs: 60_000,
      });
      expect(refused.code).toBe(0);
      expect(refused.stderr).toMatch(/warning: mcp server "web" could not start: .*its tools are left out/);
      expect(offeredTools(chatBodies(again)[0])).not.toContain('mcp__web__shout');
      expect(catalogueOf(chatBodies(again)[0])).not.toContain('mcp__web__shout');
      expect(fixture.refused).toBeGreaterThan(0);
    } finally {
      await fixture.close();
    }
  }, 90_000);

  it('ask mode offers only the tools declared read-only (offer = "always": from the first request)', async () => {
    const repo = await repoWithServers();
    const home = keelHome(stdioServer('fx', 'normal', 'read_only_tools = ["echo"]\noffer = "always"'));
    const server = await model([{ text: 'nothing to do' }]);
    const run = await keel(['ask', ...modelFlags(server), '-m', 'look'], {
      cwd: repo,
      home,
      timeoutMs: 60_000,
    });
    expect(run.code, run.stderr).toBe(0);
    const offered = offeredTools(chatBodies(server)[0]);
    expect(offered).toContain('mcp__fx__echo');
    expect(offered).not.toContain('mcp__fx__write_note');
    expect(catalogueOf(chatBodies(server)[0])).toEqual(['agent', 'code_graph', 'memory']);
    expect(fixtureProcesses(repo)).toEqual([]);
  }, 90_000);

  it('a tool wrongly declared read-only still cannot write in ask mode: the sandbox keeps the workspace read-only', async () => {
    const repo = await repoWithServers();
    const home = keelHome(stdioServer('fx', 'normal', 'read_only_tools = ["echo", "write_note"]'));
    const server = await model([
      { tool_calls: [{ name: 'mcp__fx__write_note', arguments: { note: 'sneaky' } }] },
      { text: 'ok' },
    ]);
    const run = await keel(['ask', ...modelFlags(server), '-m', 'note'], {
      cwd: repo,
      home,
      timeoutMs: 60_000,
    });
    expect(run.code, run.stderr).toBe(0);
    const [result] = toolResults(home);
    expect(result).toMatchObject({ tool: 'mcp__fx__write_note', is_error: true });
    expect(result?.output).toMatch(/read-only file system|EROFS|EACCES/i);
    expect(existsSync(join(repo, 'notes.txt'))).toBe(false);
  }, 90_000);

  it('a PreToolUse hook matching ^mcp__.* denies the call by name', async () => {
    const repo = await repoWithServers();
    const home = keelHome(
      `${stdioServer('fx', 'normal', 'read_only_tools = ["echo"]')}
[[hooks]]
event = "PreToolUse"
matcher = "^mcp__.*"         # matchers match the whole tool name
command = ["sh", "-c", "echo 'no MCP tools here' >&2; exit 2"]
`,
    );
    const server = await model([
      { tool_calls: [{ name: 'mcp__fx__echo', arguments: { text: 'x' } }] },
      { text: 'ok' },
    ]);
    const run = await keel(['edit', ...modelFlags(server), '-m', 'echo'], {
      cwd: repo,
      home,
      timeoutMs: 60_000,
    });
    const gate = lastSessionEvents(home).find((e) => e.type === 'gate_decision')?.data as
      | { tool: string; decision: string; reason?: string }
      | undefined;
    expect(gate).toMatchObject({ tool: 'mcp__fx__echo', decision: 'deny' });
    expect(JSON.stringify(lastSessionEvents(home))).toContain('no MCP tools here');
    expect(toolResults(home).some((r) => r.output.startsWith('echo:'))).toBe(false);
    expect([0, 1]).toContain(run.code);
    expect(fixtureProcesses(repo)).toEqual([]);
  }, 90_000);

  it('a crashing, a hanging and a garbage-speaking server each become a tool error; the session completes', async () => {
    const repo = await repoWithServers();
    const home = keelHome(
      [
        stdioServer('crashy', 'crash'),
        stdioServer('slow', 'hang', 'tool_timeout_s = 1'),
        // a long timeout: the garbage must be seen as such at once, not waited out
        stdioServer('noise', 'garbage', 'tool_timeout_s = 120'),
        stdioServer('absent', 'does-not-exist', 'startup_timeout_s = 5'),
      ].join('\n'),
    );
    const server = await model([
      { tool_calls: [{ name: 'mcp__crashy__boom', arguments: {} }] },
      { tool_calls: [{ name: 'mcp__crashy__boom', arguments: {} }] },
      { tool_calls: [{ name: 'mcp__slow__wait', arguments: {} }] },
      { tool_calls: [{ name: 'mcp__noise__speak', arguments: {} }] },
      { text: 'all done' },
    ]);
    const run = await keel(['edit', ...modelFlags(server), '-m', 'try them'], {
      cwd: repo,
      home,
      timeoutMs: 90_000,
    });
    expect(run.code, run.stderr).toBe(0);
    expect(endCode(home)).toBe('COMPLETED');
    expect(run.stderr).toMatch(/warning: mcp server "absent" .*its tools are left out/);
    const results = toolResults(home);
    expect(results.map((r) => [r.tool, r.is_error])).toEqual([
      ['mcp__crashy__boom', true],
      ['mcp__crashy__boom', true],
      ['mcp__slow__wait', true],
      ['mcp__noise__speak', true],
    ]);
    expect(results[0]?.output).toMatch(/^mcp server "crashy" crashed: .*about to crash/);
    expect(results[1]?.output).toMatch(/^mcp server "crashy" crashed/);
    expect(results[2]?.output).toBe('mcp server "slow" did not answer within 1 s (tool_timeout_s)');
    expect(results[3]?.output).toMatch(/^mcp server "noise" returned garbage: /);
    const duration = lastSessionEvents(home)
      .filter((e) => e.type === 'tool_result')
      .map((e) => (e.data as { duration_ms: number }).duration_ms);
    expect(duration[3]).toBeLessThan(60_000);
    expect(fixtureProcesses(repo)).toEqual([]);
  }, 120_000);

  it('with no sandbox a server that is not all read-only starts only when shell is opted in', async () => {
    const repo = await repoWithServers();
    const config = `sandbox = "none"\n${stdioServer('fx', 'normal', 'read_only_tools = ["echo"]')}`;
    const refusedModel = await model([{ text: 'none' }]);
    const refused = await keel(['edit', ...modelFlags(refusedModel), '-m', 'look'], {
      cwd: repo,
      home: keelHome(config),
      timeoutMs: 60_000,
    });
    expect(refused.code, refused.stderr).toBe(0);
    expect(refused.stderr).toMatch(
      /warning: mcp server "fx" needs a sandbox and none can run here .*allow_shell/,
    );
    expect(catalogueOf(chatBodies(refusedModel)[0])).toEqual(['agent', 'code_graph', 'memory']);

    const allowedModel = await model([
      { tool_calls: [{ name: 'mcp__fx__probe', arguments: {} }] },
      { text: 'ok' },
    ]);
    const allowed = await keel(['edit', ...modelFlags(allowedModel), '-m', 'look'], {
      cwd: repo,
      home: keelHome(`allow_shell = true\n${config}`),
      env: { OPENAI_API_KEY: 'sk-not-for-servers' },
      timeoutMs: 60_000,
    });
    expect(allowed.code, allowed.stderr).toBe(0);
    // unsandboxed, but still without keel's secrets
    expect(JSON.stringify(chatBodies(allowedModel)[1])).toMatch(/home=\/tmp\/keel-home-\w+ key=hidden/);
    expect(fixtureProcesses(repo)).toEqual([]);
  }, 90_000);

  it("a hostile server's escapes never reach the terminal, and a name no provider takes is left out", async () => {
    const repo = await repoWithServers();
    const home = keelHome(stdioServer('evil', 'hostile'));
    const list = await keel(['mcp', 'list-tools', 'evil'], { cwd: repo, home, timeoutMs: 60_000 });
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout).not.toContain('\x1b');
    expect(list.stdout).not.toContain('\x07');
    expect(list.stdout).toMatch(/^mcp__evil__paint\s+exec\s+.*Clears your screen\.$/m);
    expect(list.stdout).not.toContain('rm -rf');

    const server = await model([
      { tool_calls: [{ name: 'mcp__evil__paint', arguments: {} }] },
      { text: 'ok' },
    ]);
    const run = await keel(['edit', ...modelFlags(server), '-m', 'paint'], {
      cwd: repo,
      home,
      timeoutMs: 60_000,
    });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toContain('has a name keel cannot offer');
    expect(run.stderr).not.toContain('\x1b');
    expect(catalogueOf(chatBodies(server)[0])).toEqual(['agent', 'code_graph', 'memory', 'mcp__evil__paint']);
    expect(fixtureProcesses(repo)).toEqual([]);
  }, 90_000);

  it("a project keel.toml's servers are ignored until keel trust", async () => {
    const repo = await repoWithServers();
    writeFileSync(join(repo, 'keel.toml'), stdioServer('proj', 'normal', 'read_only_tools = ["echo"]'));
    const home = keelHome();
    const first = await model([{ text: 'one' }]);
    const untrusted = await keel(['ask', ...modelFlags(first), '-m', 'look'], {
      cwd: repo,
      home,
      timeoutMs: 60_000,
    });
    expect(untrusted.code).toBe(0);
    expect(untrusted.stderr).toContain('mcp_servers');
    expect(catalogueOf(chatBodies(first)[0])).toEqual(['agent', 'code_graph', 'memory']);
    expect((await keel(['trust'], { cwd: repo, home })).code).toBe(0);
    const second = await model([{ text: 'two' }]);
    const trusted = await keel(['ask', ...modelFlags(second), '-m', 'look'], {
      cwd: repo,
      home,
      timeoutMs: 60_000,
    });
    expect(trusted.code).toBe(0);
    expect(catalogueOf(chatBodies(second)[0])).toContain('mcp__proj__echo');
  }, 90_000);

  it("keel mcp list-tools shows a server's tools, as text and --json; an unknown name is a usage error", async () => {
    const repo = await repoWithServers();
    const home = keelHome(stdioServer('fx', 'normal', 'read_only_tools = ["echo"]'));
    const text = await keel(['mcp', 'list-tools', 'fx'], { cwd: repo, home, timeoutMs: 60_000 });
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^mcp__fx__echo\s+read\s+Echo the text back\.$/m);
    expect(text.stdout).toMatch(
      /^mcp__fx__write_note\s+exec\s+Write a note to notes\.txt in the workspace\.$/m,
    );

    const json = await keel(['mcp', 'list-tools', 'fx', '--json'], { cwd: repo, home, timeoutMs: 60_000 });
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual({
      server: 'fx',
      tools: [
        { name: 'mcp__fx__echo', server_tool: 'echo', effect: 'read', description: 'Echo the text back.' },
        {
          name: 'mcp__fx__write_note',
          server_tool: 'write_note',
          effect: 'exec',
          description: 'Write a note to notes.txt in the workspace.',
        },
        {
          name: 'mcp__fx__probe',
          server_tool: 'probe',
          effect: 'exec',
          description: 'Say where the server runs: its HOME and whether it sees an API key.',
        },
      ],
    });

    const unknown = await keel(['mcp', 'list-tools', 'fz'], { cwd: repo, home });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('no MCP server named "fz" (did you mean "fx"?)');
    const unknownJson = await keel(['mcp', 'list-tools', 'fz', '--json'], { cwd: repo, home });
    expect(JSON.parse(unknownJson.stdout)).toMatchObject({ code: 'CONFIG_ERROR', exit_code: 2 });
    expect(fixtureProcesses(repo)).toEqual([]);
  }, 90_000);
});
