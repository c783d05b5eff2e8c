/**
 * keel as an MCP server, as an outside agent meets it: the official SDK's Client spawning `keel mcp`
 * over stdio, and connecting to `keel mcp --http 127.0.0.1:0` over Streamable HTTP with its token.
 */
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { describe, expect, it } from 'vitest';
import { rawRequest } from '../helpers/raw-http.js';
import { gitRepo, tempDir } from '../helpers/tmp.js';
import { keel, keelHome, model, modelFlags } from './harness.js';
import { httpClient, httpServer, SOURCES, stdioClient, TOOLS } from './mcp-harness.js';

interface ToolAnswer {
  isError?: boolean;
  text: string;
  doc: Record<string, unknown>;
}

async function call(client: Client, name: string, args: Record<string, unknown> = {}): Promise<ToolAnswer> {
  const result = await client.callTool({ name, arguments: args });
  const content = result.content as Array<{ type: string; text: string }>;
  const text = content.map((c) => c.text).join('');
  let doc: Record<string, unknown> = {};
  if (!result.isError) doc = (result.structuredContent as Record<string, unknown>) ?? JSON.parse(text);
  return { isError: result.isError === true, text, doc };
}

/** A raw POST of `initialize` with these headers: what a client without the SDK (or an attacker) sends. */
function rawPost(url: string, headers: Record<string, string>): Promise<number> {
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
  });
  const { port, pathname } = new URL(url);
  return rawRequest(Number(port), pathname, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...headers,
    },
    body,
  }).then((r) => r.status);
}

describe('keel mcp over stdio', () => {
  it('answers every request piped to it before it exits when stdin closes', async () => {
    const repo = gitRepo({ 'src/greet.ts': 'export function hello() {\n  return 1;\n}\n' });
    const line = (o: object) => JSON.stringify({ jsonrpc: '2.0', ...o });
    const input = [
      line({
        id: 1,
        method: 'initialize',
        params: {
          protocolVersion: '2025-06-18',
          capabilities: {},
          clientInfo: { name: 'pipe', version: '1' },
        },
      }),
      line({ method: 'notifications/initialized' }),
      line({ id: 2, method: 'tools/call', params: { name: 'find_symbol', arguments: { name: 'hello' } } }),
      line({ id: 3, method: 'tools/call', params: { name: 'memory_search', arguments: { query: 'x' } } }),
      '',
    ].join('\n');
    const run = await keel(['mcp'], { cwd: repo, home: keelHome(), input });
    expect(run.code).toBe(0);
    const answers = run.stdout
      .trim()
      .split('\n')
      .map(
        (l) =>
          JSON.parse(l) as { id: number; result?: { isError?: boolean; content: Array<{ text: string }> } },
      );
    expect(answers.map((a) => a.id).sort()).toEqual([1, 2, 3]);
    const found = answers.find((a) => a.id === 2)?.result;
    // the index ran to its end: the request was not abandoned when stdin closed
    expect(found?.isError).not.toBe(true);
    expect(found?.content[0]?.text).toContain('src/greet.ts');
  });

  it('lists its tools, remembers and finds a note, and answers graph queries about the project', async () => {
    const repo = gitRepo(SOURCES);
    const home = keelHome();
    const client = await stdioClient(repo, home);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(TOOLS);
    expect(tools.find((t) => t.name === 'memory_add')?.annotations?.readOnlyHint).toBe(false);
    expect(tools.find((t) => t.name === 'find_symbol')?.annotations?.readOnlyHint).toBe(true);

    const added = await call(client, 'memory_add', {
      text: 'Invoice totals are rounded half-even in src/billing.ts',
      tags: ['money'],
    });
    expect(added.isError).toBe(false);
    expect(added.doc).toMatchObject({
      folded: false,
      item: { author: 'model', kind: 'note', tags: ['money'] },
    });
    const found = await call(client, 'memory_search', { query: 'rounding of invoices' });
    const results = found.doc.results as Array<{ id: string; text: string }>;
    expect(results[0]?.id).toBe((added.doc as { id: string }).id);
    const listed = await call(client, 'memory_list', { kind: 'note' });
    expect((listed.doc.items as unknown[]).length).toBe(1);
    // the same memory keel's own CLI reads for this project
    const cli = await keel(['memory', 'list', '--json'], { cwd: repo, home });
    expect(JSON.parse(cli.stdout).items[0].text).toBe(
      'Invoice totals are rounded half-even in src/billing.ts',
    );

    const symbol = await call(client, 'find_symbol', { name: 'helper' });
    expect(symbol.doc.definitions).toEqual([
      {
        path: 'src/util.ts',
        name: 'helper',
        kind: 'function',
        signature: 'export function helper(n: number): number {',
        start_line: 1,
        end_line: 3,
        parent: null,
      },
    ]);
    const refs = await call(client, 'find_references', { name: 'helper' });
    expect(refs.doc.references).toEqual([{ path: 'src/app.ts', name: 'helper', line: 4 }]);
    const outline = await call(client, 'file_outline', { path: 'src/app.ts' });
    expect((outline.doc.outline as Array<{ name: string }>).map((s) => s.name)).toEqual(['App', 'run']);
    const importers = await call(client, 'importers', { path: 'src/util.ts' });
    expect(importers.doc.importers).toEqual(['src/app.ts']);
    const map = await call(client, 'repo_map', { task: 'change helper', tokens: 400 });
    expect(map.text).toContain('src/util.ts');
    expect(map.text).toContain('export function helper(n: number): number {');
    expect(map.doc.tokens as number).toBeLessThanOrEqual(400);
  });

  it('refuses paths that leave the project and inputs that do not fit the schema, as tool errors', async () => {
    const repo = gitRepo(SOURCES);
    const outside = tempDir('keel-outside-');
    writeFileSync(join(outside, 'secret.ts'), 'export function stolenSecret() {}\n');
    symlinkSync(join(outside, 'secret.ts'), join(repo, 'src', 'link.ts'));
    mkdirSync(join(repo, 'nested'));
    symlinkSync(outside, join(repo, 'nested', 'out'));
    const client = await stdioClient(repo, keelHome());
    for (const path of [
      '../outside',
      '/etc/passwd',
      'src/link.ts',
      'nested/out/secret.ts',
      join(outside, 'secret.ts'),
    ]) {
      const outline = await call(client, 'file_outline', { path });
      expect(outline.isError, path).toBe(true);
      expect(outline.text).toContain('outside the project');
      // where a link points is not told (a path the client typed itself is only echoed)
      if (!path.startsWith(outside)) expect(outline.text).not.toContain(outside);
      const imp = await call(client, 'importers', { path });
      expect(imp.isError, path).toBe(true);
    }
    // the file a link points to was never indexed as the project's
    expect((await call(client, 'find_symbol', { name: 'stolenSecret' })).doc.definitions).toEqual([]);
    const bad: Array<[string, Record<string, unknown>]> = [
      ['memory_search', { query: 'x', k: 0 }],
      ['memory_search', { query: 'x', extra: true }],
      ['memory_add', { text: '' }],
      ['memory_list', { kind: 'secrets' }],
      ['importers', { name: 'a', path: 'b' }],
      ['session_status', { session_id: '../../etc' }],
      ['run_status', { run_id: "x' OR 1=1 --" }],
      ['file_outline', { path: 'src/app.ts\0' }],
    ];
    for (const [name, args] of bad) expect((await call(client, name, args)).isError, name).toBe(true);
    // still serving after all of that
    expect((await call(client, 'memory_list')).isError).toBe(false);
  });

  it("reports a `keel ask` session's state, tokens and cost, and only this project's sessions", async () => {
    const repo = gitRepo(SOURCES);
    const other = gitRepo({ 'README.md': '# other\n' });
    const home = keelHome();
    const server = await model([
      { text: 'It adds one.', usage: { prompt_tokens: 120, completion_tokens: 7 } },
      { text: 'Elsewhere.' },
    ]);
    const ask = await keel(['ask', ...modelFlags(server), '--json', 'what does helper do?'], {
      cwd: repo,
      home,
    });
    expect(ask.code).toBe(0);
    const session = JSON.parse(ask.stdout) as { session_id: string; tokens: unknown };
    const elsewhere = await keel(['ask', ...modelFlags(server), '--json', 'and here?'], { cwd: other, home });
    const otherId = (JSON.parse(elsewhere.stdout) as { session_id: string }).session_id;

    const client = await stdioClient(repo, home);
    const list = await call(client, 'session_status');
    const sessions = list.doc.sessions as Array<Record<string, unknown>>;
    expect(sessions.map((s) => s.id)).toEqual([session.session_id]);
    expect(sessions[0]).toMatchObject({ mode: 'ask', state: 'COMPLETED', code: 'COMPLETED', rounds: 1 });
    expect(sessions[0]?.tokens).toEqual(session.tokens);
    const one = await call(client, 'session_status', { session_id: session.session_id.slice(0, -1) });
    expect(one.doc.session).toMatchObject({ id: session.session_id, summary: 'It adds one.' });
    const foreign = await call(client, 'session_status', { session_id: otherId });
    expect(foreign.isError).toBe(true);
    expect(foreign.text).toContain('no session matches');
    expect((await call(client, 'run_status')).doc.runs).toEqual([]);
    // a session is not a run
    expect((await call(client, 'run_status', { run_id: session.session_id })).isError).toBe(true);
  });
});

describe('keel mcp --http', () => {
  it('serves a client with the generated token; refuses no token, a wrong one and a foreign Host', async () => {
    const repo = gitRepo(SOURCES);
    const home = keelHome();
    const server = await httpServer(repo, home);
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
    expect(server.token.length).toBeGreaterThanOrEqual(24);
    const client = await httpClient(server);
    expect((await client.listTools()).tools.map((t) => t.name).sort()).toEqual(TOOLS);
    await call(client, 'memory_add', { text: 'The webhook secret lives in STRIPE_WEBHOOK_SECRET' });
    const found = await call(client, 'memory_search', { query: 'STRIPE_WEBHOOK_SECRET' });
    expect((found.doc.results as unknown[]).length).toBe(1);
    expect((await call(client, 'file_outline', { path: '/etc/passwd' })).isError).toBe(true);

    const host = new URL(server.url).host;
    expect(await rawPost(server.url, {})).toBe(401);
    expect(await rawPost(server.url, { authorization: 'Bearer wrong-token-of-some-length' })).toBe(401);
    expect(await rawPost(server.url, { authorization: `Basic ${server.token}` })).toBe(401);
    expect(
      await rawPost(server.url, {
        authorization: `Bearer ${server.token}`,
        host: `evil.example:${host.split(':')[1]}`,
      }),
    ).toBe(403);
    expect(
      await rawPost(server.url, { authorization: `Bearer ${server.token}`, origin: 'http://evil.example' }),
    ).toBe(403);
    expect(await rawPost(server.url, { authorization: `Bearer ${server.token}` })).toBe(200);
    await expect(httpClient(server, 'not-the-token-at-all')).rejects.toThrow();
  });

  it('takes KEEL_MCP_TOKEN and does not print it', async () => {
    const token = 'a-long-token-chosen-by-the-user-1234';
    const server = await httpServer(gitRepo(SOURCES), keelHome(), { KEEL_MCP_TOKEN: token });
    expect(server.stderr()).not.toContain(token);
    expect(server.stderr()).not.toContain('token:');
    const client = await httpClient(server, token);
    expect((await call(client, 'memory_list')).doc.items).toEqual([]);
  });

  it('refuses a non-loopback address without KEEL_MCP_TOKEN, and an address that is none', async () => {
    const repo = gitRepo(SOURCES);
    const home = keelHome();
    const open = await keel(['mcp', '--http', '0.0.0.0:0'], { cwd: repo, home });
    expect(open.code).toBe(2);
    expect(open.stderr.trim().split('\n')).toHaveLength(1);
    expect(open.stderr).toContain('without KEEL_MCP_TOKEN');
    const weak = await keel(['mcp', '--http', '0.0.0.0:0'], {
      cwd: repo,
      home,
      env: { KEEL_MCP_TOKEN: 'short' },
    });
    expect(weak.code).toBe(2);
    expect(weak.stderr).toContain('shorter than 16');
    const nonsense = await keel(['mcp', '--http', 'nowhere'], { cwd: repo, home });
    expect(nonsense.code).toBe(2);
    expect(nonsense.stderr).toContain('is not HOST:PORT');
  });
});
