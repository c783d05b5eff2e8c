/**
 * What other harnesses install: the Claude Code plugin (its manifest and the `.mcp.json` that starts
 * `keel mcp`), the pi package, and the keel-hub skill. Each parses, and what it names exists: the server
 * the plugin starts, run as written with its env expanded, serves every hub tool, and the skill names
 * only tools of the catalog and verbs of `keel hub`.
 */
import { readdirSync, readFileSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterEach, describe, expect, it } from 'vitest';
import { parseSkillFile } from '../../src/skills/front-matter.js';
import { HUB_TOOLS } from '../../src/tools/hub.js';
import { gitRepo } from '../helpers/tmp.js';
import { baseEnv, KEEL_BIN, keelHome } from './harness.js';

const ROOT = join(import.meta.dirname, '..', '..');
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');
const json = (path: string) => JSON.parse(read(path));

const clients: Client[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close().catch(() => undefined)));
});

/** Claude Code's expansion of `${VAR}` and `${VAR:-default}` in .mcp.json. */
function expand(value: string, env: Record<string, string>): string {
  return value.replace(
    /\$\{(\w+)(?::-([^}]*))?\}/g,
    (_, name: string, fallback?: string) => env[name] ?? fallback ?? '',
  );
}

describe('integrations: the Claude Code plugin, the pi package and the keel-hub skill', () => {
  it('the skill parses and names only the catalog tools and keel hub verbs; both packages carry it', () => {
    const skill = read('skills/keel-hub/SKILL.md');
    const parsed = parseSkillFile(skill);
    expect(parsed.ok, parsed.ok ? '' : parsed.error).toBe(true);
    if (!parsed.ok) return;
    expect(parsed.data.name).toBe('keel-hub');
    expect(String(parsed.data.description).length).toBeGreaterThan(20);
    const tools = new Set(HUB_TOOLS.map((t) => t.name));
    const verbs = new Set(HUB_TOOLS.map((t) => t.cli.verb));
    const named = [...skill.matchAll(/\bhub_\w+/g)].map((m) => m[0]);
    expect(new Set(named)).toEqual(tools);
    for (const [, verb] of skill.matchAll(/`keel hub (\w+)/g)) expect(verbs, verb).toContain(verb);
    // each tool's arguments appear with it
    for (const tool of HUB_TOOLS)
      for (const arg of Object.keys(tool.schema.shape))
        if (!/_s$|^id$/.test(arg)) expect(skill, `${tool.name} ${arg}`).toContain(arg);

    // pi: a package with the pi key whose skills folder holds this very skill
    const pi = json('integrations/pi/package.json');
    expect(pi.keywords).toContain('pi-package');
    for (const dir of pi.pi.skills as string[]) {
      const found = readdirSync(join(ROOT, 'integrations/pi', dir));
      expect(found).toEqual(['keel-hub']);
      expect(read(join('integrations/pi', dir, 'keel-hub', 'SKILL.md'))).toBe(skill);
    }
    // Claude Code: a plugin manifest, and the skill in the plugin's skills/ folder
    const plugin = json('integrations/claude-code/.claude-plugin/plugin.json');
    expect(plugin.name).toMatch(/^[a-z0-9]+(-[a-z0-9]+)*$/);
    expect(read('integrations/claude-code/skills/keel-hub/SKILL.md')).toBe(skill);
    expect(realpathSync(join(ROOT, 'integrations/claude-code/skills/keel-hub'))).toBe(
      realpathSync(join(ROOT, 'skills/keel-hub')),
    );
  });

  it("the plugin's .mcp.json starts keel mcp, which serves every hub tool with the hub env it passes", async () => {
    const mcp = json('integrations/claude-code/.mcp.json');
    const servers = Object.values(mcp.mcpServers) as Array<{
      command: string;
      args: string[];
      env: Record<string, string>;
    }>;
    expect(servers).toHaveLength(1);
    const server = servers[0] as (typeof servers)[number];
    // the command is keel's own binary, as package.json installs it
    expect(Object.keys(json('package.json').bin)).toContain(server.command);
    const shell = { KEEL_HUB_TOKEN: 'khp_00_token', KEEL_AGENT_NAME: 'claude' };
    const env = Object.fromEntries(Object.entries(server.env).map(([k, v]) => [k, expand(v, shell)]));
    expect(env).toEqual({
      KEEL_HUB_URL: 'http://127.0.0.1:7431',
      KEEL_HUB_TOKEN: 'khp_00_token',
      KEEL_AGENT_NAME: 'claude',
    });
    const home = keelHome();
    const client = new Client({ name: 'claude-code', version: '1.0.0' });
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [KEEL_BIN, ...server.args],
        cwd: gitRepo({ 'README.md': '# x\n' }),
        env: { ...baseEnv(home), ...env },
        stderr: 'pipe',
      }),
    );
    clients.push(client);
    const names = (await client.listTools()).tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(HUB_TOOLS.map((t) => t.name)));
  }, 60_000);
});
