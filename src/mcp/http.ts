/**
 * MCP over Streamable HTTP on node:http. Every request must carry the bearer token (compared in
 * constant time) and name this server, by a loopback name and its own port, in Host (and Origin, when
 * a browser sends one), so neither a web page that rebinds its name to 127.0.0.1 nor a page served on
 * another local port can reach the server. Each client gets its own MCP session.
 */
import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { isIP } from 'node:net';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';

const MAX_BODY = 4 * 1024 * 1024;
/** How long a refused oversize body is still read and dropped, so the client can read the 413. */
const LINGER_MS = 5_000;
const MAX_SESSIONS = 100;
const LOOPBACK_NAMES = ['localhost', '127.0.0.1', '::1'];

export interface ListenAddress {
  host: string;
  port: number;
}

/** `127.0.0.1:8080`, `[::1]:0`, `localhost:0`; undefined when it is not an address. */
export function parseListen(value: string): ListenAddress | undefined {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]\s]*)):(\d{1,5})$/.exec(value.trim());
  if (!m) return undefined;
  const host = m[1] ?? (m[2] || '127.0.0.1');
  const port = Number(m[3]);
  if (port > 65_535) return undefined;
  if (m[1] !== undefined && isIP(host) !== 6) return undefined;
  if (m[2] !== undefined && host !== 'localhost' && !isIP(host)) return undefined;
  return { host, port };
}

/** Whether an address only this machine can reach: 127.0.0.0/8, ::1, localhost. */
export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || (isIP(host) === 4 && host.startsWith('127.'));
}

/**
 * `name:port` of an http origin (`http://127.0.0.1:8765`, `http://[::1]:9`, `http://localhost`: port
 * 80), lower-cased; undefined when it is not one (another scheme, credentials, a path, not a URL).
 */
function endpoint(origin: string): string | undefined {
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return undefined;
  }
  if (
    url.protocol !== 'http:' ||
    url.username ||
    url.password ||
    url.pathname !== '/' ||
    url.search ||
    url.hash
  )
    return undefined;
  return `${url.hostname.replace(/^\[|\]$/g, '').toLowerCase()}:${url.port || '80'}`;
}

function sameToken(given: string, expected: string): boolean {
  // digests of equal length: the comparison takes the same time whatever the client sent
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}

function refuse(
  res: ServerResponse,
  status: number,
  message: string,
  headers: Record<string, string> = {},
): void {
  if (res.headersSent) return;
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32_000, message }, id: null }));
}

/**
 * The body as text, or undefined once it passes MAX_BODY. An oversize body is not destroyed mid-read:
 * the client would see a reset instead of the 413. Its rest is read and dropped while the refusal goes
 * out, for at most LINGER_MS.
 */
function readBody(req: IncomingMessage): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    let size = 0;
    let chunks: Buffer[] | undefined = [];
    req.on('data', (chunk: Buffer) => {
      if (!chunks) return;
      size += chunk.length;
      if (size > MAX_BODY) {
        chunks = undefined;
        resolve(undefined);
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => {
      if (chunks) resolve(Buffer.concat(chunks).toString('utf8'));
    });
    req.on('error', reject);
  });
}

export interface HttpServing {
  url: string;
  close(): Promise<void>;
}

/** Serve MCP at http://HOST:PORT/mcp; `newServer` makes the McpServer for each new client session. */
export async function serveHttp(
  address: ListenAddress,
  token: string,
  newServer: () => McpServer,
): Promise<HttpServing> {
  // names a request may use for this server: loopback ones, and the bound address itself when it is a
  // specific one (a wildcard bind is reached by names keel cannot know: loopback ones only)
  const names = new Set(LOOPBACK_NAMES);
  if (!['0.0.0.0', '::'].includes(address.host)) names.add(address.host.toLowerCase());
  // each name on the port the server listens on (known once it does: port 0 picks one)
  let allowed = new Set<string>();
  const sessions = new Map<string, { transport: StreamableHTTPServerTransport; server: McpServer }>();

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://keel.invalid');
    if (url.pathname !== '/mcp') return refuse(res, 404, 'not found: keel serves MCP at /mcp');
    if (!allowed.has(endpoint(`http://${req.headers.host ?? ''}`) ?? ''))
      return refuse(res, 403, 'forbidden: the Host header does not name this server and its port');
    const origin = req.headers.origin;
    if (origin !== undefined && !allowed.has(endpoint(origin) ?? ''))
      return refuse(res, 403, 'forbidden: the Origin is not this server (its name and port)');
    const auth = req.headers.authorization ?? '';
    const given = /^Bearer\s+(\S+)\s*$/i.exec(auth)?.[1];
    if (given === undefined || !sameToken(given, token))
      return refuse(res, 401, 'unauthorized: a valid bearer token is required', {
        'www-authenticate': 'Bearer realm="keel"',
      });

    const sessionId = req.headers['mcp-session-id'];
    if (typeof sessionId === 'string') {
      const known = sessions.get(sessionId);
      if (!known) return refuse(res, 404, 'unknown MCP session (it ended, or the server restarted)');
      if (req.method !== 'POST') return known.transport.handleRequest(req, res);
    }
    if (req.method !== 'POST') return refuse(res, 405, 'method not allowed without an MCP session');
    const text = await readBody(req);
    if (text === undefined) {
      // a lingering close: the rest is still read and dropped after the answer, so a client busy writing
      // reads the 413 instead of a reset; one that keeps sending past the grace is cut off
      const cut = setTimeout(() => req.socket.destroy(), LINGER_MS);
      cut.unref();
      req.once('end', () => clearTimeout(cut));
      return refuse(res, 413, `request body over ${MAX_BODY} bytes`);
    }
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      return refuse(res, 400, 'the request body is not JSON');
    }
    if (typeof sessionId === 'string') {
      const known = sessions.get(sessionId);
      if (!known) return refuse(res, 404, 'unknown MCP session (it ended, or the server restarted)');
      return known.transport.handleRequest(req, res, body);
    }
    if (!isInitializeRequest(body)) return refuse(res, 400, 'no MCP session: send initialize first');
    if (sessions.size >= MAX_SESSIONS) return refuse(res, 503, `too many MCP sessions (${MAX_SESSIONS})`);
    const server = newServer();
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: randomUUID,
      onsessioninitialized: (id) => {
        sessions.set(id, { transport, server });
      },
    });
    transport.onclose = () => {
      if (transport.sessionId) sessions.delete(transport.sessionId);
    };
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
  };

  const http = createServer((req, res) => {
    handle(req, res).catch((err: Error) => refuse(res, 500, `internal error: ${err.message}`));
  });
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(address.port, address.host, () => {
      http.off('error', reject);
      resolve();
    });
  });
  const bound = http.address();
  const port = typeof bound === 'object' && bound ? bound.port : address.port;
  allowed = new Set([...names].map((name) => `${name}:${port}`));
  const shown = address.host.includes(':') ? `[${address.host}]` : address.host;
  return {
    url: `http://${shown}:${port}/mcp`,
    close: async () => {
      for (const { server } of sessions.values()) await server.close().catch(() => undefined);
      sessions.clear();
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}
