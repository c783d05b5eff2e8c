/**
 * The hub tools from one catalog (src/tools/hub.ts): `keel mcp` serves them to two outside agents that
 * hand each other a request and its reply through one running `keel hub start`; a keel session offers
 * the same tools with the same arguments, sends with hub_send and gets the other agent's reply with
 * hub_await; and `keel hub` has a verb with a flag for each tool and argument.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterEach, describe, expect, it } from 'vitest';
import { HUB_TOOLS, sessionKey } from '../../src/tools/hub.js';
import { gitRepo } from '../helpers/tmp.js';
import {
  baseEnv,
  chatBodies,
  KEEL_BIN,
  keel,
  keelHome,
  model,
  modelFlags,
  requestMessages,
} from './harness.js';
import { startHub } from './hub-harness.js';
import { readStream, startServe } from './serve-harness.js';

const clients: Client[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close().catch(() => undefined)));
});

/** `keel mcp` over stdio as agent `name` of the hub. */
async function mcpAgent(cwd: string, home: string, env: Record<string, string>): Promise<Client> {
  const client = new Client({ name: 'outside-agent', version: '1.0.0' });
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: [KEEL_BIN, 'mcp'],
      cwd,
      env: { ...baseEnv(home), ...env },
      stderr: 'pipe',
    }),
  );
  clients.push(client);
  return client;
}

// biome-ignore lint/suspicious/noExplicitAny: the test reads the tools' documented JSON
async function call(client: Client, name: string, args: Record<string, unknown> = {}): Promise<any> {
  const result = await client.callTool({ name, arguments: args });
  const text = (result.content as Array<{ text: string }>)[0]?.text ?? '';
  expect(result.isError, text).toBeFalsy();
  return JSON.parse(text);
}

/** Each tool's argument names, sorted, by tool name. */
function argumentsOf(
  tools: Array<{ name: string; schema: { properties?: object } }>,
): Record<string, string[]> {
  return Object.fromEntries(tools.map((t) => [t.name, Object.keys(t.schema.properties ?? {}).sort()]));
}

const catalog = Object.fromEntries(HUB_TOOLS.map((t) => [t.name, Object.keys(t.schema.shape).sort()]));

describe('hub tools: one catalog for sessions, keel mcp and the CLI', () => {
  it('two keel mcp agents exchange a request and a reply; a session sends with hub_send and gets the reply with hub_await', async () => {
    const repo = gitRepo({ 'README.md': '# demo\n' });
    const hubHome = keelHome();
    const hub = await startHub({ home: hubHome, cwd: repo });
    const created = await hub.cli(['token', 'create', '--project', 'demo', '--json']);
    expect(created.code, created.stderr).toBe(0);
    const { token } = JSON.parse(created.stdout);
    const as = (name: string) => ({ KEEL_HUB_URL: hub.url, KEEL_HUB_TOKEN: token, KEEL_AGENT_NAME: name });

    // without a hub in the environment keel mcp serves no hub tool
    const plain = await mcpAgent(repo, keelHome(), {});
    expect((await plain.listTools()).tools.filter((t) => t.name.startsWith('hub_'))).toEqual([]);

    const reviewer = await mcpAgent(repo, keelHome(), as('reviewer'));
    const author = await mcpAgent(repo, keelHome(), as('author'));
    const served = (await reviewer.listTools()).tools
      .filter((t) => t.name.startsWith('hub_'))
      .map((t) => ({ name: t.name, schema: t.inputSchema }));
    expect(argumentsOf(served)).toEqual(catalog);

    // the author asks; the reviewer sees it, replies; the author's await gets the reply
    await call(reviewer, 'hub_peers');
    const sent = await call(author, 'hub_send', {
      to: 'reviewer',
      text: 'review PR 7',
      idempotency_key: 'pr-7',
    });
    expect(sent).toMatchObject({ to: 'reviewer', created: true });
    const again = await call(author, 'hub_send', {
      to: 'reviewer',
      text: 'review PR 7',
      idempotency_key: 'pr-7',
    });
    expect(again).toMatchObject({ id: sent.id, created: false });
    expect((await call(reviewer, 'hub_peers')).agents.map((a: { name: string }) => a.name).sort()).toEqual([
      'author',
      'reviewer',
    ]);
    const inbox = await call(reviewer, 'hub_inbox');
    expect(inbox.messages).toEqual([{ id: sent.id, from: 'author', text: 'review PR 7' }]);
    await call(reviewer, 'hub_reply', { id: sent.id, text: 'LGTM with one nit' });
    const answered = await call(author, 'hub_await', { id: sent.id, timeout_s: 10 });
    expect(answered).toMatchObject({
      id: sent.id,
      state: 'replied',
      reply: { from: 'reviewer', text: 'LGTM with one nit' },
    });
    // a bound the catalog states is checked: an await of more than 60 s is refused
    const tooLong = await author.callTool({ name: 'hub_await', arguments: { id: sent.id, timeout_s: 61 } });
    expect(tooLong.isError).toBe(true);

    // a keel session as agent "lead": it activates the hub tools and sends
    const sessionHome = keelHome('allow_shell = true\n');
    const first = await model([
      { tool_calls: [{ name: 'tools', arguments: { activate: HUB_TOOLS.map((t) => t.name) } }] },
      {
        tool_calls: [
          {
            name: 'hub_send',
            arguments: { to: 'reviewer', text: 'check the tests', idempotency_key: 'lead-1' },
          },
        ],
      },
      { text: 'sent' },
    ]);
    const run = await keel(['run', '--json', ...modelFlags(first), 'ask the reviewer'], {
      cwd: repo,
      home: sessionHome,
      env: as('lead'),
      timeoutMs: 60_000,
    });
    expect(run.code, run.stderr).toBe(0);
    const bodies = chatBodies(first);
    // the request after activation lists the same tools with the same arguments as the catalog
    const offered = (
      bodies[1] as { tools: Array<{ function: { name: string; parameters: { properties?: object } } }> }
    ).tools
      .filter((t) => t.function.name.startsWith('hub_'))
      .map((t) => ({ name: t.function.name, schema: t.function.parameters }));
    expect(argumentsOf(offered)).toEqual(catalog);
    const result =
      requestMessages(bodies[2])
        .filter((m) => m.role === 'tool')
        .pop()?.content ?? '';
    const { id } = JSON.parse(result) as { id: string };
    expect(id).toBeTruthy();

    // the reviewer (over MCP) answers; a second session of "lead" awaits the reply
    const request = (await call(reviewer, 'hub_inbox')).messages.find((m: { id: string }) => m.id === id);
    expect(request).toMatchObject({ from: 'lead', text: 'check the tests' });
    await call(reviewer, 'hub_reply', { id, text: 'tests pass' });
    const second = await model([
      { tool_calls: [{ name: 'hub_await', arguments: { id, timeout_s: 30 } }] },
      { text: 'the reviewer says the tests pass', expect: { last_tool_result_contains: 'tests pass' } },
    ]);
    const awaited = await keel(['run', '--json', ...modelFlags(second), 'what did the reviewer say?'], {
      cwd: repo,
      home: sessionHome,
      env: as('lead'),
      timeoutMs: 60_000,
    });
    expect(awaited.code, awaited.stderr).toBe(0);
    expect(requestMessages(chatBodies(second)[1]).pop()?.content).toContain('"from":"reviewer"');

    // `keel hub` has a verb for each tool and a flag (or argument) for each of its arguments
    const help = await keel(['hub', '--help'], { cwd: repo, home: sessionHome });
    for (const tool of HUB_TOOLS) {
      expect(help.stdout).toMatch(new RegExp(`^\\s+${tool.cli.verb}\\b`, 'm'));
      const verb = await keel(['hub', tool.cli.verb, '--help'], { cwd: repo, home: sessionHome });
      expect(Object.keys(tool.cli.args).sort()).toEqual(Object.keys(tool.schema.shape).sort());
      for (const flag of Object.values(tool.cli.args)) expect(verb.stdout, tool.name).toContain(flag);
    }
  }, 180_000);

  it("keel serve's sessions get the hub tools a one-shot session of the same mode gets: hub_peers and hub_send reach the hub", async () => {
    const repo = gitRepo({ 'README.md': '# demo\n' });
    const hub = await startHub({ home: keelHome(), cwd: repo });
    const created = await hub.cli(['token', 'create', '--project', 'demo', '--json']);
    expect(created.code, created.stderr).toBe(0);
    const { token } = JSON.parse(created.stdout);
    const lead = { KEEL_HUB_URL: hub.url, KEEL_HUB_TOKEN: token, KEEL_AGENT_NAME: 'lead' };
    // the recipient exists on the hub before the session sends to it
    const reviewer = await hub.cli(['peers', '--json'], { agent: 'reviewer', token });
    expect(reviewer.code, reviewer.stderr).toBe(0);

    const home = keelHome();
    const server = await model([
      { tool_calls: [{ name: 'tools', arguments: {} }] },
      { tool_calls: [{ name: 'tools', arguments: { activate: ['hub_peers', 'hub_send'] } }] },
      { tool_calls: [{ name: 'hub_peers', arguments: {} }] },
      { tool_calls: [{ name: 'hub_send', arguments: { to: 'reviewer', text: 'review the served change' } }] },
      { text: 'sent', expect: { last_tool_result_contains: '"created":true' } },
    ]);
    const s = await startServe({ cwd: repo, home, args: modelFlags(server), env: lead });
    const started = await s.api('POST', '/v1/sessions', { prompt: 'ask the reviewer', mode: 'auto' });
    expect(started.status, JSON.stringify(started.body)).toBe(201);
    const id = started.body.session_id as string;
    const stream = `${s.url}v1/sessions/${id}/events`;
    // the send leaves the machine: the server's person is asked, as for a command outside the sandbox
    const asked = (
      await readStream(stream, (f) => f.event === 'approval' || f.event === 'end', { token: s.token })
    ).at(-1);
    expect(asked?.event, JSON.stringify(asked?.data)).toBe('approval');
    expect(asked?.data.tool).toBe('hub_send');
    const answered = await s.api('POST', `/v1/sessions/${id}/approvals/${asked?.data.id}`, {
      decision: 'allow',
    });
    expect(answered.status).toBe(200);
    const all = await readStream(stream, (f) => f.event === 'end', { token: s.token });
    expect(all.at(-1)?.data.code).toBe('COMPLETED');

    // hub_peers reached the hub: its answer names the reviewer
    const bodies = chatBodies(server);
    expect(requestMessages(bodies[3]).pop()?.content).toContain('"reviewer"');
    // hub_send reached it: the message is in the reviewer's inbox, from the server's agent
    const inbox = await hub.cli(['inbox', '--json'], { agent: 'reviewer', token });
    expect(inbox.code, inbox.stderr).toBe(0);
    const messages = JSON.parse(inbox.stdout).messages;
    expect(messages).toEqual([expect.objectContaining({ from: 'lead', body: 'review the served change' })]);
    // its idempotency key is the session's and the call's, so a resumed session cannot send it twice
    expect(messages[0].idempotency_key).toBe(sessionKey(id, asked?.data.call_id));

    // the tools it could activate are those of a one-shot session of the same mode and config
    const oneShot = await model([{ tool_calls: [{ name: 'tools', arguments: {} }] }, { text: 'listed' }]);
    const run = await keel(['run', '--json', ...modelFlags(oneShot), 'list the tools'], {
      cwd: repo,
      home,
      env: lead,
    });
    expect(run.code, run.stderr).toBe(0);
    const listed = (body: unknown) => requestMessages(body).at(-1)?.content ?? '';
    expect(listed(bodies[1])).toContain('hub_send');
    expect(listed(bodies[1])).toBe(listed(chatBodies(oneShot)[1]));
  }, 180_000);
});
