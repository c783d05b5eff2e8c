/**
 * Memory at scale: insert N items through the real add path (dedup, IDF counts, offline vectors, FTS),
 * then time hybrid search (BM25 + vectors, fused) at 10k and 100k items: p50/p95 over 200 queries, and
 * the first search in the process (up to FULL_SCAN_MAX items it loads the vectors into one typed array;
 * past it, it scores only the full-text pool). Synthetic notes drawn from a Zipf-like
 * vocabulary with identifiers mixed in; no model. Prints a Markdown table.
 *
 *   npm run build && node bench/memory.mjs [N=100000]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Memory } from '../dist/memory/memory.js';
import { openDb } from '../dist/store/db.js';

const N = Number(process.argv[2] ?? 100_000);
const QUERIES = 200;
const scratch = mkdtempSync(join(tmpdir(), 'keel-bench-memory-'));

// a deterministic generator, so every run searches the same corpus
let seed = 42;
const rand = () => {
  seed = (seed * 1103515245 + 12345) % 2147483648;
  return seed / 2147483648;
};
const SYLLABLES = [
  'ka',
  'lo',
  're',
  'mi',
  'tun',
  'sa',
  'ver',
  'po',
  'dex',
  'li',
  'nor',
  'ba',
  'qui',
  'fen',
  'tra',
  'os',
];
const vocab = Array.from({ length: 6000 }, (_, i) => {
  let w = '';
  for (let n = 2 + (i % 3); n > 0; n--) w += SYLLABLES[Math.floor(rand() * SYLLABLES.length)];
  return `${w}${i % 7 === 0 ? 'ing' : i % 11 === 0 ? 'ed' : ''}`;
});
const zipf = () => vocab[Math.floor(vocab.length * rand() ** 2.5)];
function note(i) {
  const words = Array.from({ length: 8 + Math.floor(rand() * 12) }, zipf);
  if (i % 5 === 0) words.push(`src/${zipf()}/${zipf()}.ts`);
  if (i % 7 === 0) words.push(`${zipf()}_${zipf()}`.toLowerCase());
  return `${words.join(' ')} (${i})`;
}

const quantile = (xs, q) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))];
const db = openDb(join(scratch, 'keel.db'));
const memory = new Memory(db, 'git:bench', { archiveDir: join(scratch, 'archive') });
const texts = [];

async function measure(label) {
  const first = performance.now();
  await memory.search(`${zipf()} ${zipf()}`, 10);
  const load = performance.now() - first;
  const times = { hybrid: [], bm25: [], vector: [] };
  for (let q = 0; q < QUERIES; q++) {
    const source = texts[Math.floor(rand() * texts.length)].split(' ');
    const query = [0, 1, 2].map(() => source[Math.floor(rand() * (source.length - 1))]).join(' ');
    for (const [name, run] of [
      ['hybrid', () => memory.search(query, 10)],
      ['bm25', () => memory.search(query, 50, { arm: 'bm25' })],
      ['vector', () => memory.search(query, 50, { arm: 'vector' })],
    ]) {
      const t = performance.now();
      await run();
      times[name].push(performance.now() - t);
    }
  }
  const p = (name, q) => quantile(times[name], q);
  return {
    label,
    load,
    p50: p('hybrid', 0.5),
    p95: p('hybrid', 0.95),
    parts: `${p('bm25', 0.5).toFixed(1)} / ${p('bm25', 0.95).toFixed(1)} ms, ${p('vector', 0.5).toFixed(1)} / ${p('vector', 0.95).toFixed(1)} ms`,
  };
}

const rows = [];
const started = performance.now();
let mark = started;
for (let i = 0; i < N; i++) {
  const text = note(i);
  texts.push(text);
  await memory.add({ kind: 'note', text, author: 'user' });
  if (i + 1 === 10_000 || i + 1 === N) {
    const insertMs = performance.now() - mark;
    rows.push({
      ...(await measure(`${i + 1} items`)),
      insertMs,
      inserted: i + 1 - (rows.at(-1)?.count ?? 0),
      count: i + 1,
    });
    mark = performance.now();
  }
}
db.close();
rmSync(scratch, { recursive: true, force: true });

console.log(
  '| items | insert (per item) | first search | hybrid p50 | hybrid p95 | alone p50 / p95: BM25, vectors |',
);
console.log('|---|---|---|---|---|---|');
for (const r of rows)
  console.log(
    `| ${r.count} | ${(r.insertMs / r.inserted).toFixed(2)} ms | ${r.load.toFixed(1)} ms | ${r.p50.toFixed(1)} ms | ${r.p95.toFixed(1)} ms | ${r.parts} |`,
  );
