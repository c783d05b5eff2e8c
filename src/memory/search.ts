/**
 * Hybrid search: BM25 over the full-text index and cosine similarity over the vectors, fused by
 * reciprocal rank: score(d) = sum over the two lists of 1 / (60 + rank(d)), ranks from 1 (BM25 ordered
 * by FTS5's bm25(), where lower is better; vectors by similarity, higher is better). Ranks, not raw
 * scores, so neither scale needs normalizing. Equal scores fall back to the older item first.
 */
import type { TermStats } from './embed.js';
import type { MemoryStore, VectorRow } from './memory-store.js';
import { contentWords, identifierTerms } from './text-features.js';

/** Reciprocal rank fusion's constant (Cormack et al. 2009): how little the first ranks dominate. */
export const RRF_K = 60;
/** How deep each list is read before fusing. */
export const CANDIDATES = 50;

/** Past this many items, a word in more than COMMON_SHARE of them is left out of the full-text query. */
const COMMON_FROM = 1000;
const COMMON_SHARE = 0.05;

/**
 * The FTS5 query for a text: every content word OR every identifier (whole, in the idents column).
 * With `stats`, words most items have are dropped when rarer ones remain (they add little to BM25 and
 * make it score a large share of the corpus); the vector list still sees them.
 */
export function ftsQuery(text: string, stats?: TermStats): string | undefined {
  const quote = (t: string) => `"${t.replace(/"/g, '')}"`;
  let words = [...new Set(contentWords(text))];
  if (stats && stats.count >= COMMON_FROM) {
    const rare = words.filter((w) => stats.df(w) <= COMMON_SHARE * stats.count);
    if (rare.length) words = rare;
  }
  const terms = words.map(quote);
  const idents = [...new Set(identifierTerms(text))].map((t) => `idents:${quote(t)}`);
  const all = [...terms, ...idents];
  return all.length ? all.join(' OR ') : undefined;
}

interface Matrix {
  version: string;
  ns: Int32Array;
  dims: number;
  int8?: Int8Array;
  float?: Float32Array;
}

// per store, project and model: the vectors as one typed array, reloaded only when items come or go
const matrices = new WeakMap<MemoryStore, Map<string, Matrix>>();

function matrixFor(store: MemoryStore, project: string, model: string | null): Matrix {
  let byKey = matrices.get(store);
  if (!byKey) {
    byKey = new Map();
    matrices.set(store, byKey);
  }
  const key = `${project}\0${model ?? ''}`;
  const version = store.vectorVersion(project);
  const cached = byKey.get(key);
  if (cached?.version === version) return cached;
  const rows: VectorRow[] = store.vectors(project, model);
  const ns = Int32Array.from(rows.map((r) => r.n));
  let m: Matrix;
  if (model === null) {
    const dims = rows[0]?.vec.length ?? 0;
    const int8 = new Int8Array(rows.length * dims);
    rows.forEach((r, i) => {
      int8.set(new Int8Array(r.vec.buffer, r.vec.byteOffset, dims), i * dims);
    });
    m = { version, ns, dims, int8 };
  } else {
    const dims = Math.floor((rows[0]?.vec.length ?? 0) / 4);
    const float = new Float32Array(rows.length * dims);
    rows.forEach((r, i) => {
      const copy = new Uint8Array(r.vec);
      if (copy.length / 4 === dims) float.set(new Float32Array(copy.buffer), i * dims);
    });
    m = { version, ns, dims, float };
  }
  byKey.set(key, m);
  return m;
}

/**
 * The `limit` rows most similar to `query` (a unit vector), best first, at least `minSimilarity`.
 * Brute force over one typed array: 100k items of 256 int8 values is a few tens of millions of multiply-adds.
 */
export function nearest(
  store: MemoryStore,
  project: string,
  model: string | null,
  query: Float32Array,
  limit: number,
  minSimilarity: number,
): Array<{ n: number; score: number }> {
  const m = matrixFor(store, project, model);
  if (m.dims !== query.length) return [];
  const best: Array<{ n: number; score: number }> = [];
  let floor = minSimilarity;
  const count = m.ns.length;
  const dims = m.dims;
  const scale = m.int8 ? 1 / 127 : 1;
  const data = m.int8 ?? (m.float as Float32Array);
  // a short query touches few dimensions: only those count in a dot product (6x fewer multiplies for three words)
  const nz: number[] = [];
  for (let j = 0; j < dims; j++) if (query[j] !== 0) nz.push(j);
  const at = Int32Array.from(nz);
  const qv = Float64Array.from(nz, (j) => (query[j] as number) * scale);
  const width = at.length;
  for (let i = 0; i < count; i++) {
    let dot = 0;
    const base = i * dims;
    for (let j = 0; j < width; j++) dot += (qv[j] as number) * (data[base + (at[j] as number)] as number);
    if (dot < floor) continue;
    const entry = { n: m.ns[i] as number, score: dot };
    let slot = best.length;
    while (slot > 0 && (best[slot - 1] as { score: number }).score < dot) slot--;
    best.splice(slot, 0, entry);
    if (best.length > limit) best.pop();
    if (best.length === limit) floor = Math.max(floor, (best[limit - 1] as { score: number }).score);
  }
  return best;
}

export interface Ranked {
  n: number;
  score: number;
  /** 1-based ranks in each list the item was in. */
  bm25Rank?: number;
  vectorRank?: number;
}

/** Fuse two ranked lists (best first) by reciprocal rank; deterministic for equal inputs. */
export function fuse(bm25: Array<{ n: number }>, vectors: Array<{ n: number }>, k = RRF_K): Ranked[] {
  const out = new Map<number, Ranked>();
  const take = (list: Array<{ n: number }>, field: 'bm25Rank' | 'vectorRank') =>
    list.forEach(({ n }, i) => {
      const r = out.get(n) ?? { n, score: 0 };
      r.score += 1 / (k + i + 1);
      r[field] = i + 1;
      out.set(n, r);
    });
  take(bm25, 'bm25Rank');
  take(vectors, 'vectorRank');
  return [...out.values()].sort((a, b) => b.score - a.score || a.n - b.n);
}
