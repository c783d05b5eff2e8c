/**
 * Retrieval quality on two labelled sets, each notes.txt and queries.txt (queries labelled by hand with
 * the ids of the notes that answer them, in four kinds: paraphrase, inflection, identifier, multi):
 * bench/data/recall/ (360 notes about an invented payments service, "ledgerline"), the set search is
 * tuned on, and bench/data/recall-heldout/ (133 notes about an invented warehouse service, "stockroom"),
 * written and committed before any tuning and never tuned on: its numbers are the honest ones. The notes go into a temporary KEEL_HOME
 * through the real add path of the built code (dist/), and every query runs through Memory.search three
 * ways: BM25 alone, the offline vectors alone and hybrid (search's `arm` option, the same code as
 * `keel memory search`). Prints recall@10 and MRR@10 per arm, overall and per kind, as a Markdown table.
 *
 *   npm run build && node bench/recall.mjs [--misses] [--pool]   (--misses lists each arm's missed labels;
 *   --pool scores only the full-text pool, as a project past FULL_SCAN_MAX items does)
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Memory } from '../dist/memory/memory.js';
import { openDb } from '../dist/store/db.js';

const here = dirname(fileURLToPath(import.meta.url));
const K = 10;
const ARMS = ['bm25', 'vector', 'hybrid'];
const KINDS = ['paraphrase', 'inflection', 'identifier', 'multi'];
const showMisses = process.argv.includes('--misses');
// --pool: score only the full-text pool, as a project past FULL_SCAN_MAX items does, instead of every vector
const pool = process.argv.includes('--pool');

/** Lines of `id | field | ... | text`, comments and blanks skipped. */
function table(dir, file, fields) {
  return readFileSync(join(here, 'data', dir, file), 'utf8')
    .split('\n')
    .filter((l) => l.trim() && !l.startsWith('#'))
    .map((l) => {
      const parts = l.split(' | ');
      if (parts.length !== fields) throw new Error(`${dir}/${file}: a line without ${fields} fields: ${l}`);
      return parts.map((p) => p.trim());
    });
}

async function run(dir, name) {
  const notes = table(dir, 'notes.txt', 3).map(([id, kind, text]) => ({ id, kind, text }));
  const queries = table(dir, 'queries.txt', 4).map(([id, kind, relevant, text]) => ({
    id,
    kind,
    relevant: relevant.split(','),
    text,
  }));
  const known = new Set(notes.map((n) => n.id));
  for (const q of queries) {
    if (!KINDS.includes(q.kind)) throw new Error(`${dir}: query ${q.id}: unknown kind ${q.kind}`);
    for (const r of q.relevant) if (!known.has(r)) throw new Error(`${dir}: query ${q.id}: no note ${r}`);
  }

  const home = mkdtempSync(join(tmpdir(), 'keel-bench-recall-'));
  const db = openDb(join(home, 'keel.db'));
  const memory = new Memory(db, `git:${dir}`, {
    archiveDir: join(home, 'memory-archive'),
    ...(pool ? { fullScanMax: 0 } : {}),
  });
  const labelOf = new Map();
  for (const n of notes) {
    const { item, folded } = await memory.add({ kind: n.kind, text: n.text, author: 'user' });
    if (folded) throw new Error(`${dir}: note ${n.id} duplicates another`);
    labelOf.set(item.id, n.id);
  }

  const scores = {}; // arm -> kind -> [{recall, rr}]
  const misses = {};
  for (const arm of ARMS) {
    scores[arm] = Object.fromEntries([...KINDS, 'all'].map((k) => [k, []]));
    misses[arm] = [];
    for (const q of queries) {
      const hits = (await memory.search(q.text, K, { arm })).map((h) => labelOf.get(h.item.id));
      const relevant = new Set(q.relevant);
      const found = hits.filter((h) => relevant.has(h)).length;
      const first = hits.findIndex((h) => relevant.has(h));
      const s = { recall: found / relevant.size, rr: first < 0 ? 0 : 1 / (first + 1) };
      scores[arm][q.kind].push(s);
      scores[arm].all.push(s);
      const missed = q.relevant.filter((r) => !hits.includes(r));
      if (missed.length)
        misses[arm].push(
          `${q.id} "${q.text}": missed ${missed.join(',')}; top ${hits.slice(0, 5).join(',')}`,
        );
    }
  }
  db.close();
  rmSync(home, { recursive: true, force: true });

  const mean = (xs, f) => xs.reduce((a, x) => a + f(x), 0) / (xs.length || 1);
  const cell = (arm, kind) =>
    `${mean(scores[arm][kind], (s) => s.recall).toFixed(3)} / ${mean(scores[arm][kind], (s) => s.rr).toFixed(3)}`;
  console.log(
    `\n${name} (${dir}): ${notes.length} notes, ${queries.length} queries; recall@${K} / MRR@${K}\n`,
  );
  console.log(
    `| arm | all (${queries.length}) | ${KINDS.map((k) => `${k} (${scores.bm25[k].length})`).join(' | ')} |`,
  );
  console.log(`|---|---|${KINDS.map(() => '---').join('|')}|`);
  for (const arm of ARMS)
    console.log(`| ${arm} | ${cell(arm, 'all')} | ${KINDS.map((k) => cell(arm, k)).join(' | ')} |`);
  if (showMisses)
    for (const arm of ARMS) {
      console.log(`\n${arm} misses:`);
      for (const m of misses[arm]) console.log(`  ${m}`);
    }
}

await run('recall', 'ledgerline (tuned on)');
await run('recall-heldout', 'stockroom (held out)');
