/**
 * Sessions read back from the log: how long resuming a long session takes to reach its first new
 * request, next to a fresh session's launch in the same sitting, and what compaction does to the
 * tokens each request carries on a long scripted session. The real binary against the scripted
 * server on 127.0.0.1; no real model. Prints a Markdown table; writes bench/results/sessions.json.
 *
 *   npm run build && node bench/sessions.mjs
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { serve } from './serve.mjs';
import { assertOk, runKeel } from './spawn-timed.mjs';

const MODEL = 'bench-model';
const RUNS = 7;
const scratch = mkdtempSync(join(tmpdir(), 'keel-bench-sessions-'));
const usage = { usage: { prompt_tokens: 100, completion_tokens: 10 } };
const flags = (url) => ['--provider', 'openai', '--base-url', url, '--model', MODEL];
const isChat = (r) => r.method === 'POST' && r.path === '/v1/chat/completions';

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const i = (s.length - 1) / 2;
  return ((s[Math.floor(i)] ?? 0) + (s[Math.ceil(i)] ?? 0)) / 2;
}
const quantile = (xs, q) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))];

function folder(name, files) {
  const dir = mkdtempSync(join(scratch, `${name}-`));
  for (const [path, text] of Object.entries(files)) writeFileSync(join(dir, path), text);
  return dir;
}

function events(home, id) {
  const db = new Database(join(home, 'keel.db'), { readonly: true });
  try {
    return db
      .prepare('SELECT type, data FROM events WHERE session_id = ? ORDER BY seq')
      .all(id)
      .map((r) => ({ type: r.type, data: JSON.parse(r.data) }));
  } finally {
    db.close();
  }
}

/** A session of about `target` events: one read_file round after another, each of another file. */
async function longSession(target) {
  const rounds = Math.ceil(target / 5);
  const files = Object.fromEntries(Array.from({ length: rounds }, (_, i) => [`f${i}.txt`, `file ${i}\n`]));
  const cwd = folder('long', files);
  const home = mkdtempSync(join(scratch, 'home-'));
  const turns = [
    ...Array.from({ length: rounds }, (_, i) => ({
      tool_calls: [{ id: `c${i}`, name: 'read_file', arguments: { path: `f${i}.txt` } }],
      ...usage,
    })),
    { text: 'read them all', ...usage },
  ];
  const { server } = await serve({ turns }, MODEL);
  const run = await runKeel(
    ['ask', '--json', '--max-rounds', String(rounds + 5), ...flags(server.url), 'read every file'],
    {
      cwd,
      home,
    },
  );
  assertOk(run, 'long session');
  await server.close();
  const id = JSON.parse(run.stdout).session_id;
  return { cwd, home, id, count: events(home, id).length };
}

/** Spawn → the first chat request at the server, for `args`. */
async function toFirstRequest(args, cwd, home) {
  const { server, arrivals } = await serve({ turns: [{ text: 'OK', ...usage }] }, MODEL);
  const run = await runKeel([...args, ...flags(server.url)], { cwd, home });
  assertOk(run, args.join(' '));
  await server.close();
  const first = arrivals.find(isChat);
  if (!first) throw new Error(`${args.join(' ')}: no chat request`);
  return { ms: Number(first.at - run.t0) / 1e6, body: first.body };
}

/** Tokens per request (keel's estimate, from model_request events) over a long session, with or without compaction. */
async function compactionRun(compact) {
  const rounds = 24;
  const big = (i) =>
    Array.from({ length: 60 }, (_, j) => `file ${i} line ${j}: ${(i * 7919 + j * 104729) % 100003}\n`).join(
      '',
    );
  const files = Object.fromEntries(Array.from({ length: rounds }, (_, i) => [`f${i}.txt`, big(i)]));
  const cwd = folder(compact ? 'compact' : 'plain', files);
  const home = mkdtempSync(join(scratch, 'home-'));
  const window = 8000;
  // the summaries are answered by turns the scripted server hands out in order: one per compaction,
  // so each read turn is followed by a text turn only when keel asks for a summary (task routing)
  const turns = [
    ...Array.from({ length: rounds }, (_, i) => ({
      task: 'read every file',
      tool_calls: [{ id: `c${i}`, name: 'read_file', arguments: { path: `f${i}.txt` } }],
      ...usage,
    })),
    { task: 'read every file', text: 'done', ...usage },
    ...Array.from({ length: rounds }, () => ({
      task: '[tool result: read_file]',
      text: 'Summary: read files f0.txt onward; each holds 60 numbered lines of values.',
      ...usage,
    })),
  ];
  writeFileSync(
    join(home, 'config.toml'),
    compact ? `context_window = ${window}\n` : `context_window = ${window * 100}\n`,
  );
  const { server } = await serve({ turns }, MODEL);
  const run = await runKeel(
    ['ask', '--json', '--max-rounds', '60', ...flags(server.url), 'read every file'],
    {
      cwd,
      home,
    },
  );
  assertOk(run, 'compaction run');
  await server.close();
  const id = JSON.parse(run.stdout).session_id;
  const log = events(home, id);
  const sizes = log.filter((e) => e.type === 'model_request').map((e) => e.data.est_tokens);
  return { sizes, compactions: log.filter((e) => e.type === 'compaction').length, window };
}

async function main() {
  const long = await longSession(1000);
  const fresh = [];
  const resumed = [];
  for (let i = 0; i < RUNS; i++) {
    // interleaved, so load lands on both alike; each resume adds a few events, which is noise at 1,000
    fresh.push((await toFirstRequest(['ask', 'hi'], long.cwd, mkdtempSync(join(scratch, 'home-')))).ms);
    const r = await toFirstRequest(['sessions', 'resume', long.id, '-m', `and ${i}?`], long.cwd, long.home);
    resumed.push(r.ms);
    if (i === 0 && r.body.messages.length < long.count / 3)
      throw new Error('the resumed request lost its history');
  }
  const plain = await compactionRun(false);
  const compacted = await compactionRun(true);

  const fmt = (n) => (Number.isFinite(n) ? n.toFixed(0) : '—');
  const rows = [
    ['session log replayed', `${long.count} events`, ''],
    ['fresh `keel ask` → first chat request, median', `${fmt(median(fresh))} ms`, ''],
    [
      `\`keel sessions resume\` of ${long.count} events → first chat request, median`,
      `${fmt(median(resumed))} ms`,
      '≤ 100 ms',
    ],
    ['… resume over fresh (the replay itself)', `${fmt(median(resumed) - median(fresh))} ms`, ''],
    [
      `tokens per request, ${plain.sizes.length} requests, no compaction: median / max`,
      `${fmt(median(plain.sizes))} / ${fmt(Math.max(...plain.sizes))}`,
      '',
    ],
    [
      `… with compaction at 0.8 × ${compacted.window} (${compacted.compactions} compactions): median / max`,
      `${fmt(median(compacted.sizes))} / ${fmt(Math.max(...compacted.sizes))}`,
      `≤ ${0.8 * compacted.window} before each request`,
    ],
    [
      '… p90 without / with',
      `${fmt(quantile(plain.sizes, 0.9))} / ${fmt(quantile(compacted.sizes, 0.9))}`,
      '',
    ],
  ];
  const table = [
    '| measure | keel | target |',
    '| --- | --- | --- |',
    ...rows.map((r) => `| ${r.join(' | ')} |`),
  ].join('\n');
  process.stdout.write(
    `keel sessions bench · node ${process.version} · ${RUNS} runs interleaved · scripted server, no real model\n\n${table}\n`,
  );
  const dir = new URL('./results/', import.meta.url);
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    new URL('sessions.json', dir),
    `${JSON.stringify({ date: new Date().toISOString(), events: long.count, fresh, resumed, plain, compacted }, null, 2)}\n`,
  );
}

await main();
