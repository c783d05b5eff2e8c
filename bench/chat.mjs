/**
 * `keel chat` for a person: how soon the prompt takes input, how soon a keystroke shows while an
 * answer streams, and what rendering a 2,000-line transcript costs. The real binary in tmux with the
 * in-process scripted model (no network, no real model). Prints a Markdown table; writes
 * bench/results/chat.json.
 *
 *   npm run build && node bench/chat.mjs
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';

const RUNS = { ready: 9, keys: 15 };
const BIN = new URL('../bin/keel.js', import.meta.url).pathname;
const scratch = mkdtempSync(join(tmpdir(), 'keel-bench-chat-'));
const SOCKET = `keel-bench-chat-${process.pid}`;
const tmux = (...args) => execFileSync('tmux', ['-L', SOCKET, ...args], { encoding: 'utf8' });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const i = (s.length - 1) / 2;
  return ((s[Math.floor(i)] ?? 0) + (s[Math.ceil(i)] ?? 0)) / 2;
};
const p90 = (xs) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(0.9 * xs.length))];

const repo = join(scratch, 'repo');
mkdirSync(repo);
execFileSync('git', ['init', '-q', '-b', 'main'], { cwd: repo });
writeFileSync(join(repo, 'README.md'), '# bench\n');
const home = join(scratch, 'home');
mkdirSync(home);

const longAnswer = Array.from(
  { length: 400 },
  (_, i) => `Line ${i}: some **streamed** text with \`code\`.`,
).join('\n');
const script = join(scratch, 'script.json');
writeFileSync(script, JSON.stringify({ turns: [{ text: longAnswer, chunk_size: 40, chunk_delay_ms: 8 }] }));

function start(name, marker) {
  const env = [
    `PATH=${process.env.PATH}`,
    `HOME=${home}`,
    `KEEL_HOME=${home}`,
    'TERM=xterm-256color',
    'LANG=C.UTF-8',
    ...(marker ? [`KEEL_CHAT_READY=${marker}`] : []),
  ];
  const cmd = `env -i ${env.map((e) => `'${e}'`).join(' ')} '${process.execPath}' '${BIN}' chat --provider scripted --script '${script}' --model bench; sleep 600`;
  tmux('new-session', '-d', '-x', '120', '-y', '40', '-s', name, '-c', repo, cmd);
}
const screen = (name) => tmux('capture-pane', '-p', '-t', name);

async function until(fn, ms = 20_000) {
  const end = Date.now() + ms;
  for (;;) {
    if (fn()) return;
    if (Date.now() > end) throw new Error('timed out');
    await sleep(1);
  }
}

// one session lives throughout, so killing the others never takes the tmux server down mid-run
tmux('new-session', '-d', '-s', 'keeper', 'sleep 3600');

// ---- 1. launch to the prompt taking input
const ready = { inProcess: [], wall: [] };
for (let i = 0; i < RUNS.ready + 1; i++) {
  const marker = join(scratch, `ready-${i}`);
  const name = `ready${i}`;
  const t0 = performance.now();
  start(name, marker);
  await until(() => existsSync(marker) && readFileSync(marker, 'utf8').endsWith('\n'));
  const wall = performance.now() - t0;
  if (i > 0) {
    // the first launch warms the disk cache; it is not counted
    ready.inProcess.push(Number(readFileSync(marker, 'utf8')));
    ready.wall.push(wall);
  }
  tmux('kill-session', '-t', name);
}

// the floor on this machine now: node itself starting and writing the same marker
const floor = [];
const floorScript = join(scratch, 'floor.cjs');
writeFileSync(
  floorScript,
  "require('fs').writeFileSync(process.argv[2], performance.now().toFixed(1) + '\\n');\n",
);
for (let i = 0; i < RUNS.ready; i++) {
  const marker = join(scratch, `floor-${i}`);
  const name = `floor${i}`;
  tmux(
    'new-session',
    '-d',
    '-x',
    '120',
    '-y',
    '40',
    '-s',
    name,
    `'${process.execPath}' '${floorScript}' '${marker}'; sleep 600`,
  );
  await until(() => existsSync(marker) && readFileSync(marker, 'utf8').endsWith('\n'));
  floor.push(Number(readFileSync(marker, 'utf8')));
  tmux('kill-session', '-t', name);
}

// ---- 2. keystroke to screen, idle and while a long answer streams
async function keystrokes(name, n) {
  const out = [];
  for (let i = 0; i < n; i++) {
    const typed = 'q'.repeat(i + 1);
    const t0 = performance.now();
    tmux('send-keys', '-t', name, '-l', 'q');
    await until(() => screen(name).includes(typed));
    out.push(performance.now() - t0);
  }
  tmux('send-keys', '-t', name, 'C-u');
  return out;
}
const keysName = 'keys';
const marker = join(scratch, 'ready-keys');
start(keysName, marker);
await until(() => existsSync(marker));
const idle = await keystrokes(keysName, RUNS.keys);
tmux('send-keys', '-t', keysName, '-l', 'stream please');
tmux('send-keys', '-t', keysName, 'Enter');
await until(() => screen(keysName).includes('Line 3:'));
const streaming = await keystrokes(keysName, RUNS.keys);
const stillStreaming = !screen(keysName).includes('Line 399:');
tmux('kill-session', '-t', keysName);

// ---- 3. render cost of a 2,000-line transcript (the transcript component on its own)
const { Transcript } = await import('../dist/chat/transcript.js');
const transcript = new Transcript(repo);
let n = 0;
while (transcript.render(120).length < 2000) {
  n++;
  transcript.user(`question ${n}: what does module ${n} do?`);
  transcript.text(
    `Module ${n} **parses** the input.\n\n- it reads \`src/m${n}.ts\`\n- it returns a tree\n\n\`\`\`ts\nexport function m${n}() {\n  return ${n};\n}\n\`\`\`\nThat is all.`,
  );
  transcript.event(
    {
      type: 'assistant_message',
      round: 1,
      model: 'm',
      text: '',
      tool_calls: [{ id: `c${n}`, name: 'read_file', arguments: `{"path":"src/m${n}.ts"}` }],
      recovered: 0,
      usage: { input: 1, output: 1, reported: true },
      cost_usd: null,
    },
    false,
  );
  transcript.event({ type: 'gate_decision', call_id: `c${n}`, tool: 'read_file', decision: 'allow' }, false);
  transcript.event(
    { type: 'tool_start', call_id: `c${n}`, tool: 'read_file', args: { path: `src/m${n}.ts` } },
    false,
  );
  transcript.event(
    {
      type: 'tool_result',
      call_id: `c${n}`,
      tool: 'read_file',
      output: 'a\nb\nc',
      is_error: false,
      files_changed: [],
      diff_lines: 0,
      duration_ms: 3,
    },
    false,
  );
}
const lines = transcript.render(120).length;
const timeIt = (fn, reps) => {
  const xs = [];
  for (let i = 0; i < reps; i++) {
    const t0 = performance.now();
    fn();
    xs.push(performance.now() - t0);
  }
  return median(xs);
};
const cold = timeIt(() => {
  transcript.invalidate();
  transcript.render(120);
}, 15);
const warm = timeIt(() => transcript.render(120), 50);
// a frame while an answer streams: one chunk more on the newest block, then the whole render
const streamingFrame = timeIt(() => {
  transcript.text(' more streamed words');
  transcript.render(120);
}, 50);

const results = {
  machine: { cpus: cpus().length, load: loadavg()[0] },
  ready_ms: {
    in_process_median: median(ready.inProcess),
    in_process_p90: p90(ready.inProcess),
    wall_median: median(ready.wall),
    node_floor_median: median(floor),
  },
  keystroke_ms: {
    idle_median: median(idle),
    idle_p90: p90(idle),
    streaming_median: median(streaming),
    streaming_p90: p90(streaming),
    still_streaming_at_end: stillStreaming,
  },
  render_ms: { lines, cold_median: cold, warm_median: warm, streaming_frame_median: streamingFrame },
};
const f = (x) => x.toFixed(1);
console.log(`| measure | keel chat | target |
|---|---|---|
| launch to prompt ready (in process, median / p90) | ${f(results.ready_ms.in_process_median)} / ${f(results.ready_ms.in_process_p90)} ms | ≤ 200 ms |
| launch to prompt ready (tmux spawn to marker, median) | ${f(results.ready_ms.wall_median)} ms | |
| node alone, start to the same marker (median, the floor now) | ${f(results.ready_ms.node_floor_median)} ms | |
| keystroke to screen, idle (median / p90) | ${f(results.keystroke_ms.idle_median)} / ${f(results.keystroke_ms.idle_p90)} ms | |
| keystroke to screen, while streaming (median / p90) | ${f(results.keystroke_ms.streaming_median)} / ${f(results.keystroke_ms.streaming_p90)} ms${stillStreaming ? '' : ' (stream ended early)'} | |
| render ${lines}-line transcript, cold (median) | ${f(cold)} ms | |
| render ${lines}-line transcript, cached (median) | ${f(warm)} ms | |
| one streaming frame on that transcript (median) | ${f(streamingFrame)} ms | |

${cpus().length} cores, load ${loadavg()[0].toFixed(2)}; keystroke times include tmux's own send-keys and capture-pane (about the idle figure).`);
mkdirSync(new URL('results/', import.meta.url), { recursive: true });
writeFileSync(new URL('results/chat.json', import.meta.url), `${JSON.stringify(results, null, 2)}\n`);
try {
  tmux('kill-server');
} catch {}
rmSync(scratch, { recursive: true, force: true });
