/**
 * Ranking: PageRank over the file graph (an edge from a file to each file defining a name it uses),
 * personalized by the files and identifiers the task names; each definition then gets the rank that
 * flows to it along those edges. Deterministic: the same index and task give the same order.
 */
import type { SymbolRow } from './store.js';

const DAMPING = 0.85;
const ITERATIONS = 40;
/** Names the task mentions weigh this much more on every edge to their definitions. */
const MENTIONED_NAME_WEIGHT = 10;

export interface RankInput {
  symbols: SymbolRow[];
  refs: Array<{ path: string; name: string; n: number }>;
  task: string;
}

export interface RankedSymbol extends SymbolRow {
  score: number;
}

/** Only this much of a task is read for names: a pasted log must not make ranking slow. */
const TASK_CHARS = 50_000;

/** What the task names: indexed files (by path or file name) and defined identifiers. */
export function mentions(task: string, paths: Iterable<string>, names: Set<string>) {
  const text = task.slice(0, TASK_CHARS);
  // path-like words once, so the cost is the task's length plus the number of files
  const words = new Set(
    (text.match(/[\w$@./-]+/g) ?? []).map((w) => w.replace(/^[./]+(?=\w)|[.,:;]+$/g, '')),
  );
  const files = new Set<string>();
  for (const path of paths) {
    const base = path.slice(path.lastIndexOf('/') + 1);
    if (words.has(path) || words.has(base)) files.add(path);
  }
  const idents = new Set(
    (text.match(/[A-Za-z_$][A-Za-z0-9_$]*/g) ?? []).filter((w) => w.length >= 3 && names.has(w)),
  );
  return { files, idents };
}

/** Definitions, best first. */
export function rankSymbols(input: RankInput): RankedSymbol[] {
  const { symbols, refs, task } = input;
  const definers = new Map<string, Set<string>>();
  const paths = new Set<string>();
  for (const s of symbols) {
    paths.add(s.path);
    const set = definers.get(s.name) ?? new Set<string>();
    definers.set(s.name, set);
    set.add(s.path);
  }
  for (const r of refs) paths.add(r.path);
  const { files: namedFiles, idents } = mentions(task, paths, new Set(definers.keys()));

  // edges: referencing file -> (defining file, name), weighted by uses, shared among a name's definers
  const edges = new Map<string, Array<{ to: string; name: string; w: number }>>();
  for (const r of refs) {
    const targets = definers.get(r.name);
    if (!targets) continue;
    let w = Math.sqrt(r.n) / targets.size;
    if (idents.has(r.name)) w *= MENTIONED_NAME_WEIGHT;
    if (r.name.startsWith('_')) w *= 0.1;
    for (const to of targets) {
      if (to === r.path) continue;
      const list = edges.get(r.path) ?? [];
      edges.set(r.path, list);
      list.push({ to, name: r.name, w });
    }
  }
  const nodes = [...paths].sort();
  const personal = new Map<string, number>();
  const named = nodes.filter((p) => namedFiles.has(p));
  for (const p of named.length ? named : nodes) personal.set(p, 1 / (named.length || nodes.length));
  const rank = pagerank(nodes, edges, personal);

  const flow = new Map<string, number>();
  for (const [from, list] of edges) {
    const out = list.reduce((sum, e) => sum + e.w, 0);
    for (const e of list) {
      const key = `${e.to}\0${e.name}`;
      flow.set(key, (flow.get(key) ?? 0) + ((rank.get(from) ?? 0) * e.w) / out);
    }
  }
  const top = Math.max(1e-9, ...flow.values());
  const ranked = symbols.map((s) => {
    let score = flow.get(`${s.path}\0${s.name}`) ?? 0;
    // a file's own rank breaks ties, so an unreferenced definition in a central file comes before one in a leaf
    score += (rank.get(s.path) ?? 0) * 1e-3;
    // what the task names leads the map: a named identifier first, then the named files' definitions
    if (namedFiles.has(s.path)) score += 1.5 * top;
    if (idents.has(s.name)) score += 2 * top;
    return { ...s, score };
  });
  return ranked.sort(
    (a, b) => b.score - a.score || a.path.localeCompare(b.path) || a.start_line - b.start_line,
  );
}

function pagerank(
  nodes: string[],
  edges: Map<string, Array<{ to: string; w: number }>>,
  personal: Map<string, number>,
): Map<string, number> {
  const out = new Map<string, number>();
  for (const [from, list] of edges)
    out.set(
      from,
      list.reduce((sum, e) => sum + e.w, 0),
    );
  let rank = new Map(nodes.map((n) => [n, 1 / nodes.length]));
  for (let i = 0; i < ITERATIONS; i++) {
    const next = new Map(nodes.map((n) => [n, (1 - DAMPING) * (personal.get(n) ?? 0)]));
    let dangling = 0;
    for (const n of nodes) {
      const r = rank.get(n) ?? 0;
      const list = edges.get(n);
      const total = out.get(n) ?? 0;
      if (!list || total === 0) {
        dangling += r;
        continue;
      }
      for (const e of list) next.set(e.to, (next.get(e.to) ?? 0) + (DAMPING * r * e.w) / total);
    }
    // a file that uses nothing hands its rank back the way a restart would
    for (const [n, p] of personal) next.set(n, (next.get(n) ?? 0) + DAMPING * dangling * p);
    rank = next;
  }
  return rank;
}
