/**
 * keel beside Codex CLI and pi, in one run, against the same scripted model on 127.0.0.1: the table of
 * issue 26 (first request tokens and tools, launch to first request, trivial one-shot wall and peak RSS,
 * the 3-step read/edit task's wall and request bytes), medians of RUNS, with keel/peer ratios.
 *
 *   npm run build && npm run bench:peers
 *
 * The peers are installed, pinned, from the npm registry into a cache folder outside the repository
 * (KEEL_PEERS_CACHE, default ~/.cache/keel-bench-peers), never into this repository's node_modules. Then
 * the bench runs itself again in a network namespace of its own with only loopback up (`unshare -rn`),
 * so nothing any agent does can leave the machine. keel and pi speak Chat Completions to keel's scripted
 * server (src/model/script-server.ts); Codex CLI speaks only the Responses API (`wire_api = "responses"`
 * is the one it accepts), so it gets a Responses server below that replays the same kind of turns. A peer
 * that cannot be installed or started is named in the output, and the rest still runs.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { encode } from 'gpt-tokenizer/encoding/o200k_base';

const RUNS = Number(process.env.KEEL_PEERS_RUNS ?? 5);
const MODEL = 'bench-model';
const SELF = fileURLToPath(import.meta.url);
// KEEL_PEERS_KEEL=/other/bin/keel.js: another build of keel (an older commit's), for a before/after
const KEEL = process.env.KEEL_PEERS_KEEL ?? fileURLToPath(new URL('../bin/keel.js', import.meta.url));
const CACHE = process.env.KEEL_PEERS_CACHE ?? join(homedir(), '.cache', 'keel-bench-peers');
const GNU_TIME = '/usr/bin/time';

/** The peers, pinned: the versions the issue measured. */
const PEERS = {
  codex: { name: 'Codex CLI', pkg: '@openai/codex', version: '0.171.0', bin: 'codex' },
  pi: { name: 'pi', pkg: '@mariozechner/pi-coding-agent', version: '0.73.1', bin: 'pi' },
};
const peerDir = (p) => join(CACHE, `${p.bin}-${p.version}`);
const peerBin = (p) => join(peerDir(p), 'node_modules', '.bin', p.bin);

// ---- outside: install the peers (the registry needs the network), then run again inside a loopback-only namespace

function install(peer) {
  if (existsSync(peerBin(peer))) return undefined;
  mkdirSync(peerDir(peer), { recursive: true });
  const r = spawnSync(
    'npm',
    [
      'install',
      '--prefix',
      peerDir(peer),
      '--no-audit',
      '--no-fund',
      '--loglevel=error',
      `${peer.pkg}@${peer.version}`,
    ],
    { encoding: 'utf8', timeout: 600_000 },
  );
  if (r.status === 0 && existsSync(peerBin(peer))) return undefined;
  return `npm install ${peer.pkg}@${peer.version} failed: ${(r.stderr || r.error?.message || '').trim().split('\n').slice(-3).join(' ')}`;
}

function outside() {
  const missing = {};
  for (const [id, peer] of Object.entries(PEERS)) {
    const why = install(peer);
    if (why) missing[id] = why;
  }
  // -r maps us to root inside, so `ip link set lo up` works without being root outside
  const r = spawnSync(
    'unshare',
    ['-rn', 'sh', '-c', 'ip link set lo up && exec "$0" "$@"', process.execPath, SELF, '--inside'],
    {
      stdio: 'inherit',
      env: { ...process.env, KEEL_PEERS_MISSING: JSON.stringify(missing) },
    },
  );
  if (r.error || r.status === null) {
    process.stderr.write(
      `bench:peers: cannot make a loopback-only network namespace (unshare -rn: ${r.error?.message ?? r.signal}); nothing was run\n`,
    );
    process.exit(1);
  }
  process.exit(r.status);
}

if (process.argv[2] !== '--inside') outside();

// ---- inside: the model servers

const { startScriptServer } = await import('../dist/model/script-server.js');

/** keel's scripted Chat Completions server, with each request's arrival stamped (body read) on the hrtime clock. */
async function chatServer(turns) {
  const server = await startScriptServer({ turns }, { models: [MODEL] });
  const arrivals = [];
  const push = server.requests.push.bind(server.requests);
  server.requests.push = (...items) => {
    const at = process.hrtime.bigint();
    for (const r of items) arrivals.push({ at, ...r });
    return push(...items);
  };
  return { url: server.url, arrivals, close: () => server.close() };
}

/**
 * A Responses API server for Codex CLI: each POST /v1/responses takes the next turn and streams it as
 * response.* events (a message, function calls, or a freeform tool call such as apply_patch).
 */
async function responsesServer(turns) {
  const arrivals = [];
  let next = 0;
  let n = 0;
  const server = createServer((req, res) => {
    const parts = [];
    req.on('data', (b) => parts.push(b));
    req.on('end', () => {
      const text = Buffer.concat(parts).toString('utf8');
      let body;
      try {
        body = text ? JSON.parse(text) : undefined;
      } catch {
        body = text;
      }
      const path = (req.url ?? '/').split('?')[0];
      arrivals.push({ at: process.hrtime.bigint(), method: req.method, path, headers: req.headers, body });
      if (req.method === 'GET' && path.endsWith('/models')) {
        res.writeHead(200, { 'content-type': 'application/json' });
        return res.end(
          JSON.stringify({ object: 'list', data: [{ id: MODEL, object: 'model' }], models: [] }),
        );
      }
      if (req.method !== 'POST' || !path.endsWith('/responses')) {
        res.writeHead(404, { 'content-type': 'application/json' });
        return res.end(JSON.stringify({ error: { message: `no route ${req.method} ${path}` } }));
      }
      const turn = turns[next++] ?? { text: 'script exhausted' };
      const id = `resp_${++n}`;
      const items = [];
      if (turn.text) {
        items.push({
          type: 'message',
          id: `msg_${n}`,
          role: 'assistant',
          status: 'completed',
          content: [{ type: 'output_text', text: turn.text, annotations: [] }],
        });
      }
      for (const [i, call] of (turn.tool_calls ?? []).entries()) {
        const callId = `call_${n}_${i}`;
        items.push(
          call.input !== undefined
            ? {
                type: 'custom_tool_call',
                id: `ctc_${n}_${i}`,
                call_id: callId,
                name: call.name,
                input: call.input,
              }
            : {
                type: 'function_call',
                id: `fc_${n}_${i}`,
                call_id: callId,
                name: call.name,
                arguments: JSON.stringify(call.arguments),
                status: 'completed',
              },
        );
      }
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      const send = (type, data) =>
        res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
      const response = { id, object: 'response', model: MODEL, status: 'in_progress', output: [] };
      send('response.created', { response });
      items.forEach((item, i) => {
        send('response.output_item.added', { output_index: i, item: { ...item, status: 'in_progress' } });
        if (item.type === 'message')
          send('response.output_text.delta', {
            item_id: item.id,
            output_index: i,
            content_index: 0,
            delta: turn.text,
          });
        send('response.output_item.done', { output_index: i, item });
      });
      const usage = {
        input_tokens: 100,
        input_tokens_details: { cached_tokens: 0 },
        output_tokens: 10,
        output_tokens_details: { reasoning_tokens: 0 },
        total_tokens: 110,
      };
      send('response.completed', { response: { ...response, status: 'completed', output: items, usage } });
      res.end();
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}/v1`,
    arrivals,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

// ---- the agents: how each is pointed at the scripted model, and the turns of each task in its own tools

const scratch = mkdtempSync(join(tmpdir(), 'keel-bench-peers-'));
const GREET_BEFORE = "export function greet(name) {\n  return 'Hello, ' + name;\n}\n";
const GREET_AFTER = "export function greet(name) {\n  return 'Hi, ' + name + '!';\n}\n";
const TASK = 'make greet in src/greet.js say Hi and end with !';
const OLD = "'Hello, ' + name";
const NEW = "'Hi, ' + name + '!'";
const usage = { usage: { prompt_tokens: 650, completion_tokens: 1 } };

function folder(prefix, files = {}, git = false) {
  const dir = mkdtempSync(join(scratch, `${prefix}-`));
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(dir, path, '..'), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  if (git) {
    const sh = (...args) => spawnSync('git', args, { cwd: dir, encoding: 'utf8' });
    sh('init', '-q');
    sh('add', '-A');
    sh('-c', 'user.name=bench', '-c', 'user.email=bench@localhost', 'commit', '-q', '-m', 'start');
  }
  return dir;
}

/** Each agent keeps one home across the runs, as a returning user's: the warm-up round makes its state (keel's database, Codex's and pi's files). */
const homes = new Map();
function homeFor(name) {
  if (!homes.has(name)) homes.set(name, folder(name));
  return homes.get(name);
}

const plainEnv = (home) => ({
  PATH: process.env.PATH ?? '/usr/bin:/bin',
  HOME: home,
  LANG: 'C.UTF-8',
  TERM: 'dumb',
  NO_COLOR: '1',
});

const AGENTS = {
  keel: {
    label: 'keel',
    wire: 'chat',
    trivial: () => [{ text: 'OK', ...usage }],
    steps: [
      { tool_calls: [{ name: 'read_file', arguments: { path: 'src/greet.js' } }], ...usage },
      {
        tool_calls: [
          { name: 'edit_file', arguments: { path: 'src/greet.js', old_string: OLD, new_string: NEW } },
        ],
        ...usage,
      },
      { text: 'greet now says "Hi, NAME!".', ...usage },
    ],
    command(url, prompt, verb = 'ask') {
      const home = homeFor('keel-home');
      return {
        cmd: process.execPath,
        args: [KEEL, verb, '--provider', 'openai', '--base-url', url, '--model', MODEL, prompt],
        env: { ...plainEnv(home), KEEL_HOME: home },
      };
    },
  },
  codex: {
    label: `Codex CLI ${PEERS.codex.version}`,
    peer: PEERS.codex,
    wire: 'responses',
    trivial: () => [{ text: 'OK' }],
    steps: [
      // Codex offers a custom provider's model no apply_patch tool: it reads and patches through exec_command
      // (an `apply_patch` heredoc there is Codex's own patch tool, applied without a shell)
      { tool_calls: [{ name: 'exec_command', arguments: { cmd: 'cat src/greet.js' } }] },
      {
        tool_calls: [
          {
            name: 'exec_command',
            arguments: {
              cmd: `apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: src/greet.js\n@@\n-  return ${OLD};\n+  return ${NEW};\n*** End Patch\nEOF\n`,
            },
          },
        ],
      },
      { text: 'greet now says "Hi, NAME!".' },
    ],
    command(url, prompt) {
      const home = homeFor('codex-home');
      const codexHome = join(home, '.codex');
      mkdirSync(codexHome, { recursive: true });
      writeFileSync(
        join(codexHome, 'config.toml'),
        [
          `model = "${MODEL}"`,
          'model_provider = "bench"',
          'approval_policy = "never"',
          'check_for_update_on_startup = false',
          '[model_providers.bench]',
          'name = "bench"',
          `base_url = "${url}"`,
          'env_key = "BENCH_API_KEY"',
          'wire_api = "responses"',
          // with no network, Codex's analytics flush waits ~5 s at exit for a host it cannot reach: not its real cost
          '[analytics]',
          'enabled = false',
          ...(process.env.KEEL_PEERS_CODEX_CONFIG?.split(';') ?? []),
          '',
        ].join('\n'),
      );
      return {
        cmd: peerBin(PEERS.codex),
        args: ['exec', '--skip-git-repo-check', '--sandbox', 'danger-full-access', prompt],
        env: { ...plainEnv(home), CODEX_HOME: codexHome, BENCH_API_KEY: 'not-needed' },
      };
    },
  },
  pi: {
    label: `pi ${PEERS.pi.version}`,
    peer: PEERS.pi,
    wire: 'chat',
    trivial: () => [{ text: 'OK', ...usage }],
    steps: [
      { tool_calls: [{ name: 'read', arguments: { path: 'src/greet.js' } }], ...usage },
      {
        tool_calls: [
          { name: 'edit', arguments: { path: 'src/greet.js', edits: [{ oldText: OLD, newText: NEW }] } },
        ],
        ...usage,
      },
      { text: 'greet now says "Hi, NAME!".', ...usage },
    ],
    command(url, prompt) {
      const home = homeFor('pi-home');
      const dir = join(home, '.pi', 'agent');
      mkdirSync(dir, { recursive: true });
      writeFileSync(
        join(dir, 'models.json'),
        JSON.stringify({
          providers: {
            bench: {
              baseUrl: url,
              api: 'openai-completions',
              apiKey: 'not-needed',
              compat: { supportsDeveloperRole: false, supportsReasoningEffort: false },
              models: [{ id: MODEL, reasoning: false, contextWindow: 32768, maxTokens: 8192 }],
            },
          },
        }),
      );
      return {
        cmd: peerBin(PEERS.pi),
        args: ['-p', '--no-session', '--provider', 'bench', '--model', MODEL, prompt],
        env: { ...plainEnv(home), PI_CODING_AGENT_DIR: dir },
      };
    },
  },
};

// ---- one timed run

/** Spawn under GNU time (peak RSS of the largest process in the tree): wall from spawn to exit, on the hrtime clock. */
function timed({ cmd, args, env }, cwd) {
  const rssFile = join(mkdtempSync(join(scratch, 'rss-')), 'rss');
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    const child = spawn(GNU_TIME, ['-f', '%M', '-o', rssFile, cmd, ...args], {
      cwd,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    let ms = 0;
    child.stdout.on('data', (d) => {
      stdout += d;
    });
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    child.on('error', reject);
    child.on('exit', () => {
      ms = Number(process.hrtime.bigint() - t0) / 1e6;
    });
    child.on('close', (code) => {
      let rssKb = Number.NaN;
      try {
        rssKb = Number(readFileSync(rssFile, 'utf8').trim().split('\n').at(-1));
      } catch {}
      resolve({ code, ms, t0, stdout, stderr, rssMb: rssKb / 1024 });
    });
  });
}

const isModelRequest = (a) =>
  a.method === 'POST' && (a.path.endsWith('/chat/completions') || a.path.endsWith('/responses'));

/** What the model must read before it answers: system/instructions and every message's text, plus the tool schemas (o200k). */
function requestTokens(body) {
  const text = (c) =>
    typeof c === 'string'
      ? c
      : Array.isArray(c)
        ? c.map((p) => (typeof p === 'string' ? p : (p?.text ?? p?.input_text ?? ''))).join('\n')
        : '';
  const parts = [];
  if (typeof body.instructions === 'string') parts.push(body.instructions);
  for (const m of body.messages ?? body.input ?? []) parts.push(text(m.content));
  const tools = body.tools ?? [];
  return {
    tokens: encode(parts.join('\n')).length + encode(JSON.stringify(tools)).length,
    tools: tools.length,
  };
}

async function serverFor(agent, turns) {
  return agent.wire === 'responses' ? responsesServer(turns) : chatServer(turns);
}

/** A trivial one-shot ("hi" answered "OK"): wall, launch → first model request, peak RSS, the first request's size. */
async function trivial(agent, verb) {
  const server = await serverFor(agent, agent.trivial());
  const cwd = folder('trivial', { 'README.md': '# demo\n' }, true);
  const run = await timed(agent.command(server.url, 'hi', verb), cwd);
  await server.close();
  if (process.env.KEEL_PEERS_DEBUG)
    process.stderr.write(
      `${agent.label}: ${server.arrivals.map((a) => `${a.method} ${a.path} @${(Number(a.at - run.t0) / 1e6).toFixed(0)}`).join(', ')}; exit @${run.ms.toFixed(0)}\n${run.stderr}\n`,
    );
  const first = server.arrivals.find(isModelRequest);
  if (run.code !== 0 || !first)
    throw new Error(
      `exit ${run.code}, ${first ? 'a' : 'no'} model request; stderr: ${run.stderr.trim().split('\n').slice(-4).join(' | ')}`,
    );
  return {
    ms: run.ms,
    firstMs: Number(first.at - run.t0) / 1e6,
    rssMb: run.rssMb,
    ...requestTokens(first.body),
    toolNames: (first.body.tools ?? []).map((t) => t.name ?? t.function?.name ?? t.type),
  };
}

/** The 3-step task (read a file, edit it, answer) in a fresh git repository: wall and request bytes. */
async function threeSteps(agent) {
  const server = await serverFor(agent, agent.steps);
  const cwd = folder('steps', { 'src/greet.js': GREET_BEFORE, 'README.md': '# demo\n' }, true);
  const run = await timed(agent.command(server.url, TASK, 'edit'), cwd);
  await server.close();
  const requests = server.arrivals.filter(isModelRequest);
  const landed = readFileSync(join(cwd, 'src/greet.js'), 'utf8') === GREET_AFTER;
  if (run.code !== 0 || !landed || requests.length !== 3) {
    // what the agent offered and what its tools answered: enough to see which call it did not take
    const offered = (requests[0]?.body.tools ?? []).map((t) => t.name ?? t.function?.name ?? t.type);
    const last = requests.at(-1)?.body;
    const answered = (last?.messages ?? last?.input ?? [])
      .slice(-1)
      .map((m) => JSON.stringify(m).slice(0, 300));
    throw new Error(
      `exit ${run.code}, edit ${landed ? 'landed' : 'did not land'}, ${requests.length} model requests; tools: ${offered.join(', ')}; last input: ${answered.join(' ')}; stderr: ${run.stderr.trim().split('\n').slice(-4).join(' | ')}`,
    );
  }
  const bytes = server.arrivals.reduce(
    (n, a) =>
      n +
      (a.body === undefined
        ? 0
        : Number(a.headers['content-length'] ?? Buffer.byteLength(JSON.stringify(a.body)))),
    0,
  );
  return { ms: run.ms, bytes };
}

// ---- the table

function median(xs) {
  const s = xs.filter(Number.isFinite).sort((a, b) => a - b);
  if (!s.length) return Number.NaN;
  const i = (s.length - 1) / 2;
  return ((s[Math.floor(i)] ?? 0) + (s[Math.ceil(i)] ?? 0)) / 2;
}
const fmt = (n) => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : '—');
const ratio = (a, b) => (Number.isFinite(a) && Number.isFinite(b) && b > 0 ? `${(a / b).toFixed(2)}` : '—');

async function inside() {
  const missing = JSON.parse(process.env.KEEL_PEERS_MISSING ?? '{}');
  const notes = Object.entries(missing).map(([id, why]) => `${AGENTS[id].label}: not installed (${why})`);
  const links = spawnSync('ip', ['-o', 'link'], { encoding: 'utf8' }).stdout.trim().split('\n');
  const columns = [
    { id: 'keel-ask', agent: AGENTS.keel, verb: 'ask', label: 'keel ask' },
    { id: 'keel-edit', agent: AGENTS.keel, verb: 'edit', label: 'keel edit' },
    ...['codex', 'pi']
      .filter((id) => !missing[id])
      .map((id) => ({ id, agent: AGENTS[id], label: AGENTS[id].label })),
  ];
  // KEEL_PEERS_ONLY=codex,keel-ask: a subset, for looking into one agent
  const only = process.env.KEEL_PEERS_ONLY?.split(',');
  if (only) columns.splice(0, columns.length, ...columns.filter((c) => only.includes(c.id)));
  const samples = Object.fromEntries(
    columns.map((c) => [c.id, { trivial: [], steps: [], failed: undefined }]),
  );
  // interleaved round by round, so load from elsewhere on the machine lands on every agent alike
  for (let round = 0; round < RUNS + 1; round++) {
    for (const c of columns) {
      const s = samples[c.id];
      if (s.failed) continue;
      try {
        const t = await trivial(c.agent, c.verb);
        // the edit column's 3-step is keel's row; keel ask does not edit
        const e = c.id === 'keel-ask' ? undefined : await threeSteps(c.agent);
        if (round === 0) {
          s.first = t; // the warm-up round: its request's size is kept, its times are not
          continue;
        }
        s.trivial.push(t);
        if (e) s.steps.push(e);
      } catch (err) {
        s.failed = err.message;
      }
    }
  }
  for (const c of columns)
    if (samples[c.id].failed) notes.push(`${c.label}: could not run here (${samples[c.id].failed})`);

  const m = (id, pick, from = 'trivial') => median(samples[id][from].map(pick));
  const rows = [
    ['first request, tokens (o200k)', (id) => samples[id].first?.tokens ?? Number.NaN],
    ['tools offered in the first request', (id) => samples[id].first?.tools ?? Number.NaN],
    ['launch to first model request, ms', (id) => m(id, (t) => t.firstMs)],
    ['trivial one-shot wall, ms', (id) => m(id, (t) => t.ms)],
    ['trivial peak RSS, MB', (id) => m(id, (t) => t.rssMb)],
    ['3-step read/edit wall, ms', (id) => m(id, (e) => e.ms, 'steps'), 'steps'],
    ['3-step request bytes', (id) => m(id, (e) => e.bytes, 'steps'), 'steps'],
  ];
  const peers = columns.filter((c) => !c.id.startsWith('keel'));
  const head = [
    'figure',
    ...columns.map((c) => c.label),
    ...peers.map((p) => `keel/${p.label.split(' ')[0]}`),
  ];
  const lines = [
    `| ${head.join(' | ')} |`,
    `|---|${head
      .slice(1)
      .map(() => '---:')
      .join('|')}|`,
  ];
  for (const [name, value, kind] of rows) {
    const cells = columns.map((c) => (kind === 'steps' && c.id === 'keel-ask' ? '—' : fmt(value(c.id))));
    // keel's figure to compare: ask for a one-shot, edit for the 3-step task
    const keel = value(kind === 'steps' ? 'keel-edit' : 'keel-ask');
    const ratios = peers.map((p) => ratio(keel, value(p.id)));
    lines.push(`| ${name} | ${[...cells, ...ratios].join(' | ')} |`);
  }
  const date = new Date().toISOString().slice(0, 10);
  process.stdout.write(
    [
      `keel beside its peers · ${date} · node ${process.version} · medians of ${RUNS} (after a warm-up round) · scripted model on 127.0.0.1`,
      `network namespace: ${links.map((l) => l.split(':')[1]?.trim()).join(', ')} (nothing leaves the machine)`,
      '',
      lines.join('\n'),
      '',
      'tokens: system/instructions + every message of the first request + its tool schemas (JSON), o200k. keel/X: keel ask for one-shot rows, keel edit for 3-step rows.',
      ...columns
        .filter((c) => samples[c.id].first)
        .map((c) => `tools of ${c.label}: ${samples[c.id].first.toolNames.join(', ')}`),
      ...notes.map((n) => `note: ${n}`),
      '',
    ].join('\n'),
  );
  rmSync(scratch, { recursive: true, force: true });
}

await inside();
