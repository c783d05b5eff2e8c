/**
 * keel serve's benchmark (issue 12), through the real binary on 127.0.0.1 with the scripted model:
 * 1. event append -> SSE delivery latency with 20 concurrent streams on a running session: each stored
 *    event carries the time it was appended (`ts`, the server's clock, the same machine's), and each
 *    stream stamps its arrival; only events appended after every stream was connected are counted;
 * 2. sessions per minute with 8 in parallel (a one-round answer each).
 * Goals, not assertions (issue 12: p99 <= 20 ms). Run after `npm run build`.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { startScriptServer } from '../dist/model/script-server.js';

const STREAMS = 20;
const ROUNDS = 40;
const SESSIONS = 48;
const PARALLEL = 8;

const quantile = (xs, q) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
};

function repo() {
  const dir = mkdtempSync(join(tmpdir(), 'keel-serve-bench-'));
  writeFileSync(join(dir, 'README.md'), '# bench\n');
  return dir;
}

async function startServe(script) {
  const model = await startScriptServer({ turns: script }, { models: ['bench'] });
  const home = mkdtempSync(join(tmpdir(), 'keel-serve-home-'));
  const child = spawn(
    process.execPath,
    [
      'bin/keel.js',
      'serve',
      '--listen',
      '127.0.0.1:0',
      '--json',
      '-C',
      repo(),
      '--provider',
      'openai',
      '--base-url',
      model.url,
      '--model',
      'bench',
    ],
    { env: { ...process.env, KEEL_HOME: home, HOME: home }, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const info = await new Promise((resolve) => {
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      if (out.includes('\n')) resolve(JSON.parse(out.split('\n')[0]));
    });
  });
  const post = async (path, body) => {
    const res = await fetch(`http://127.0.0.1:${info.port}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${info.token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return res.json();
  };
  return { info, post, model, stop: () => child.kill('SIGTERM') };
}

/** Read a stream (with the server's token) until its `end` frame; call `onEvent(data, arrivedAt)` for each stored event. */
async function follow(url, token, onEvent, onOpen) {
  const res = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
  onOpen();
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of res.body) {
    const arrived = Date.now();
    buffer += decoder.decode(chunk, { stream: true });
    for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const event = /^event: (.*)$/m.exec(block)?.[1];
      const data = /^data: (.*)$/m.exec(block)?.[1];
      if (event === 'end') return;
      if (data && /^id: /m.test(block)) onEvent(JSON.parse(data), arrived);
    }
  }
}

// ---- 1. append -> delivery latency
const script = [
  { tool_calls: [{ id: 'c-first', name: 'read_file', arguments: { path: 'README.md' } }], delay_ms: 1500 },
  ...Array.from({ length: ROUNDS }, (_, i) => ({
    tool_calls: [{ id: `c${i}`, name: 'list_dir', arguments: { path: '.', depth: i + 1 } }],
    delay_ms: 20,
  })),
  { text: 'done' },
];
const a = await startServe(script);
// the first turn holds the model for 1.5 s so every stream is connected before the measured events
const { session_id: id } = await a.post('/v1/sessions', { prompt: 'read it many times' });
let connected = 0;
let allConnectedAt = Number.POSITIVE_INFINITY;
const latencies = [];
const streams = Array.from({ length: STREAMS }, () =>
  follow(
    `http://127.0.0.1:${a.info.port}/v1/sessions/${id}/events`,
    a.info.token,
    (event, arrived) => {
      const appended = Date.parse(event.ts);
      if (appended > allConnectedAt) latencies.push(arrived - appended);
    },
    () => {
      connected++;
      if (connected === STREAMS) allConnectedAt = Date.now();
    },
  ),
);
await Promise.all(streams);
a.stop();
await a.model.close();

// ---- 2. sessions per minute, 8 in parallel
const b = await startServe(Array.from({ length: SESSIONS }, () => ({ text: 'ok' })));
const started = Date.now();
let next = 0;
await Promise.all(
  Array.from({ length: PARALLEL }, async () => {
    while (next < SESSIONS) {
      next++;
      const { session_id } = await b.post('/v1/sessions', { prompt: 'hi' });
      await follow(
        `http://127.0.0.1:${b.info.port}/v1/sessions/${session_id}/events`,
        b.info.token,
        () => {},
        () => {},
      );
    }
  }),
);
const seconds = (Date.now() - started) / 1000;
b.stop();
await b.model.close();

const out = {
  machine: { cpus: cpus().length, load: loadavg().map((x) => Number(x.toFixed(2))) },
  sse: {
    streams: STREAMS,
    events_measured: latencies.length,
    p50_ms: quantile(latencies, 0.5),
    p99_ms: quantile(latencies, 0.99),
    max_ms: Math.max(...latencies),
  },
  sessions: {
    total: SESSIONS,
    parallel: PARALLEL,
    seconds,
    per_minute: Math.round((SESSIONS / seconds) * 60),
  },
};
console.log(JSON.stringify(out, null, 2));
process.exit(0);
