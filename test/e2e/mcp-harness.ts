/**
 * `keel mcp` as an outside agent starts it: the official SDK's Client over stdio, or `keel mcp --http
 * 127.0.0.1:0` once it says where it listens. Clients and servers are closed after each test.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterEach } from 'vitest';
import { baseEnv, KEEL_BIN } from './harness.js';

export const SOURCES = {
  'src/util.ts': 'export function helper(n: number): number {\n  return n + 1;\n}\n',
  'src/app.ts':
    "import { helper } from './util.js';\nexport class App {\n  run(): number {\n    return helper(1);\n  }\n}\n",
};
export const TOOLS = [
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

export async function stdioClient(cwd: string, home: string): Promise<Client> {
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

export interface HttpServer {
  url: string;
  token: string;
  stderr: () => string;
  exited: Promise<number | null>;
}

/** `keel mcp --http 127.0.0.1:0`, once it says where it listens. */
export function httpServer(cwd: string, home: string, env: Record<string, string> = {}): Promise<HttpServer> {
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

export async function httpClient(server: HttpServer, token = server.token): Promise<Client> {
  const client = new Client({ name: 'outside-agent', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(server.url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  await client.connect(transport);
  clients.push(client);
  return client;
}
