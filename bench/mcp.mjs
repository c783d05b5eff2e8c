/**
 * keel as an MCP server: round-trip latency of a trivial tool call (memory_list on an empty store),
 * p50/p95 over N calls, with the official SDK client over stdio and over Streamable HTTP.
 * Run after `npm run build`: node bench/mcp.mjs [calls]
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const CALLS = Number(process.argv[2] ?? 200);
const WARMUP = 10;
const KEEL = new URL('../bin/keel.js', import.meta.url).pathname;
const scratch = mkdtempSync(join(tmpdir(), 'keel-bench-mcp-'));
const repo = join(scratch, 'repo');
const home = join(scratch, 'home');
execFileSync('mkdir', ['-p', repo, home]);
writeFileSync(join(repo, 'README.md'), '# bench\n');
execFileSync('git', ['init', '-q'], { cwd: repo });
const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, KEEL_HOME: home, NO_COLOR: '1' };

const pct = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

async function measure(client) {
  for (let i = 0; i < WARMUP; i++) await client.callTool({ name: 'memory_list', arguments: {} });
  const ms = [];
  for (let i = 0; i < CALLS; i++) {
    const t0 = process.hrtime.bigint();
    const r = await client.callTool({ name: 'memory_list', arguments: {} });
    ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
    if (r.isError) throw new Error(`memory_list failed: ${JSON.stringify(r.content)}`);
  }
  ms.sort((a, b) => a - b);
  return { p50: pct(ms, 50), p95: pct(ms, 95), max: ms.at(-1) };
}

async function overStdio() {
  const client = new Client({ name: 'bench', version: '1' });
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: [KEEL, 'mcp'],
      cwd: repo,
      env,
      stderr: 'ignore',
    }),
  );
  try {
    return await measure(client);
  } finally {
    await client.close();
  }
}

async function overHttp() {
  const child = spawn(process.execPath, [KEEL, 'mcp', '--http', '127.0.0.1:0'], {
    cwd: repo,
    env,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  const ready = await new Promise((resolve, reject) => {
    child.stderr.on('data', (d) => {
      stderr += d;
      const url = /listening on (\S+)\n/.exec(stderr)?.[1];
      const token = /^token: (\S+)$/m.exec(stderr)?.[1];
      if (url && token) resolve({ url, token });
    });
    child.on('close', (code) => reject(new Error(`keel mcp --http exited ${code}: ${stderr}`)));
  });
  const client = new Client({ name: 'bench', version: '1' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(ready.url), {
      requestInit: { headers: { Authorization: `Bearer ${ready.token}` } },
    }),
  );
  try {
    return await measure(client);
  } finally {
    await client.close();
    child.kill('SIGTERM');
  }
}

try {
  const rows = [
    ['stdio', await overStdio()],
    ['Streamable HTTP', await overHttp()],
  ];
  console.log(`MCP round trip, memory_list on an empty store, ${CALLS} calls after ${WARMUP} warm-up\n`);
  console.log('| transport | p50 ms | p95 ms | max ms |');
  console.log('|---|---:|---:|---:|');
  for (const [name, r] of rows)
    console.log(`| ${name} | ${r.p50.toFixed(2)} | ${r.p95.toFixed(2)} | ${r.max.toFixed(2)} |`);
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
