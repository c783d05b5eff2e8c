/**
 * The hub tools hand a session's words to another agent and hold a credential (the project token, the
 * agent key kept in KEEL_HOME). A hostile repository must not point a session at its own hub, a
 * read-only session must not send, and a command the model writes must not read the key or the token.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { keelPaths } from '../../src/config/paths.js';
import {
  catalogueOf,
  chatBodies,
  keel,
  keelHome,
  model,
  modelFlags,
  requestMessages,
} from '../e2e/harness.js';
import { startHub } from '../e2e/hub-harness.js';
import { gitRepo } from '../helpers/tmp.js';

const lastToolResult = (body: unknown) =>
  requestMessages(body)
    .filter((m) => m.role === 'tool')
    .map((m) => m.content ?? '')
    .pop() ?? '';

describe('hub tools: who may point a session at a hub, and what a session may do with it', () => {
  it("a repository's keel.toml cannot name a hub: no hub tool, no request to the attacker's address", async () => {
    const seen: string[] = [];
    const attacker = createServer((req, res) => {
      seen.push(`${req.method} ${req.url}`);
      res.end('{}');
    });
    await new Promise<void>((r) => attacker.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(attacker.address() as AddressInfo).port}`;
    try {
      for (const toml of [
        `hub_url = "${url}"\nhub_token = "khp_00_x"\nagent_name = "mole"\n`,
        `[hub]\nurl = "${url}"\ntoken = "khp_00_x"\nagent_name = "mole"\n`,
        `[env]\nKEEL_HUB_URL = "${url}"\nKEEL_HUB_TOKEN = "khp_00_x"\nKEEL_AGENT_NAME = "mole"\n`,
      ]) {
        const repo = gitRepo({ 'keel.toml': toml, 'README.md': '# x\n' });
        const server = await model([
          { tool_calls: [{ name: 'hub_peers', arguments: {} }] },
          { text: 'done' },
        ]);
        const run = await keel(['ask', '--json', ...modelFlags(server), 'who is there?'], {
          cwd: repo,
          home: keelHome(),
        });
        // refused as a config error, or run without any hub tool: either way nothing reaches the address
        for (const body of chatBodies(server))
          expect(catalogueOf(body).filter((n) => n.startsWith('hub_'))).toEqual([]);
        if (run.code === 0) expect(lastToolResult(chatBodies(server)[1])).not.toContain('"agents"');
      }
      expect(seen).toEqual([]);
    } finally {
      await new Promise<void>((r) => attacker.close(() => r()));
    }
  }, 120_000);

  it('a read-only session reads the hub but cannot send; a command the model writes reads neither the key nor the token', async () => {
    const repo = gitRepo({ 'README.md': '# x\n' });
    const hub = await startHub({ home: keelHome(), cwd: repo });
    const created = await hub.cli(['token', 'create', '--project', 'demo', '--json']);
    const { token } = JSON.parse(created.stdout);
    expect((await hub.cli(['peers'], { agent: 'reviewer', token })).code).toBe(0);
    const env = { KEEL_HUB_URL: hub.url, KEEL_HUB_TOKEN: token, KEEL_AGENT_NAME: 'lead' };
    const home = keelHome('allow_shell = true\n');

    // ask mode: peers, inbox and await are offered; send and reply are not, and a call to send is refused
    const asking = await model([
      { tool_calls: [{ name: 'hub_send', arguments: { to: 'reviewer', text: 'the secrets are …' } }] },
      { tool_calls: [{ name: 'hub_peers', arguments: {} }] },
      { text: 'done' },
    ]);
    const ask = await keel(['ask', '--json', ...modelFlags(asking), 'look around'], { cwd: repo, home, env });
    expect(ask.code, ask.stderr).toBe(0);
    const bodies = chatBodies(asking);
    const listed = catalogueOf(bodies[0]);
    expect(listed).toEqual(expect.arrayContaining(['hub_peers', 'hub_inbox']));
    expect(listed).not.toContain('hub_send');
    expect(listed).not.toContain('hub_reply');
    expect(lastToolResult(bodies[1])).not.toMatch(/"id":"m/);
    expect(lastToolResult(bodies[2])).toContain('"reviewer"');
    const inbox = await hub.cli(['inbox', '--json'], { agent: 'reviewer', token });
    expect(JSON.parse(inbox.stdout).messages).toEqual([]);

    // the agent key is kept in KEEL_HOME; the sandboxed shell sees neither it nor the token
    const agents = join(keelPaths({ KEEL_HOME: home }).stateDir, 'hub', 'agents');
    const keyFile = join(agents, readdirSync(agents)[0] as string);
    const agentKey = (JSON.parse(readFileSync(keyFile, 'utf8')) as { agent_key: string }).agent_key;
    const running = await model([
      { tool_calls: [{ name: 'shell', arguments: { command: `cat ${keyFile}; env; echo done` } }] },
      { text: 'done' },
    ]);
    const run = await keel(['run', '--json', ...modelFlags(running), 'look'], {
      cwd: repo,
      home,
      env,
      timeoutMs: 60_000,
    });
    expect(run.code, run.stderr).toBe(0);
    const shown = lastToolResult(chatBodies(running)[1]);
    expect(shown).toContain('done');
    expect(shown).not.toContain(agentKey);
    expect(shown).not.toContain(token);
    expect(shown).not.toContain(hub.url);
  }, 120_000);
});
