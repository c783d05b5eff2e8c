/**
 * keel's core benchmark: the real binary against a zero-latency scripted model server on 127.0.0.1.
 * Prints one Markdown table (ours, the target, peers) and writes bench/results/latest.json.
 * No real model is measured: every millisecond and byte here is keel's own. See bench/README.md.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { encode } from 'gpt-tokenizer/encoding/o200k_base';
import { serve as serveStamped } from './serve.mjs';
import { assertOk, rssMethod, runKeel, runNode } from './spawn-timed.mjs';

const RUNS = { ask: 15, edit: 10, warmup: 2, rss: 5, editRss: 3 };
const MODEL = 'bench-model';
const scratch = mkdtempSync(join(tmpdir(), 'keel-bench-'));

// ---- scripts the server replays; usage is set because real servers report it (and keel skips its tokenizer then)

const TRIVIAL = { turns: [{ text: 'OK', usage: { prompt_tokens: 650, completion_tokens: 1 } }] };

const GREET_BEFORE = "export function greet(name) {\n  return 'Hello, ' + name;\n}\n";
const GREET_AFTER = "export function greet(name) {\n  return 'Hi, ' + name + '!';\n}\n";
const THREE_STEPS = {
  turns: [
    {
      tool_calls: [{ id: 'call_1', name: 'read_file', arguments: { path: 'src/greet.js' } }],
      usage: { prompt_tokens: 1100, completion_tokens: 20 },
    },
    {
      tool_calls: [
        {
          id: 'call_2',
          name: 'edit_file',
          arguments: {
            path: 'src/greet.js',
            old_string: "'Hello, ' + name",
            new_string: "'Hi, ' + name + '!'",
          },
        },
      ],
      usage: { prompt_tokens: 1180, completion_tokens: 40 },
      expect: { last_tool_result_contains: "return 'Hello, ' + name;" },
    },
    {
      text: 'greet now says "Hi, NAME!".',
      usage: { prompt_tokens: 1230, completion_tokens: 14 },
      expect: { last_tool_result_contains: 'Edited src/greet.js' },
    },
  ],
};

// ---- helpers

const serve = (script) => serveStamped(script, MODEL);

const modelFlags = (url) => ['--provider', 'openai', '--base-url', url, '--model', MODEL];
const isChat = (r) => r.method === 'POST' && r.path === '/v1/chat/completions';
const sinceStart = (run, at) => Number(at - run.t0) / 1e6;

function quantile(xs, q) {
  const s = [...xs].sort((a, b) => a - b);
  if (s.length === 0) return Number.NaN;
  const i = (s.length - 1) * q;
  const lo = Math.floor(i);
  const hi = Math.ceil(i);
  return (s[lo] ?? 0) + ((s[hi] ?? 0) - (s[lo] ?? 0)) * (i - lo);
}
const median = (xs) => quantile(xs, 0.5);
const spread = (xs) => ({ p10: quantile(xs, 0.1), p50: median(xs), p90: quantile(xs, 0.9), n: xs.length });

/** A temp folder for one run; `git` makes it a committed repository. */
function workspace(name, files = {}, git = false) {
  const dir = mkdtempSync(join(scratch, `${name}-`));
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(dir, path, '..'), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  if (git) {
    const sh = (...args) => {
      const r = spawnSync('git', args, { cwd: dir, encoding: 'utf8' });
      if (r.status !== 0) throw new Error(`git ${args.join(' ')}: ${r.stderr}`);
    };
    sh('init', '-q');
    sh('add', '-A');
    sh('-c', 'user.name=bench', '-c', 'user.email=bench@localhost', 'commit', '-q', '-m', 'start');
  }
  return dir;
}

/** Tokens (o200k) in the first chat request: the system message plus the tool schemas, and the whole body. */
function firstRequestTokens(requests) {
  const body = requests.find(isChat)?.body;
  if (!body) throw new Error('no chat request reached the server');
  const system = body.messages.find((m) => m.role === 'system')?.content ?? '';
  return {
    fixed: encode(system).length + encode(JSON.stringify(body.tools ?? [])).length,
    system: encode(system).length,
    tools: encode(JSON.stringify(body.tools ?? [])).length,
    toolCount: (body.tools ?? []).length,
    body: encode(JSON.stringify(body)).length,
  };
}

/** Per-round times from the session's event log (ISO timestamps, 1 ms resolution). */
function roundsFromLog(home, sessionId) {
  const db = new Database(join(home, 'keel.db'), { readonly: true });
  try {
    const events = db
      .prepare('SELECT ts, type, data FROM events WHERE session_id = ? ORDER BY seq')
      .all(sessionId)
      .map((e) => ({ t: Date.parse(e.ts), type: e.type, data: JSON.parse(e.data) }));
    const rounds = [];
    let cur;
    for (const e of events) {
      if (e.type === 'model_request') {
        if (cur) rounds.push({ ...cur, next: e.t });
        cur = { request: e.t, answer: e.t, toolMs: 0, next: undefined };
      } else if (cur && e.type === 'assistant_message') {
        cur.answer = e.t;
      } else if (cur && e.type === 'tool_result') {
        cur.toolMs += e.data.duration_ms;
      }
    }
    if (cur) rounds.push(cur); // the final answer: no next request, so no harness gap to measure
    return rounds;
  } finally {
    db.close();
  }
}

function sessionIdOf(run) {
  const m = run.stderr.match(/session (\S+) ·/);
  if (!m) throw new Error(`no session id in keel's output:\n${run.stderr}`);
  return m[1];
}

// ---- scenarios

/** keel ask|edit "hi": the first request's size. */
async function promptSize(verb) {
  const { server } = await serve(TRIVIAL);
  const home = workspace('home');
  assertOk(
    await runKeel([verb, 'hi', ...modelFlags(server.url)], { cwd: workspace(verb), home }),
    `keel ${verb} "hi"`,
  );
  await server.close();
  return firstRequestTokens(server.requests);
}

/** One trivial ask: wall time, and when its requests reached the server. */
async function trivialAsk(home, cwd, rss = false) {
  const { server, arrivals } = await serve(TRIVIAL);
  const run = assertOk(
    await runKeel(['ask', 'hi', ...modelFlags(server.url)], { cwd, home, rss }),
    'keel ask',
  );
  await server.close();
  if (run.stdout.trim() !== 'OK') throw new Error(`keel ask printed ${JSON.stringify(run.stdout)}`);
  const chat = arrivals.find(isChat);
  if (!chat) throw new Error('keel ask sent no chat request');
  return {
    ms: run.ms,
    firstRequestMs: sinceStart(run, chat.at),
    firstAnyRequestMs: sinceStart(run, (arrivals[0] ?? chat).at),
    rssKb: run.rssKb,
    requests: arrivals.map((a) => `${a.method} ${a.path}`),
  };
}

/** One 3-step edit (read, edit, answer) in a fresh git repository. */
async function threeSteps(home, rss = false) {
  const cwd = workspace('edit', { 'src/greet.js': GREET_BEFORE, 'README.md': '# demo\n' }, true);
  const { server, arrivals } = await serve(THREE_STEPS);
  const run = assertOk(
    await runKeel(['edit', 'make greet say Hi and end with !', ...modelFlags(server.url)], {
      cwd,
      home,
      rss,
    }),
    'keel edit (3 steps)',
  );
  await server.close();
  if (readFileSync(join(cwd, 'src/greet.js'), 'utf8') !== GREET_AFTER)
    throw new Error('the edit did not land');
  const chats = server.requests.filter(isChat);
  if (chats.length !== 3) throw new Error(`expected 3 chat requests, got ${chats.length}`);
  const bytes = server.requests.reduce(
    (n, r) =>
      n +
      (r.body === undefined
        ? 0
        : Number(r.headers['content-length'] ?? Buffer.byteLength(JSON.stringify(r.body)))),
    0,
  );
  const rounds = roundsFromLog(home, sessionIdOf(run));
  const chatArrivals = arrivals.filter(isChat);
  const harness = [];
  const serverGap = [];
  const modelMs = [];
  rounds.forEach((r, i) => {
    modelMs.push(r.answer - r.request);
    if (r.next === undefined) return;
    harness.push(r.next - r.answer - r.toolMs);
    const a = chatArrivals[i];
    const b = chatArrivals[i + 1];
    if (a && b) serverGap.push(Number(b.at - a.at) / 1e6 - r.toolMs);
  });
  return {
    ms: run.ms,
    rssKb: run.rssKb,
    bytes,
    requests: server.requests.length,
    harness,
    serverGap,
    modelMs,
  };
}

/**
 * Everything timed, interleaved run by run (node itself, --version, ask, the 3-step edit), so load from
 * other processes on the machine lands on every metric alike and their ratios stay honest.
 */
async function timedRuns() {
  const home = workspace('home');
  const editHome = workspace('home');
  const cwd = workspace('ask');
  const floor = [];
  const version = [];
  const asks = [];
  const steps = [];
  const total = RUNS.warmup + Math.max(RUNS.ask, RUNS.edit);
  for (let i = 0; i < total; i++) {
    const warm = i < RUNS.warmup;
    const n = await runNode(['-e', ''], { cwd, home });
    const v = assertOk(await runKeel(['--version'], { cwd, home }), 'keel --version');
    const a = await trivialAsk(home, cwd);
    const e = i < RUNS.warmup + RUNS.edit ? await threeSteps(editHome) : undefined;
    if (warm) continue;
    floor.push(n.ms);
    version.push(v.ms);
    asks.push(a);
    if (e) steps.push(e);
  }
  const askRss = [];
  for (let i = 0; i < RUNS.rss; i++) askRss.push((await trivialAsk(home, cwd, true)).rssKb / 1024);
  const editRss = [];
  for (let i = 0; i < RUNS.editRss; i++) editRss.push((await threeSteps(editHome, true)).rssKb / 1024);
  return {
    startup: {
      floorMs: spread(floor),
      versionMs: spread(version),
      askMs: spread(asks.map((a) => a.ms)),
      askOverFloorMs: spread(asks.map((a, i) => a.ms - (floor[i] ?? 0))),
      firstRequestMs: spread(asks.map((a) => a.firstRequestMs)),
      firstAnyRequestMs: spread(asks.map((a) => a.firstAnyRequestMs)),
      askRequests: asks[0]?.requests ?? [],
      rssMb: spread(askRss),
    },
    steps: {
      ms: spread(steps.map((r) => r.ms)),
      bytes: spread(steps.map((r) => r.bytes)),
      requests: steps[0]?.requests ?? 0,
      harnessMs: spread(steps.flatMap((r) => r.harness)),
      harnessReadMs: spread(steps.map((r) => r.harness[0] ?? Number.NaN)),
      harnessEditMs: spread(steps.map((r) => r.harness[1] ?? Number.NaN)),
      serverGapMs: spread(steps.flatMap((r) => r.serverGap)),
      modelMs: spread(steps.flatMap((r) => r.modelMs)),
      rssMb: spread(editRss),
    },
  };
}

// ---- the table

const fmt = (n, digits = 0) =>
  Number.isFinite(n)
    ? n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits })
    : 'n/a';
const PEERS = {
  tokens: 'pi 1,271 · Codex CLI 9,362 · opencode 6,597 · Gemini CLI 10,081 · Qwen Code 16,850',
  wall: 'pi 957 · Codex CLI 261 · opencode 2,913',
  first: 'Codex CLI 213 · pi 837',
  version: 'Codex CLI 52 · pi 777 · opencode 567',
  rss: 'Codex CLI 145 · pi 170 · opencode 582',
  edit: 'Codex CLI 465 · pi 1,054',
  bytes: 'pi 18,400 · Codex CLI 126,329',
};

/** One table row; `value` is a number, or a spread whose median is compared and whose p10–p90 is shown. */
function row(id, metric, value, unit, target, peers = '—', digits = 0) {
  const s = typeof value === 'number' ? undefined : value;
  const v = s ? s.p50 : value;
  return {
    id,
    metric,
    value: v,
    spread: s,
    unit,
    target,
    peers,
    digits,
    meets: target === undefined ? null : v <= target,
  };
}

function table(rows) {
  const lines = ['| metric | keel | target | peers | meets |', '| --- | ---: | ---: | --- | :---: |'];
  for (const r of rows) {
    const range = r.spread ? ` (${fmt(r.spread.p10, r.digits)}–${fmt(r.spread.p90, r.digits)})` : '';
    const keel = `${fmt(r.value, r.digits)} ${r.unit}${range}`;
    const target = r.target === undefined ? '—' : `≤ ${fmt(r.target)} ${r.unit}`;
    const meets = r.meets === null ? '—' : r.meets ? 'yes' : '**no**';
    lines.push(`| ${r.metric} | ${keel} | ${target} | ${r.peers} | ${meets} |`);
  }
  return lines.join('\n');
}

async function main() {
  const load0 = loadavg()[0];
  const t0 = process.hrtime.bigint();
  const ask = await promptSize('ask');
  const edit = await promptSize('edit');
  const { startup: start, steps } = await timedRuns();
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  const load1 = loadavg()[0];

  const rssNote = rssMethod === 'gnu-time' ? 'GNU time maxrss' : '/proc VmHWM poll, lower bound';
  const rows = [
    row(
      'tokens_ask',
      `first request of \`keel ask "hi"\`: system prompt + ${ask.toolCount} tool schemas (o200k)`,
      ask.fixed,
      'tok',
      1000,
      PEERS.tokens,
    ),
    row('tokens_ask_body', '… the whole request body, JSON as sent', ask.body, 'tok'),
    row(
      'tokens_edit',
      `first request of \`keel edit "hi"\`: system prompt + ${edit.toolCount} tool schemas (o200k)`,
      edit.fixed,
      'tok',
      1400,
      PEERS.tokens,
    ),
    row('tokens_edit_body', '… the whole request body, JSON as sent', edit.body, 'tok'),
    row('ask_wall', 'trivial `keel ask` answered "OK": wall, median', start.askMs, 'ms', 250, PEERS.wall),
    row(
      'ask_over_floor',
      "… minus the node floor of the same round (keel's own time)",
      start.askOverFloorMs,
      'ms',
    ),
    row(
      'first_request',
      'launch → first chat request at the server, median',
      start.firstRequestMs,
      'ms',
      150,
      PEERS.first,
    ),
    row(
      'first_any_request',
      `… launch → first request of any kind (${start.askRequests[0] ?? 'none'}), median`,
      start.firstAnyRequestMs,
      'ms',
    ),
    row('version', '`keel --version` cold start, median', start.versionMs, 'ms', 80, PEERS.version),
    row('node_floor', 'floor: `node -e ""` spawn → exit on this machine, median', start.floorMs, 'ms'),
    row('ask_rss', `peak RSS, trivial ask (${rssNote})`, start.rssMb, 'MB', 100, PEERS.rss),
    row(
      'edit_wall',
      '3-step `keel edit` (read, edit, answer), wall, median',
      steps.ms,
      'ms',
      400,
      PEERS.edit,
    ),
    row(
      'edit_bytes',
      `… request bytes sent to the server (${steps.requests} requests, bodies)`,
      steps.bytes.p50,
      'B',
      15000,
      PEERS.bytes,
    ),
    row(
      'harness_round',
      '… harness per round excl. model and tools, p50 (event log, 1 ms resolution)',
      steps.harnessMs,
      'ms',
      5,
      '—',
      1,
    ),
    row('harness_read', '… of which the read_file round', steps.harnessReadMs, 'ms', undefined, '—', 1),
    row(
      'harness_edit',
      '… of which the edit_file round (first write: it takes over the snapshot a worker took at session start)',
      steps.harnessEditMs,
      'ms',
      undefined,
      '—',
      1,
    ),
    row(
      'round_gap',
      '… request-to-request gap at the server minus tool time, p50 (incl. HTTP client + SDK)',
      steps.serverGapMs,
      'ms',
      undefined,
      '—',
      1,
    ),
    row(
      'model_round',
      '… model_request → assistant_message per round, p50 (zero-latency server: all client side)',
      steps.modelMs,
      'ms',
      undefined,
      '—',
      1,
    ),
    row('edit_rss', `… peak RSS (${rssNote})`, steps.rssMb, 'MB'),
  ];

  const context =
    `keel bench · node ${process.version} · ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'} · ` +
    `load ${load0.toFixed(1)} → ${load1.toFixed(1)} · ${seconds.toFixed(0)} s · ` +
    `zero-latency scripted server on 127.0.0.1 (no real model) · median (p10–p90) of ${RUNS.ask} asks, ${RUNS.edit} edits`;
  process.stdout.write(`${context}\n\n${table(rows)}\n`);

  const results = {
    date: new Date().toISOString(),
    node: process.version,
    cpus: cpus().length,
    loadavg: { start: load0, end: load1 },
    seconds,
    runs: RUNS,
    rss_method: rssMethod,
    metrics: rows.map(({ digits: _digits, ...r }) => r),
    detail: { ask_prompt: ask, edit_prompt: edit, startup: start, three_steps: steps },
  };
  const dir = new URL('./results/', import.meta.url);
  mkdirSync(dir, { recursive: true });
  writeFileSync(new URL('latest.json', dir), `${JSON.stringify(results, null, 2)}\n`);
}

try {
  await main();
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
