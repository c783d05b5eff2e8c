/**
 * Hybrid search: BM25 over the full-text index and cosine similarity over the vectors, fused by
 * normalized scores (see `fuse`): score(d) = bm25(d) / bm25(best) + 0.5 * cos(d) / cos(best), with FTS5's
 * bm25() negated (it is lower-is-better). Equal scores fall back to the older item first.
 */
import type { TermStats } from './embed.js';
import type { MemoryStore, VectorRow } from './memory-store.js';
import { camelWords, contentWords, identifierTerms } from './text-features.js';

/** How much the vector list counts next to BM25 in the fused score (BM25's best counts 1). */
export const VECTOR_WEIGHT = 0.5;
/** How deep each list is read before fusing. */
export const CANDIDATES = 50;

/** Past this many items, a word in more than COMMON_SHARE of them is left out of the full-text query. */
const COMMON_FROM = 1000;
const COMMON_SHARE = 0.05;

/**
 * The FTS5 query for a text: every content word and camelCase part, the `extra` words (the query's
 * synonyms), OR every identifier (whole, in the idents column).
 * With `stats`, words most items have are dropped when rarer ones remain (they add little to BM25 and
 * make it score a large share of the corpus); the vector list still sees them.
 */
export function ftsQuery(text: string, stats?: TermStats, extra: string[] = []): string | undefined {
  const quote = (t: string) => `"${t.replace(/"/g, '')}"`;
  // camelCase parts as words too: `webhookSecret` finds LEDGER_WEBHOOK_SECRET, whose words are in the text
  let words = [...new Set([...contentWords(text), ...camelWords(text), ...extra])];
  if (stats && stats.count >= COMMON_FROM) {
    const rare = words.filter((w) => stats.df(w) <= COMMON_SHARE * stats.count);
    if (rare.length) words = rare;
  }
  const terms = words.map(quote);
  const idents = [...new Set(identifierTerms(text))].map((t) => `idents:${quote(t)}`);
  const all = [...terms, ...idents];
  return all.length ? all.join(' OR ') : undefined;
}

/**
 * Up to this many items, the offline vector list scores every item (the vectors held in memory, loaded
 * on the first search: 100 ms at 10k items); past it, only the full-text query's best POOL rows (its
 * words, synonyms and identifiers, the porter tokenizer meeting inflections), so the first search never
 * reads every vector (1.0-3.2 s at 100k items). Four-letter prefixes in that query, to catch what the
 * embedder's n-grams would, doubled the index's time at 100k items and found nothing more on either
 * recall set.
 */
export const FULL_SCAN_MAX = 20_000;
/** How many of the index's best rows the vector list scores past FULL_SCAN_MAX. */
export const POOL = 1000;

/** The `limit` rows (offline int8 vectors) most similar to `query`, best first, at least `minSimilarity`. */
export function nearestAmong(
  rows: VectorRow[],
  query: Float32Array,
  limit: number,
  minSimilarity: number,
): Array<{ n: number; score: number }> {
  const dims = query.length;
  // a few words' query touches a few dozen of the dimensions: only those are read
  const touched: number[] = [];
  for (let j = 0; j < dims; j++) if (query[j] !== 0) touched.push(j);
  const scored: Array<{ n: number; score: number }> = [];
  for (const r of rows) {
    if (r.vec.length !== dims) continue;
    const row = new Int8Array(r.vec.buffer, r.vec.byteOffset, dims);
    let dot = 0;
    for (const j of touched) dot += (query[j] as number) * (row[j] as number);
    const score = dot / 127;
    if (score >= minSimilarity) scored.push({ n: r.n, score });
  }
  return scored.sort((a, b) => b.score - a.score || a.n - b.n).slice(0, limit);
}

/**
 * A project's vectors for one model, column-major (dimension by dimension, each column one value per
 * item): a sparse query (a few words touch a few dozen of the offline embedder's dimensions) reads only
 * its own columns, each a sequential run, instead of every item's whole row.
 */
interface Matrix {
  version: string;
  ns: Int32Array;
  dims: number;
  int8?: Int8Array;
  float?: Float32Array;
}

// per store, project and model: the vectors as one typed array, reloaded only when items come or go
const matrices = new WeakMap<MemoryStore, Map<string, Matrix>>();

function matrixFor(store: MemoryStore, project: string, model: string | null, dims: number): Matrix {
  let byKey = matrices.get(store);
  if (!byKey) {
    byKey = new Map();
    matrices.set(store, byKey);
  }
  const key = `${project}\0${model ?? ''}`;
  const version = store.vectorVersion(project);
  const cached = byKey.get(key);
  if (cached?.version === version && cached.dims === dims) return cached;
  const width = model === null ? dims : dims * 4;
  // a vector of another length (another model, or an older embedder) is left out, never misread
  const rows: VectorRow[] = store.vectors(project, model).filter((r) => r.vec.length === width);
  const count = rows.length;
  const ns = Int32Array.from(rows.map((r) => r.n));
  let m: Matrix;
  if (model === null) {
    const int8 = new Int8Array(count * dims);
    rows.forEach((r, i) => {
      const row = new Int8Array(r.vec.buffer, r.vec.byteOffset, dims);
      for (let j = 0; j < dims; j++) int8[j * count + i] = row[j] as number;
    });
    m = { version, ns, dims, int8 };
  } else {
    const float = new Float32Array(count * dims);
    rows.forEach((r, i) => {
      const row = new Float32Array(new Uint8Array(r.vec).buffer);
      for (let j = 0; j < dims; j++) float[j * count + i] = row[j] as number;
    });
    m = { version, ns, dims, float };
  }
  byKey.set(key, m);
  return m;
}

/**
 * The `limit` rows most similar to `query` (a unit vector), best first, at least `minSimilarity`.
 * Brute force over the column-major matrix: each of the query's non-zero dimensions adds its column,
 * scaled, into one accumulator of a float per item; then one pass keeps the best.
 */
export function nearest(
  store: MemoryStore,
  project: string,
  model: string | null,
  query: Float32Array,
  limit: number,
  minSimilarity: number,
): Array<{ n: number; score: number }> {
  const m = matrixFor(store, project, model, query.length);
  const count = m.ns.length;
  if (!count || limit <= 0) return [];
  const acc = m.int8 ? int8Scores(m.int8, count, query) : floatScores(m.float as Float32Array, count, query);
  const unit = m.int8 ? INT8_UNIT : 1;
  // the best `limit`, kept sorted (best first), in the accumulator's units; most items fall below the
  // floor and cost one comparison
  const best: Array<{ n: number; score: number }> = [];
  let floor = minSimilarity * unit;
  for (let i = 0; i < count; i++) {
    const dot = acc[i] as number;
    if (dot < floor || (best.length === limit && dot === floor)) continue;
    let slot = best.length;
    while (slot > 0 && (best[slot - 1] as { score: number }).score < dot) slot--;
    best.splice(slot, 0, { n: m.ns[i] as number, score: dot });
    if (best.length > limit) best.pop();
    if (best.length === limit) floor = Math.max(floor, (best[limit - 1] as { score: number }).score);
  }
  for (const b of best) b.score /= unit;
  return best;
}

/**
 * Similarities against int8 columns, in integers: the query is scaled to int16 steps (the error, under
 * 1/32767 of a unit, is far below the int8 storage's), so the inner loop is an Int32 multiply-add that
 * cannot overflow (a unit query's steps sum to at most 32767 x sqrt(dims), times 127, < 2^31).
 * Returned in those units: divide by INT8_UNIT for a cosine.
 */
function int8Scores(data: Int8Array, count: number, query: Float32Array): Int32Array {
  const acc = new Int32Array(count);
  for (let j = 0; j < query.length; j++) {
    const q = Math.round((query[j] as number) * 32767);
    if (q === 0) continue;
    const column = data.subarray(j * count, (j + 1) * count);
    for (let i = 0; i < count; i++) acc[i] = ((acc[i] as number) + q * (column[i] as number)) | 0;
  }
  return acc;
}

const INT8_UNIT = 127 * 32767;

function floatScores(data: Float32Array, count: number, query: Float32Array): Float64Array {
  const acc = new Float64Array(count);
  for (let j = 0; j < query.length; j++) {
    const q = query[j] as number;
    if (q === 0) continue;
    const column = data.subarray(j * count, (j + 1) * count);
    for (let i = 0; i < count; i++) acc[i] = (acc[i] as number) + q * (column[i] as number);
  }
  return acc;
}

export interface Ranked {
  n: number;
  score: number;
  /** 1-based ranks in each list the item was in. */
  bm25Rank?: number;
  vectorRank?: number;
}

/**
 * Fuse the two lists (each best first) by normalized scores:
 *   score(d) = bm25(d) / bm25(best) + VECTOR_WEIGHT * cos(d) / cos(best)
 * where bm25(d) is FTS5's bm25() negated (it is negative, lower is better; negated, higher is better and
 * the best is 1 after dividing) and cos(d) the cosine similarity; a list an item is not in adds 0.
 * Dividing by each list's best puts both on a 0..1 scale while keeping how far apart their items are
 * (rank fusion keeps only the order, so a weak vector match counted as much as a strong word match).
 * Equal scores fall back to the older item first. Deterministic for equal inputs.
 */
export function fuse(
  bm25: Array<{ n: number; score: number }>,
  vectors: Array<{ n: number; score: number }>,
  weight = VECTOR_WEIGHT,
): Ranked[] {
  const out = new Map<number, Ranked>();
  const take = (
    list: Array<{ n: number; score: number }>,
    field: 'bm25Rank' | 'vectorRank',
    scoreOf: (s: number) => number,
    w: number,
  ) => {
    const top = list.length ? scoreOf((list[0] as { score: number }).score) : 0;
    list.forEach(({ n, score }, i) => {
      const r = out.get(n) ?? { n, score: 0 };
      r.score += top > 0 ? (w * scoreOf(score)) / top : 0;
      r[field] = i + 1;
      out.set(n, r);
    });
  };
  take(bm25, 'bm25Rank', (s) => -s, 1);
  take(vectors, 'vectorRank', (s) => s, weight);
  return [...out.values()].sort((a, b) => b.score - a.score || a.n - b.n);
}
