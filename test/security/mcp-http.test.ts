/**
 * `keel mcp --http` meets a client that is not an MCP client: a body that never ends, one that is not
 * JSON, a session id it never issued, the wrong method or path, an origin that only looks local. Each
 * gets a refusal it can read (never a reset connection, never a 500), and a real client is still
 * served afterwards. Requests go raw over node:http through the real binary.
 */
import { describe, expect, it } from 'vitest';
import { keelHome } from '../e2e/harness.js';
import { httpClient, httpServer, SOURCES, TOOLS } from '../e2e/mcp-harness.js';
import { type RawOptions, rawRequest } from '../helpers/raw-http.js';
import { gitRepo } from '../helpers/tmp.js';

/** A raw request to the MCP endpoint (POST unless told); its status and the JSON-RPC error message. */
async function rawSend(
  url: string,
  opts: RawOptions & { path?: string; bytes?: number },
): Promise<{ status: number; message: string }> {
  const { port, pathname } = new URL(url);
  const { path, bytes, ...rest } = opts;
  const res = await rawRequest(Number(port), path ?? pathname, {
    method: 'POST',
    ...rest,
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...opts.headers,
    },
    ...(bytes !== undefined ? { stream: { bytes } } : {}),
  });
  let message = res.text;
  try {
    message = (JSON.parse(res.text) as { error?: { message?: string } }).error?.message ?? res.text;
  } catch {
    // not JSON: the text itself
  }
  return { status: res.status, message };
}

describe('keel mcp --http under attack', () => {
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
    // another port of this machine is another origin: a page served there (any local dev server) is not us
    const port = Number(new URL(server.url).port);
    for (const origin of [
      'null',
      'http://127.0.0.1.evil.example',
      'http://localhost@evil.example',
      'not a url',
      `http://127.0.0.1:${port + 1}`,
      `http://localhost:${port - 1}`,
      `http://[::1]:${port + 1}`,
      'http://127.0.0.1',
      `https://127.0.0.1:${port}`,
      `http://127.0.0.1:${port}.evil.example`,
    ]) {
      expect((await rawSend(server.url, { headers: { ...auth, origin }, body: '{}' })).status, origin).toBe(
        403,
      );
    }
    for (const host of [`127.0.0.1:${port + 1}`, 'localhost', `localhost:${port}0`]) {
      expect((await rawSend(server.url, { headers: { ...auth, host }, body: '{}' })).status, host).toBe(403);
    }
    // this server's own origin and host, by any of its loopback names, get past the check (to the 400 of '{}')
    for (const name of ['127.0.0.1', 'localhost', '[::1]']) {
      const origin = `http://${name}:${port}`;
      const res = await rawSend(server.url, {
        headers: { ...auth, origin, host: `${name}:${port}` },
        body: '{}',
      });
      expect(res.status, origin).toBe(400);
    }
    // after all of it the server still serves a real client
    const client = await httpClient(server);
    expect((await client.listTools()).tools).toHaveLength(TOOLS.length);
  });
});
