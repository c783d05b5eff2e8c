// The hub end to end on loopback, per engine:
// - cycles: messages per second through a whole cycle (send → delivered on the recipient's SSE stream
//   → ack → reply → the reply delivered on the sender's stream → ack), with 8 agents in a ring, each
//   keeping WINDOW requests in flight (saturated), then 1 in flight each (light); latency is send start
//   → reply in hand. Then the same messages as a folded cycle (the reply acks its request, the replies
//   of one stream read are acked in one POST /v1/acks), when the hub has that route.
// - fan-out: FANOUT agents on open SSE streams; one agent sends one message to each, all at once, round
//   after round; latency is send start → the event on the recipient's stream (and send answered → event).
// - webhook: a signed Standard Webhooks delivery to a workflow whose first stage is an agent stage, one
//   after another; latency is POST start → the stage's request on that agent's stream.
//
//   npm run build && node bench/hub.mjs
//   KEEL_BENCH_PG=postgres://…  measure PostgreSQL on that server (else a private, durable cluster
//                               is started from /usr/lib/postgresql when there is one)
//   HUB_SECONDS=10 HUB_WINDOW=16 HUB_AGENTS=8 HUB_ENGINES=sqlite,postgres HUB_FANOUT=100
//   HUB_FANOUT_ROUNDS=20 HUB_WEBHOOKS=200 KEEL_BIN=/other/build/bin/keel.js (an older build)
//   HUB_PROCESSES=2             that many `keel hub start` processes on one store (PostgreSQL only: on
//                               SQLite another process's write wakes a stream only at its 5 s poll), agent
//                               i on hub i mod N for its stream and every request, so in the ring each
//                               message is written by one process and woken on the other's stream by
//                               LISTEN/NOTIFY; the fan-out's recipients spread the same way (the sender on
//                               hub 0), and the webhook's agent listens on the last hub
//
// The bench client (8 agents) and the hub run on the same machine and share its cores: the numbers
// are the whole loop's, client included. Writes are durable as configured: SQLite in WAL with
// synchronous=NORMAL (keel's setting: survives a killed process, not a power cut), PostgreSQL with
// fsync and synchronous_commit on (the private cluster's defaults).
import { execFileSync, spawn } from 'node:child_process';
import { createHmac, randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { findBinaries, startCluster } from '../test/helpers/pg-cluster.mjs';

const KEEL = process.env.KEEL_BIN ?? fileURLToPath(new URL('../bin/keel.js', import.meta.url));
const SECONDS = Number(process.env.HUB_SECONDS ?? 10);
const WARMUP_S = 2;
const WINDOW = Number(process.env.HUB_WINDOW ?? 16);
const AGENTS = Number(process.env.HUB_AGENTS ?? 8);
const ENGINES = (process.env.HUB_ENGINES ?? 'sqlite,postgres').split(',');
const LIGHT_S = Number(process.env.HUB_LIGHT_SECONDS ?? 5);
const FANOUT = Number(process.env.HUB_FANOUT ?? 100);
const FANOUT_ROUNDS = Number(process.env.HUB_FANOUT_ROUNDS ?? 20);
const WEBHOOKS = Number(process.env.HUB_WEBHOOKS ?? 200);
const PROCESSES = Number(process.env.HUB_PROCESSES ?? 1);
// the workflow the webhook rows start: its first stage asks one agent
const WEBHOOK_SECRET = `whsec_${randomBytes(24).toString('base64')}`;
const WORKFLOW = `version: 1
trigger: {source: generic, event: bench.job, secret_env: KEEL_WH_BENCH}
stages:
  - {id: work, kind: agent, agent: worker, mode: ask, prompt: "job {{n}}"}
`;

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
          // a POST without a body says so, as fetch() does (Node's client would send it chunked)
          ...(data
            ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) }
            : method === 'POST'
              ? { 'content-length': 0 }
              : {}),
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

/**
 * An SSE connection calling onMessage for each message event (and onOpen once its response came);
 * onChunk, when given, gets the messages of one read together instead (to ack them in one request).
 */
function stream(port, key, onMessage, onOpen = () => undefined, onChunk = undefined) {
  const req = request({
    host: '127.0.0.1',
    port,
    path: '/v1/events',
    headers: { authorization: `Bearer ${key}` },
    agent: false,
  });
  req.on('response', (res) => {
    onOpen();
    res.setEncoding('utf8');
    let buffer = '';
    res.on('data', (chunk) => {
      buffer += chunk;
      const batch = [];
      let end = buffer.indexOf('\n\n');
      while (end !== -1) {
        const frame = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const data = /^data: ?(.*)$/m.exec(frame)?.[1];
        if (data) batch.push(JSON.parse(data));
        end = buffer.indexOf('\n\n');
      }
      if (onChunk) {
        if (batch.length) onChunk(batch);
      } else for (const m of batch) onMessage(m);
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
    // the postmaster's pid heads its pid file (as root it runs as postgres under runuser)
    pid: () => Number(readFileSync(join(dir, 'data', 'postmaster.pid'), 'utf8').split('\n')[0]),
    stop: async () => {
      await cluster.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function startHub(env, args = []) {
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
      ...args,
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

/**
 * The kernel's TCP counters that would show connections waiting on the network stack rather than on the
 * hub: SYNs retransmitted (a connect waits 1 s, then 2 s more), accept-queue overflows and drops, and
 * segments retransmitted (Linux /proc/net; the whole machine's, other sessions' included).
 */
function tcpCounters() {
  const out = {};
  for (const file of ['/proc/net/netstat', '/proc/net/snmp']) {
    let lines;
    try {
      lines = readFileSync(file, 'utf8').trim().split('\n');
    } catch {
      return {};
    }
    for (let i = 0; i + 1 < lines.length; i += 2) {
      const names = lines[i].split(/\s+/);
      const values = lines[i + 1].split(/\s+/);
      const prefix = names[0];
      names.forEach((n, j) => {
        if (j > 0) out[`${prefix}${n}`] = Number(values[j]);
      });
    }
  }
  return {
    syn_retransmits: out['TcpExt:TCPSynRetrans'],
    listen_overflows: out['TcpExt:ListenOverflows'],
    listen_drops: out['TcpExt:ListenDrops'],
    segments_retransmitted: out['Tcp:RetransSegs'],
    connections_opened: out['Tcp:ActiveOpens'],
  };
}

function counterDelta(a, b) {
  return Object.fromEntries(Object.keys(b).map((k) => [k, b[k] - (a[k] ?? 0)]));
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

/**
 * The PostgreSQL server's CPU so far, in ms: the postmaster and its children (backends, writers),
 * plus what its children that already ended used (cutime/cstime once reaped). Linux /proc.
 */
function serverCpuMs(postmaster) {
  if (!postmaster) return Number.NaN;
  let total = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let fields;
    try {
      fields = readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1].split(' ');
    } catch {
      continue;
    }
    const pid = Number(entry);
    if (pid !== postmaster && Number(fields[1]) !== postmaster) continue;
    total += Number(fields[11]) + Number(fields[12]);
    if (pid === postmaster) total += Number(fields[13]) + Number(fields[14]);
  }
  return (total * 1000) / 100;
}

/**
 * PostgreSQL's deadlocks and rolled-back transactions in the database at `url` so far (a group commit
 * that deadlocks with another process's is rolled back and retried). A backend reports its counts
 * when it goes idle or exits, so read this after the hubs stopped for a whole run's.
 */
async function pgConflicts(url) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query(
      'SELECT deadlocks, xact_rollback FROM pg_stat_database WHERE datname = current_database()',
    );
    return { deadlocks: Number(rows[0].deadlocks), rollbacks: Number(rows[0].xact_rollback) };
  } finally {
    await client.end();
  }
}

function percentile(sorted, p) {
  return sorted.length
    ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]
    : Number.NaN;
}

function latencyStats(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return {
    n: sorted.length,
    p50_ms: Number(percentile(sorted, 50).toFixed(2)),
    p99_ms: Number(percentile(sorted, 99).toFixed(2)),
  };
}

/**
 * Send → deliver → ack → reply → deliver → ack cycles in a ring of agents, `window` requests in flight
 * per agent, for `seconds` after a warm-up. `folded`: the same messages with fewer requests, as the
 * contract allows: the reply acks the request it answers (no ack before it), and the replies one
 * stream read brings are acked together (`POST /v1/acks`): send → deliver → reply → deliver → acks.
 */
async function cycles(hubs, keys, { window, seconds, warmupS, folded = false, db }) {
  // agent i's stream and every request of its own go to hub i mod N
  const portOf = (i) => hubs[i % hubs.length].port;
  const agents = keys.length;
  const started = new Map(); // request id → send start (ms)
  const latencies = [];
  let completed = 0;
  let measuring = false;
  let running = true;
  const errors = [];
  const tag = randomBytes(4).toString('hex');
  let seq = 0;

  const sendOne = async (i) => {
    if (!running) return;
    const t0 = performance.now();
    const n = seq++;
    try {
      const sent = await call(portOf(i), 'POST', '/v1/messages', keys[i], {
        to: `agent-${(i + 1) % agents}`,
        body: `job ${n}`,
        idempotency_key: `${tag}-${n}`,
      });
      started.set(sent.message.id, t0);
    } catch (err) {
      running && errors.push(err.message);
    }
  };
  const finish = (i, m) => {
    const t0 = started.get(m.reply_to);
    if (t0 === undefined) return;
    started.delete(m.reply_to);
    if (measuring) {
      latencies.push(performance.now() - t0);
      completed++;
    }
    return sendOne(i);
  };
  const onChunk = (key, i) => (batch) => {
    const port = portOf(i);
    const replies = [];
    for (const m of batch) {
      if (m.reply_to === null)
        // a request: answered at once; the reply acks it
        call(port, 'POST', `/v1/messages/${m.id}/reply`, key, { body: `done: ${m.body}` }).catch(
          (err) => running && errors.push(err.message),
        );
      else replies.push(m);
    }
    if (!replies.length) return;
    call(port, 'POST', '/v1/acks', key, { ids: replies.map((m) => m.id) })
      .then(() => {
        for (const m of replies) void finish(i, m);
      })
      .catch((err) => running && errors.push(err.message));
  };
  const closers = keys.map((key, i) => {
    const port = portOf(i);
    return stream(
      port,
      key,
      (m) => {
        if (m.reply_to === null) {
          // a request: ack it, then answer
          call(port, 'POST', `/v1/messages/${m.id}/ack`, key)
            .then(() => call(port, 'POST', `/v1/messages/${m.id}/reply`, key, { body: `done: ${m.body}` }))
            .catch((err) => running && errors.push(err.message));
          return;
        }
        // a reply to one of ours: ack it, count the cycle, send the next
        call(port, 'POST', `/v1/messages/${m.id}/ack`, key)
          .then(() => finish(i, m))
          .catch((err) => running && errors.push(err.message));
      },
      undefined,
      folded ? onChunk(key, i) : undefined,
    );
  });
  await new Promise((r) => setTimeout(r, 300));
  for (let i = 0; i < agents; i++) for (let w = 0; w < window; w++) void sendOne(i);
  await new Promise((r) => setTimeout(r, warmupS * 1000));
  measuring = true;
  const tcp0 = tcpCounters();
  const cpu0 = hubs.map((h) => cpuMs(h.child.pid));
  const db0 = serverCpuMs(db?.());
  const own0 = process.cpuUsage();
  const t = performance.now();
  await new Promise((r) => setTimeout(r, seconds * 1000));
  measuring = false;
  const elapsed = (performance.now() - t) / 1000;
  const hubCpus = hubs.map((h, j) => cpuMs(h.child.pid) - cpu0[j]);
  const hubCpuMs = hubCpus.reduce((a, b) => a + b, 0);
  const dbCpuMs = serverCpuMs(db?.()) - db0;
  const own = process.cpuUsage(own0);
  const tcp = counterDelta(tcp0, tcpCounters());
  running = false;
  for (const close of closers) close();
  // let the cycles in flight settle before the next phase
  await new Promise((r) => setTimeout(r, 500));
  return {
    cycles_per_s: Math.round(completed / elapsed),
    // each cycle is two messages (the request and its reply)
    messages_per_s: Math.round((2 * completed) / elapsed),
    ...latencyStats(latencies),
    // the hub processes' own CPU per cycle, summed: what the numbers would scale by on an unshared core
    hub_cpu_ms_per_cycle: completed ? Number((hubCpuMs / completed).toFixed(3)) : null,
    // each hub process's share, when there are several
    ...(hubs.length > 1
      ? {
          hub_cpu_ms_per_cycle_each: hubCpus.map((c) =>
            completed ? Number((c / completed).toFixed(3)) : null,
          ),
        }
      : {}),
    // the PostgreSQL server's (its backends, WAL writer, checkpointer), when the bench started it
    db_cpu_ms_per_cycle:
      completed && Number.isFinite(dbCpuMs) ? Number((dbCpuMs / completed).toFixed(3)) : null,
    // the bench client's (8 agents in this process), on the same two cores
    client_cpu_ms_per_cycle: completed
      ? Number(((own.user + own.system) / 1000 / completed).toFixed(3))
      : null,
    errors: errors.length,
    ...(errors.length ? { first_error: errors[0] } : {}),
    // over the measured window, the whole machine's
    tcp,
  };
}

/** One sender, FANOUT recipients on open streams: each round sends one message to every one of them at once. */
async function fanout(hubs, token) {
  // the sender on hub 0; recipient i's stream on hub i mod N
  const { port } = hubs[0];
  const sender = (await call(port, 'POST', '/v1/agents', token, { name: 'fan-sender' })).agent_key;
  const keys = [];
  for (let i = 0; i < FANOUT; i++)
    keys.push((await call(port, 'POST', '/v1/agents', token, { name: `fan-${i}` })).agent_key);
  const sentAt = new Map(); // idempotency key → { t0, answered }
  const fromSend = [];
  const fromAnswer = [];
  let waiting = 0;
  let roundDone;
  let opened = 0;
  let allOpen;
  const open = new Promise((r) => {
    allOpen = r;
  });
  const closers = keys.map((key, i) =>
    stream(
      hubs[i % hubs.length].port,
      key,
      (m) => {
        const at = performance.now();
        const sent = sentAt.get(m.idempotency_key);
        if (!sent || sent.seen) return;
        sent.seen = at;
        void call(hubs[i % hubs.length].port, 'POST', `/v1/messages/${m.id}/ack`, key).catch(() => undefined);
        if (--waiting === 0) roundDone();
      },
      () => {
        if (++opened === FANOUT) allOpen();
      },
    ),
  );
  await open;
  // the streams read their (empty) backlog once connected
  await new Promise((r) => setTimeout(r, 300));
  const tag = randomBytes(4).toString('hex');
  for (let round = 0; round < FANOUT_ROUNDS; round++) {
    waiting = FANOUT;
    const done = new Promise((r) => {
      roundDone = r;
    });
    const sends = keys.map(async (_, i) => {
      const key = `${tag}-${round}-${i}`;
      const entry = { t0: performance.now() };
      sentAt.set(key, entry);
      await call(port, 'POST', '/v1/messages', sender, {
        to: `fan-${i}`,
        body: `fan ${round}`,
        idempotency_key: key,
      });
      entry.answered = performance.now();
    });
    await Promise.all(sends);
    await Promise.race([done, new Promise((r) => setTimeout(r, 30_000))]);
    if (round > 0)
      // round 0 is the warm-up
      for (let i = 0; i < FANOUT; i++) {
        const e = sentAt.get(`${tag}-${round}-${i}`);
        if (e?.seen === undefined) continue;
        fromSend.push(e.seen - e.t0);
        fromAnswer.push(e.seen - e.answered);
      }
  }
  for (const close of closers) close();
  const a = latencyStats(fromSend);
  const b = latencyStats(fromAnswer);
  return {
    fanout_agents: FANOUT,
    fanout_rounds: FANOUT_ROUNDS - 1,
    fanout_n: a.n,
    fanout_missed: (FANOUT_ROUNDS - 1) * FANOUT - a.n,
    send_to_event_p50_ms: a.p50_ms,
    send_to_event_p99_ms: a.p99_ms,
    // negative: the event came before the send's answer (the stream is woken at commit, the answer goes out after)
    answer_to_event_p50_ms: b.p50_ms,
    answer_to_event_p99_ms: b.p99_ms,
  };
}

/** Signed generic deliveries, one after another; each run's first stage asks `worker`. */
async function webhooks(hubs, token) {
  // posted to hub 0; the stage's agent listens on the last hub (hub 0 when there is one)
  const { port } = hubs[0];
  const own = hubs.at(-1).port;
  const key = (await call(port, 'POST', '/v1/agents', token, { name: 'worker' })).agent_key;
  const waiting = new Map(); // run id → resolve
  const early = new Map(); // run id → when its event came before the receipt
  let opened;
  const open = new Promise((r) => {
    opened = r;
  });
  const close = stream(
    own,
    key,
    (m) => {
      const at = performance.now();
      void call(own, 'POST', `/v1/messages/${m.id}/ack`, key).catch(() => undefined);
      let run;
      try {
        run = JSON.parse(m.body).workflow_run;
      } catch {
        return;
      }
      const resolve = waiting.get(run);
      if (resolve) resolve(at);
      else early.set(run, at);
    },
    () => opened(),
  );
  await open;
  await new Promise((r) => setTimeout(r, 300));
  const secret = Buffer.from(WEBHOOK_SECRET.slice('whsec_'.length), 'base64');
  const toStage = [];
  const toReceipt = [];
  let errors = 0;
  let firstError;
  for (let i = 0; i < WEBHOOKS + 10; i++) {
    const body = JSON.stringify({ type: 'bench.job', n: i });
    const id = `msg_${randomBytes(8).toString('hex')}`;
    const ts = Math.floor(Date.now() / 1000);
    const signature = `v1,${createHmac('sha256', secret).update(`${id}.${ts}.${body}`).digest('base64')}`;
    const t0 = performance.now();
    let receipt;
    try {
      receipt = await post(port, '/v1/webhooks/bench', body, {
        'webhook-id': id,
        'webhook-timestamp': String(ts),
        'webhook-signature': signature,
      });
    } catch (err) {
      errors++;
      firstError ??= err.message;
      continue;
    }
    const t1 = performance.now();
    const run = receipt.run_id;
    const at =
      early.get(run) ??
      (await Promise.race([
        new Promise((r) => waiting.set(run, r)),
        new Promise((r) => setTimeout(() => r(undefined), 10_000)),
      ]));
    waiting.delete(run);
    if (at === undefined) {
      errors++;
      firstError ??= `run ${run}: no stage request on the stream within 10 s`;
      continue;
    }
    // the first 10 are the warm-up
    if (i >= 10) {
      toStage.push(at - t0);
      toReceipt.push(t1 - t0);
    }
  }
  close();
  const a = latencyStats(toStage);
  const b = latencyStats(toReceipt);
  return {
    webhooks: a.n,
    webhook_to_stage_p50_ms: a.p50_ms,
    webhook_to_stage_p99_ms: a.p99_ms,
    webhook_receipt_p50_ms: b.p50_ms,
    webhook_receipt_p99_ms: b.p99_ms,
    webhook_errors: errors,
    ...(firstError ? { webhook_first_error: firstError } : {}),
  };
}

/** POST a raw body with extra headers; the JSON answer, or an error past 2xx. */
function post(port, path, body, headers) {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: 'POST',
        agent,
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
          ...headers,
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c) => {
          text += c;
        });
        res.on('end', () => {
          if (res.statusCode >= 300) reject(new Error(`POST ${path}: ${res.statusCode} ${text}`));
          else resolve(JSON.parse(text));
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

async function measure(engine) {
  const home = mkdtempSync(join(tmpdir(), 'keel-bench-hub-'));
  let cluster;
  const env = { HOME: home, KEEL_HOME: home };
  if (engine !== 'postgres' && PROCESSES > 1) {
    rmSync(home, { recursive: true, force: true });
    // the store's hint is an in-process event on SQLite (engine.ts); app.ts re-reads every 5 s
    return {
      engine,
      skipped: `${PROCESSES} hub processes: on SQLite a write in one process wakes a stream in another only at that stream's 5 s poll`,
    };
  }
  if (engine === 'postgres') {
    if (!process.env.KEEL_BENCH_PG) cluster = await privateCluster();
    const url = process.env.KEEL_BENCH_PG ?? cluster?.url;
    if (!url) return { engine, skipped: 'no PostgreSQL (set KEEL_BENCH_PG)' };
    env.KEEL_STORE = url;
  }
  // a project folder with the webhook's workflow, trusted as `keel trust` does
  const project = join(home, 'project');
  mkdirSync(join(project, '.keel', 'workflows'), { recursive: true });
  writeFileSync(join(project, '.keel', 'workflows', 'bench.yaml'), WORKFLOW);
  execFileSync(process.execPath, [KEEL, 'trust', '-C', project], {
    env: { PATH: process.env.PATH, ...env },
    stdio: 'ignore',
  });
  // one after another (the first migrates the store); the same KEEL_HOME, so the same audit key
  const hubs = [];
  for (let j = 0; j < PROCESSES; j++)
    hubs.push(
      await startHub({ ...env, KEEL_HUB_ADMIN_TOKEN: 'bench-admin-token', KEEL_WH_BENCH: WEBHOOK_SECRET }, [
        '--workflows',
        project,
        '--workflow-project',
        'bench',
      ]),
    );
  const { port } = hubs[0];
  const db = cluster && (() => cluster.pid());
  const conflicts0 = env.KEEL_STORE ? await pgConflicts(env.KEEL_STORE) : undefined;
  const { token } = await call(port, 'POST', '/v1/projects/bench/tokens', 'bench-admin-token');
  const keys = [];
  for (let i = 0; i < AGENTS; i++)
    keys.push((await call(port, 'POST', '/v1/agents', token, { name: `agent-${i}` })).agent_key);

  // every hub's group commits, summed
  const commitsOf = async () => {
    const texts = await Promise.all(
      hubs.map(
        (h) =>
          new Promise((resolve) => {
            request(
              {
                host: '127.0.0.1',
                port: h.port,
                path: '/metrics',
                headers: { authorization: 'Bearer bench-admin-token' },
              },
              (res) => {
                let t = '';
                res.on('data', (c) => {
                  t += c;
                });
                res.on('end', () => resolve(t));
              },
            ).end();
          }),
      ),
    );
    const sum = (re) => texts.reduce((a, t) => a + Number(re.exec(t)?.[1]), 0);
    return {
      commits: sum(/keel_hub_commits_total (\d+)/),
      ops: sum(/keel_hub_committed_ops_total (\d+)/),
    };
  };
  const m0 = await commitsOf();
  const saturated = await cycles(hubs, keys, { window: WINDOW, seconds: SECONDS, warmupS: WARMUP_S, db });
  const m1 = await commitsOf();
  const light = await cycles(hubs, keys, { window: 1, seconds: LIGHT_S, warmupS: 1, db });
  // the folded cycle needs POST /v1/acks: an older build without it is measured on the explicit cycle only
  const doc = await call(port, 'GET', '/v1/openapi.json', 'none');
  const canFold = Boolean(doc.paths['/v1/acks']);
  const m2 = await commitsOf();
  const folded = canFold
    ? await cycles(hubs, keys, { window: WINDOW, seconds: SECONDS, warmupS: WARMUP_S, folded: true, db })
    : undefined;
  const m3 = await commitsOf();
  const foldedLight = canFold
    ? await cycles(hubs, keys, { window: 1, seconds: LIGHT_S, warmupS: 1, folded: true, db })
    : undefined;
  const fan = await fanout(hubs, token);
  const hooks = await webhooks(hubs, token);

  await Promise.all(
    hubs.map((h) => {
      const gone = new Promise((r) => h.child.once('exit', r));
      h.child.kill('SIGTERM');
      return gone;
    }),
  );
  const conflicts1 = conflicts0 && (await pgConflicts(env.KEEL_STORE));
  await cluster?.stop();
  rmSync(home, { recursive: true, force: true });
  return {
    engine,
    hub_processes: PROCESSES,
    ...saturated,
    // the whole run's, every phase (PostgreSQL): deadlocked group commits are rolled back and retried
    ...(conflicts1
      ? {
          pg_deadlocks: conflicts1.deadlocks - conflicts0.deadlocks,
          pg_rollbacks: conflicts1.rollbacks - conflicts0.rollbacks,
        }
      : {}),
    ops_per_commit: Number(((m1.ops - m0.ops) / (m1.commits - m0.commits)).toFixed(1)),
    light: {
      cycles_per_s: light.cycles_per_s,
      p50_ms: light.p50_ms,
      p99_ms: light.p99_ms,
      hub_cpu_ms_per_cycle: light.hub_cpu_ms_per_cycle,
      db_cpu_ms_per_cycle: light.db_cpu_ms_per_cycle,
      errors: light.errors,
    },
    folded: folded && {
      messages_per_s: folded.messages_per_s,
      p50_ms: folded.p50_ms,
      p99_ms: folded.p99_ms,
      hub_cpu_ms_per_cycle: folded.hub_cpu_ms_per_cycle,
      ...(folded.hub_cpu_ms_per_cycle_each
        ? { hub_cpu_ms_per_cycle_each: folded.hub_cpu_ms_per_cycle_each }
        : {}),
      db_cpu_ms_per_cycle: folded.db_cpu_ms_per_cycle,
      client_cpu_ms_per_cycle: folded.client_cpu_ms_per_cycle,
      tcp: folded.tcp,
      ops_per_commit: Number(((m3.ops - m2.ops) / (m3.commits - m2.commits)).toFixed(1)),
      errors: folded.errors,
      ...(folded.first_error ? { first_error: folded.first_error } : {}),
      light: foldedLight && {
        messages_per_s: 2 * foldedLight.cycles_per_s,
        p50_ms: foldedLight.p50_ms,
        p99_ms: foldedLight.p99_ms,
        hub_cpu_ms_per_cycle: foldedLight.hub_cpu_ms_per_cycle,
        db_cpu_ms_per_cycle: foldedLight.db_cpu_ms_per_cycle,
        errors: foldedLight.errors,
      },
    },
    ...fan,
    ...hooks,
    retried: retries,
  };
}

const loadAtStart = loadavg();
const results = [];
for (const engine of ENGINES) {
  results.push(await measure(engine));
  console.error(JSON.stringify(results.at(-1)));
}
agent.destroy();
console.log(
  `hub (${KEEL}): ${AGENTS} agents, ${WINDOW} requests in flight each (saturated) then 1 (light), ${SECONDS} s after ${WARMUP_S} s warm-up; fan-out to ${FANOUT} streams × ${FANOUT_ROUNDS - 1} rounds; ${WEBHOOKS} webhooks one by one; ${PROCESSES} hub process${PROCESSES === 1 ? '' : 'es'}; ${cpus().length} cores (${cpus()[0]?.model ?? '?'})`,
);
console.log(
  `load average at the start: ${loadAtStart.map((l) => l.toFixed(1)).join(' ')}; at the end: ${loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}`,
);
// several hubs: the engine cell says how many; a private cluster's own CPU follows the hubs' (+ db)
const label = (r) => (r.hub_processes > 1 ? `${r.engine} ×${r.hub_processes} hubs` : r.engine);
const cpuCell = (c) =>
  `${c.hub_cpu_ms_per_cycle}${c.db_cpu_ms_per_cycle == null ? '' : ` + db ${c.db_cpu_ms_per_cycle}`}`;
console.log(
  '| engine | messages/s (saturated) | p50 / p99 ms | hub CPU ms per cycle | client CPU ms per cycle | writes per commit | light: messages/s, p50 / p99 ms | fan-out 100: send→event p50 / p99 ms | webhook→stage p50 / p99 ms | errors |',
);
console.log('|---|---|---|---|---|---|---|---|---|---|');
for (const r of results)
  console.log(
    r.skipped
      ? `| ${r.engine} | skipped: ${r.skipped} | | | | | | | | |`
      : `| ${label(r)} | ${r.messages_per_s} | ${r.p50_ms} / ${r.p99_ms} | ${cpuCell(r)} | ${r.client_cpu_ms_per_cycle} | ${r.ops_per_commit} | ${2 * r.light.cycles_per_s}, ${r.light.p50_ms} / ${r.light.p99_ms} | ${r.send_to_event_p50_ms} / ${r.send_to_event_p99_ms} | ${r.webhook_to_stage_p50_ms} / ${r.webhook_to_stage_p99_ms} | ${r.errors + r.light.errors + r.fanout_missed + r.webhook_errors} |`,
  );
console.log(
  '\nfolded cycle (send → SSE → reply, which acks the request → SSE → POST /v1/acks of the replies one read brought; the same two messages in 3 requests or fewer):',
);
console.log(
  '| engine | messages/s (saturated) | p50 / p99 ms | hub CPU ms per cycle | client CPU ms per cycle | writes per commit | light: messages/s, p50 / p99 ms | errors |',
);
console.log('|---|---|---|---|---|---|---|---|');
for (const r of results) {
  const f = r.folded;
  console.log(
    r.skipped || !f
      ? `| ${r.engine} | ${r.skipped ? `skipped: ${r.skipped}` : 'not measured: this build has no POST /v1/acks'} | | | | | | |`
      : `| ${label(r)} | ${f.messages_per_s} | ${f.p50_ms} / ${f.p99_ms} | ${cpuCell(f)} | ${f.client_cpu_ms_per_cycle} | ${f.ops_per_commit} | ${f.light.messages_per_s}, ${f.light.p50_ms} / ${f.light.p99_ms} | ${f.errors + f.light.errors} |`,
  );
}
for (const r of results)
  if (r.pg_deadlocks !== undefined)
    console.log(
      `${label(r)}: PostgreSQL deadlocks over the run ${r.pg_deadlocks}, transactions rolled back ${r.pg_rollbacks}`,
    );
console.log(JSON.stringify(results));
