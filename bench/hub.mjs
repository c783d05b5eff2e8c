// The hub end to end on loopback: messages per second through a whole cycle (send → delivered on the
// recipient's SSE stream → ack → reply → the reply delivered on the sender's stream → ack), with 8
// agents in a ring, each keeping WINDOW requests in flight; latency is send start → reply in hand.
//
//   npm run build && node bench/hub.mjs
//   KEEL_BENCH_PG=postgres://…  measure PostgreSQL on that server (else a private, durable cluster
//                               is started from /usr/lib/postgresql when there is one)
//   HUB_SECONDS=10 HUB_WINDOW=16 HUB_AGENTS=8 HUB_ENGINES=sqlite,postgres
//
// The bench client (8 agents) and the hub run on the same machine and share its cores: the numbers
// are the whole loop's, client included. Writes are durable as configured: SQLite in WAL with
// synchronous=NORMAL (keel's setting: survives a killed process, not a power cut), PostgreSQL with
// fsync and synchronous_commit on (the private cluster's defaults).
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { findBinaries, startCluster } from '../test/helpers/pg-cluster.mjs';

const KEEL = fileURLToPath(new URL('../bin/keel.js', import.meta.url));
const SECONDS = Number(process.env.HUB_SECONDS ?? 10);
const WARMUP_S = 2;
const WINDOW = Number(process.env.HUB_WINDOW ?? 16);
const AGENTS = Number(process.env.HUB_AGENTS ?? 8);
const ENGINES = (process.env.HUB_ENGINES ?? 'sqlite,postgres').split(',');

const agent = new Agent({ keepAlive: true, maxSockets: 256 });

let retries = 0;

/** A request; a keep-alive socket the server closed under it is retried (every write here is idempotent). */
async function call(port, method, path, token, body) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await once(port, method, path, token, body);
    } catch (err) {
      if (attempt >= 5 || !/socket hang up|ECONNRESET/.test(err.message)) throw err;
      retries++;
    }
  }
}

function once(port, method, path, token, body) {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : JSON.stringify(body);
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path,
        method,
        agent,
        headers: {
          authorization: `Bearer ${token}`,
          ...(data ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) } : {}),
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c) => {
          text += c;
        });
        res.on('end', () => {
          if (res.statusCode >= 400) reject(new Error(`${method} ${path}: ${res.statusCode} ${text}`));
          else resolve(JSON.parse(text));
        });
      },
    );
    req.on('error', reject);
    req.end(data);
  });
}

/** An SSE connection calling onMessage for each message event. */
function stream(port, key, onMessage) {
  const req = request({
    host: '127.0.0.1',
    port,
    path: '/v1/events',
    headers: { authorization: `Bearer ${key}` },
    agent: false,
  });
  req.on('response', (res) => {
    res.setEncoding('utf8');
    let buffer = '';
    res.on('data', (chunk) => {
      buffer += chunk;
      let end = buffer.indexOf('\n\n');
      while (end !== -1) {
        const frame = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const data = /^data: ?(.*)$/m.exec(frame)?.[1];
        if (data) onMessage(JSON.parse(data));
        end = buffer.indexOf('\n\n');
      }
    });
  });
  req.on('error', () => undefined);
  req.end();
  return () => req.destroy();
}

/** A throwaway PostgreSQL cluster (test/helpers/pg-cluster.mjs) with durable defaults (fsync, synchronous_commit on). */
async function privateCluster() {
  const found = findBinaries();
  if (!found) return undefined;
  const dir = mkdtempSync(join(tmpdir(), 'keel-bench-pg-'));
  const cluster = await startCluster(found.bin, dir);
  return {
    url: cluster.url,
    stop: async () => {
      await cluster.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function startHub(env) {
  const child = spawn(
    process.execPath,
    [
      ...(process.env.HUB_NODE_ARGS ?? '').split(' ').filter(Boolean),
      KEEL,
      'hub',
      'start',
      '--listen',
      '127.0.0.1:0',
      '--json',
    ],
    {
      env: {
        PATH: process.env.PATH,
        ...env,
        KEEL_HUB_RATE_PER_S: '10000000',
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const first = await new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      if (out.includes('\n')) resolve(JSON.parse(out.split('\n')[0]));
    });
    child.once('exit', (code) => reject(new Error(`keel hub start exited ${code}`)));
  });
  return { ...first, child };
}

/** User + system CPU of a process so far, in ms (Linux /proc). */
function cpuMs(pid) {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return Number.NaN;
  }
}

function percentile(sorted, p) {
  return sorted.length
    ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]
    : Number.NaN;
}

async function measure(engine) {
  const home = mkdtempSync(join(tmpdir(), 'keel-bench-hub-'));
  let cluster;
  const env = { HOME: home, KEEL_HOME: home };
  if (engine === 'postgres') {
    if (!process.env.KEEL_BENCH_PG) cluster = await privateCluster();
    const url = process.env.KEEL_BENCH_PG ?? cluster?.url;
    if (!url) return { engine, skipped: 'no PostgreSQL (set KEEL_BENCH_PG)' };
    env.KEEL_STORE = url;
  }
  const hub = await startHub({ ...env, KEEL_HUB_ADMIN_TOKEN: 'bench-admin-token' });
  const { port } = hub;
  const { token } = await call(port, 'POST', '/v1/projects/bench/tokens', 'bench-admin-token');
  const keys = [];
  for (let i = 0; i < AGENTS; i++)
    keys.push((await call(port, 'POST', '/v1/agents', token, { name: `agent-${i}` })).agent_key);

  const started = new Map(); // request id → send start (ms)
  const latencies = [];
  let completed = 0;
  let measuring = false;
  let running = true;
  let seq = 0;
  const errors = [];

  const sendOne = async (i) => {
    if (!running) return;
    const t0 = performance.now();
    const to = `agent-${(i + 1) % AGENTS}`;
    try {
      const sent = await call(port, 'POST', '/v1/messages', keys[i], {
        to,
        body: `job ${seq}`,
        idempotency_key: `k${seq++}`,
      });
      started.set(sent.message.id, t0);
    } catch (err) {
      running && errors.push(err.message);
    }
  };
  const closers = keys.map((key, i) =>
    stream(port, key, (m) => {
      if (m.reply_to === null) {
        // a request: ack it, then answer
        call(port, 'POST', `/v1/messages/${m.id}/ack`, key)
          .then(() => call(port, 'POST', `/v1/messages/${m.id}/reply`, key, { body: `done: ${m.body}` }))
          .catch((err) => running && errors.push(err.message));
        return;
      }
      // a reply to one of ours: ack it, count the cycle, send the next
      call(port, 'POST', `/v1/messages/${m.id}/ack`, key)
        .then(() => {
          const t0 = started.get(m.reply_to);
          if (t0 === undefined) return;
          started.delete(m.reply_to);
          if (measuring) {
            latencies.push(performance.now() - t0);
            completed++;
          }
          return sendOne(i);
        })
        .catch((err) => running && errors.push(err.message));
    }),
  );
  await new Promise((r) => setTimeout(r, 300));
  for (let i = 0; i < AGENTS; i++) for (let w = 0; w < WINDOW; w++) void sendOne(i);
  await new Promise((r) => setTimeout(r, WARMUP_S * 1000));
  measuring = true;
  const cpu0 = cpuMs(hub.child.pid);
  const t = performance.now();
  await new Promise((r) => setTimeout(r, SECONDS * 1000));
  measuring = false;
  const elapsed = (performance.now() - t) / 1000;
  const hubCpuMs = cpuMs(hub.child.pid) - cpu0;
  running = false;
  const metrics = await new Promise((resolve) => {
    request(
      { host: '127.0.0.1', port, path: '/metrics', headers: { authorization: 'Bearer bench-admin-token' } },
      (res) => {
        let text = '';
        res.on('data', (c) => {
          text += c;
        });
        res.on('end', () => resolve(text));
      },
    ).end();
  });
  for (const close of closers) close();
  const hubGone = new Promise((r) => hub.child.once('exit', r));
  hub.child.kill('SIGTERM');
  await hubGone;
  await cluster?.stop();
  rmSync(home, { recursive: true, force: true });
  latencies.sort((a, b) => a - b);
  const commits = Number(/keel_hub_commits_total (\d+)/.exec(metrics)?.[1]);
  const ops = Number(/keel_hub_committed_ops_total (\d+)/.exec(metrics)?.[1]);
  return {
    engine,
    cycles_per_s: Math.round(completed / elapsed),
    // each cycle is two messages (the request and its reply)
    messages_per_s: Math.round((2 * completed) / elapsed),
    p50_ms: Number(percentile(latencies, 50).toFixed(2)),
    p99_ms: Number(percentile(latencies, 99).toFixed(2)),
    ops_per_commit: Number((ops / commits).toFixed(1)),
    // the hub process's own CPU per cycle: what the numbers would scale by on an unshared core
    hub_cpu_ms_per_cycle: completed ? Number((hubCpuMs / completed).toFixed(3)) : null,
    errors: errors.length,
    retried: retries,
    ...(errors.length ? { first_error: errors[0] } : {}),
  };
}

const results = [];
for (const engine of ENGINES) {
  results.push(await measure(engine));
  console.error(JSON.stringify(results.at(-1)));
}
agent.destroy();
console.log(
  `hub: ${AGENTS} agents, ${WINDOW} requests in flight each, ${SECONDS} s after ${WARMUP_S} s warm-up, ${cpus().length} cores (${cpus()[0]?.model ?? '?'})`,
);
console.log(
  `load average at the end: ${loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}`,
);
console.log(
  '| engine | cycles/s (send→deliver→ack→reply→deliver→ack) | messages/s | p50 ms | p99 ms | writes per commit | hub CPU ms per cycle | errors |',
);
console.log('|---|---|---|---|---|---|---|---|');
for (const r of results)
  console.log(
    r.skipped
      ? `| ${r.engine} | skipped: ${r.skipped} | | | | | | |`
      : `| ${r.engine} | ${r.cycles_per_s} | ${r.messages_per_s} | ${r.p50_ms} | ${r.p99_ms} | ${r.ops_per_commit} | ${r.hub_cpu_ms_per_cycle} | ${r.errors} |`,
  );
console.log(JSON.stringify(results));
