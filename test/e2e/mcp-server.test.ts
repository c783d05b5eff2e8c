/**
 * keel as an MCP server, as an outside agent meets it: the official SDK's Client spawning `keel mcp`
 * over stdio, and connecting to `keel mcp --http 127.0.0.1:0` over Streamable HTTP with its token.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterEach, describe, expect, it } from 'vitest';
import { gitRepo, tempDir } from '../helpers/tmp.js';
import { baseEnv, KEEL_BIN, keel, keelHome, model, modelFlags } from './harness.js';

const SOURCES = {
  'src/util.ts': 'export function helper(n: number): number {\n  return n + 1;\n}\n',
  'src/app.ts':
    "import { helper } from './util.js';\nexport class App {\n  run(): number {\n    return helper(1);\n  }\n}\n",
};
const TOOLS = [
  'file_outline',
  'find_references',
  'find_symbol',
  'importers',
  'memory_add',
  'memory_list',
  'memory_search',
  'repo_map',
  'run_status',
  'session_status',
];

const clients: Client[] = [];
const children: ChildProcess[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close().catch(() => undefined)));
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
});

async function stdioClient(cwd: string, home: string): Promise<Client> {
  const client = new Client({ name: 'outside-agent', version: '1.0.0' });
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [KEEL_BIN, 'mcp'],
    cwd,
    env: baseEnv(home),
    stderr: 'pipe',
  });
  await client.connect(transport);
  clients.push(client);
  return client;
}

interface HttpServer {
  url: string;
  token: string;
  stderr: () => string;
  exited: Promise<number | null>;
}

/** `keel mcp --http 127.0.0.1:0`, once it says where it listens. */
function httpServer(cwd: string, home: string, env: Record<string, string> = {}): Promise<HttpServer> {
  const child = spawn(process.execPath, [KEEL_BIN, 'mcp', '--http', '127.0.0.1:0'], {
    cwd,
    env: { ...baseEnv(home), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let stderr = '';
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no listening line: ${stderr}`)), 30_000);
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
      const url = /keel mcp: listening on (http:\/\/\S+)\n/.exec(stderr)?.[1];
      if (!url) return;
      clearTimeout(timer);
      const token = env.KEEL_MCP_TOKEN ?? /^token: (\S+)$/m.exec(stderr)?.[1] ?? '';
      resolve({ url, token, stderr: () => stderr, exited });
    });
    child.on('close', (code) => reject(new Error(`exited ${code}: ${stderr}`)));
  });
}

async function httpClient(server: HttpServer, token = server.token): Promise<Client> {
  const client = new Client({ name: 'outside-agent', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(server.url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  await client.connect(transport);
  clients.push(client);
  return client;
}

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

/** A raw POST to the server with these headers: what a client without the SDK (or an attacker) sends. */
function rawPost(url: string, headers: Record<string, string>): Promise<number> {
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
  });
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          ...headers,
        },
      },
      (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

describe('keel mcp over stdio', () => {
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
    const one = await call(client, 'session_status', { session_id: session.session_id.slice(0, 18) });
    expect(one.doc.session).toMatchObject({ id: session.session_id, summary: 'It adds one.' });
    const foreign = await call(client, 'session_status', { session_id: otherId });
    expect(foreign.isError).toBe(true);
    expect(foreign.text).toContain('no session matches');
    expect((await call(client, 'run_status')).doc.runs).toEqual([]);
    // a session is not a run
    expect((await call(client, 'run_status', { run_id: session.session_id })).isError).toBe(true);
  });
});

/**
 * A raw request with any method, path and body, or a body of `bytes` streamed in chunks (with no
 * Content-Length); its status and the JSON-RPC error message. Writing stops once the answer arrives.
 */
function rawSend(
  url: string,
  opts: { method?: string; path?: string; headers?: Record<string, string>; body?: string; bytes?: number },
): Promise<{ status: number; message: string }> {
  const target = new URL(opts.path ?? '', url);
  return new Promise((resolve, reject) => {
    let answered = false;
    const req = request(
      target,
      {
        method: opts.method ?? 'POST',
        agent: false,
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          ...(opts.bytes !== undefined ? { 'transfer-encoding': 'chunked' } : {}),
          ...opts.headers,
        },
      },
      (res) => {
        answered = true;
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d) => {
          text += d;
        });
        res.on('end', () => {
          let message = text;
          try {
            message = (JSON.parse(text) as { error?: { message?: string } }).error?.message ?? text;
          } catch {
            // not JSON: the text itself
          }
          resolve({ status: res.statusCode ?? 0, message });
        });
      },
    );
    req.on('error', (err) => {
      if (!answered) reject(err);
    });
    if (opts.bytes === undefined) return void req.end(opts.body);
    const piece = Buffer.alloc(64 * 1024, 'a');
    let sent = 0;
    const pump = () => {
      while (sent < (opts.bytes ?? 0) && !answered) {
        sent += piece.length;
        if (!req.write(piece)) return void req.once('drain', pump);
      }
      if (!answered) req.end();
    };
    pump();
  });
}

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

  it('answers a hostile client with a clear refusal: oversize, not JSON, unknown session, wrong method or path', async () => {
    const server = await httpServer(gitRepo(SOURCES), keelHome());
    const auth = { authorization: `Bearer ${server.token}` };
    // a body over 4 MiB, chunked with no length: a 413 the client can read, not a reset connection
    const big = await rawSend(server.url, { headers: auth, bytes: 5 * 1024 * 1024 });
    expect(big.status).toBe(413);
    expect(big.message).toContain('request body over');
    const notJson = await rawSend(server.url, { headers: auth, body: '{"jsonrpc":"2.0",' });
    expect(notJson).toEqual({ status: 400, message: 'the request body is not JSON' });
    const notInit = await rawSend(server.url, {
      headers: auth,
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(notInit.status).toBe(400);
    expect(notInit.message).toContain('send initialize first');
    for (const method of ['POST', 'GET', 'DELETE']) {
      const stale = await rawSend(server.url, {
        method,
        headers: { ...auth, 'mcp-session-id': '00000000-0000-4000-8000-000000000000' },
        body: method === 'POST' ? JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }) : undefined,
      });
      expect(stale.status, method).toBe(404);
      expect(stale.message).toContain('unknown MCP session');
    }
    expect((await rawSend(server.url, { method: 'GET', headers: auth })).status).toBe(405);
    expect((await rawSend(server.url, { method: 'PUT', headers: auth, body: '{}' })).status).toBe(405);
    for (const path of [
      '/',
      '/mcp/../admin',
      '/mcp%2f..',
      '/mcpx',
      '/.well-known/oauth-authorization-server',
    ]) {
      expect((await rawSend(server.url, { path, headers: auth, body: '{}' })).status, path).toBe(404);
    }
    for (const origin of [
      'null',
      'http://127.0.0.1.evil.example',
      'http://localhost@evil.example',
      'not a url',
    ]) {
      expect((await rawSend(server.url, { headers: { ...auth, origin }, body: '{}' })).status, origin).toBe(
        403,
      );
    }
    // after all of it the server still serves a real client
    const client = await httpClient(server);
    expect((await client.listTools()).tools).toHaveLength(TOOLS.length);
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
