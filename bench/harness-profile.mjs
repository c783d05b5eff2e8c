/**
 * Where keel's harness time per round goes: one long `keel edit` session (N reads and N edits of
 * distinct files) against the scripted model, run under `node --cpu-prof`. Prints the p50 harness time
 * per round from the event log (as bench/run.mjs reads it) and the profile's top functions by self
 * time. The whole process is profiled: start-up is in it, and shrinks with N.
 *
 *   node bench/harness-profile.mjs [N=30] [PROFILE_DIR | none]     (none: no profiler, the times alone)
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { serve } from './serve.mjs';
import { BIN, runNode } from './spawn-timed.mjs';

const N = Number(process.argv[2] ?? 30);
const profile = process.argv[3] !== 'none';
const profDir = profile ? (process.argv[3] ?? mkdtempSync(join(tmpdir(), 'keel-prof-'))) : '';
const cwd = mkdtempSync(join(tmpdir(), 'keel-hp-'));
const home = mkdtempSync(join(tmpdir(), 'keel-hp-home-'));
const turns = [];
for (let i = 0; i < N; i++) {
  mkdirSync(join(cwd, 'src'), { recursive: true });
  writeFileSync(join(cwd, `src/f${i}.js`), `export const v${i} = 'before';\n`);
  turns.push({ tool_calls: [{ id: `r${i}`, name: 'read_file', arguments: { path: `src/f${i}.js` } }] });
  turns.push({
    tool_calls: [
      {
        id: `e${i}`,
        name: 'edit_file',
        arguments: { path: `src/f${i}.js`, old_string: 'before', new_string: 'after' },
      },
    ],
  });
}
turns.push({ text: 'done' });
for (const t of turns) t.usage = { prompt_tokens: 1000, completion_tokens: 10 };
const git = (...a) => spawnSync('git', a, { cwd, encoding: 'utf8' });
git('init', '-q');
git('add', '-A');
git('-c', 'user.name=b', '-c', 'user.email=b@localhost', 'commit', '-q', '-m', 'start');

const { server } = await serve({ turns }, 'bench-model');
const args = [
  ...(profile ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`, '--cpu-prof-interval=200'] : []),
  process.env.KEEL_BENCH_BIN ?? BIN,
  'edit',
  'go',
  '--provider',
  'openai',
  '--base-url',
  server.url,
  '--model',
  'bench-model',
  '--max-rounds',
  String(2 * N + 5),
];
const run = await runNode(args, { cwd, home });
await server.close();
if (run.code !== 0) throw new Error(`keel exited ${run.code}: ${run.stderr}`);

// harness per round, from the log (as bench/run.mjs)
const db = new Database(join(home, 'keel.db'), { readonly: true });
const sid = db.prepare('SELECT id FROM sessions ORDER BY created_at DESC LIMIT 1').get().id;
const events = db.prepare('SELECT ts, type, data FROM events WHERE session_id = ? ORDER BY seq').all(sid);
db.close();
const gaps = [];
const modelMs = [];
const toolMs = [];
let cur;
for (const e of events) {
  const t = Date.parse(e.ts);
  if (e.type === 'model_request') {
    if (cur) {
      gaps.push(t - cur.answer - cur.toolMs);
      toolMs.push(cur.toolMs);
    }
    cur = { request: t, answer: t, toolMs: 0 };
  } else if (cur && e.type === 'assistant_message') {
    cur.answer = t;
    modelMs.push(t - cur.request);
  } else if (cur && e.type === 'tool_result') cur.toolMs += JSON.parse(e.data).duration_ms;
}
const q = (xs, p) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) * p)];
const line = (what, xs) =>
  `${what} p50 ${q(xs, 0.5)} ms, p10 ${q(xs, 0.1)}, p90 ${q(xs, 0.9)} (${xs.length})`;
console.log(`harness per round: ${line('all', gaps)}; wall ${Math.round(run.ms)} ms`);
// rounds alternate: a read's result goes back, then an edit's (its safety net is in the harness gap)
console.log(
  `  ${line(
    'after a read',
    gaps.filter((_, i) => i % 2 === 0),
  )}`,
);
console.log(
  `  ${line(
    'after an edit',
    gaps.filter((_, i) => i % 2 === 1),
  )}`,
);
console.log(
  `  request to answer (client and scripted server): ${line('', modelMs)}; tools: ${line('', toolMs)}`,
);
if (!profile) process.exit(0);

// the main thread's profile: self time per function
// thread 0 is the main thread (the loop); the safety net's worker thread writes its own profile
const file = readdirSync(profDir)
  .filter((f) => /\.0\.\d+\.cpuprofile$/.test(f))
  .sort()
  .at(-1);
const prof = JSON.parse(readFileSync(join(profDir, file), 'utf8'));
const dt = new Map();
for (let i = 0; i < prof.samples.length; i++)
  dt.set(prof.samples[i], (dt.get(prof.samples[i]) ?? 0) + prof.timeDeltas[i] / 1000);
const byFn = new Map();
let total = 0;
for (const n of prof.nodes) {
  const ms = dt.get(n.id) ?? 0;
  total += ms;
  const f = n.callFrame;
  const key = `${f.functionName || '(anon)'} ${f.url.replace(/^.*\/(node_modules|dist|src)\//, '$1/')}:${f.lineNumber + 1}`;
  byFn.set(key, (byFn.get(key) ?? 0) + ms);
}
console.log(`profile ${Math.round(total)} ms sampled (${join(profDir, file)})`);
for (const [k, ms] of [...byFn].sort((a, b) => b[1] - a[1]).slice(0, 30))
  console.log(`${ms.toFixed(1).padStart(8)} ms ${((100 * ms) / total).toFixed(1).padStart(5)}%  ${k}`);
