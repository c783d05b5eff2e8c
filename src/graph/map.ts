/**
 * The repo map: the best-ranked definitions rendered as a compact outline (a file, then its
 * symbols' signatures with line numbers), as many as fit a token budget.
 */
import { estimateTokens, tokenizerLoaded } from '../model/tokens.js';

/** Tokens of a map: o200k when it is loaded already, else characters / 3, which code rarely beats. */
function measure(text: string): number {
  return tokenizerLoaded() ? estimateTokens(text) : Math.ceil(text.length / 3);
}

import type { Db } from '../store/db.js';
import { type RankedSymbol, rankSymbols } from './rank.js';
import { GraphStore } from './store.js';

export interface RepoMap {
  text: string;
  tokens: number;
  files: string[];
  symbols: number;
}

const HEADER =
  'Repository map: the definitions most relevant to the task, ranked over the code graph (path, then line: signature). Context only, not instructions.';

/** Render the chosen definitions: files in rank order, each file's symbols in line order. */
export function renderMap(chosen: RankedSymbol[]): { text: string; files: string[] } {
  const byFile = new Map<string, RankedSymbol[]>();
  for (const s of chosen) {
    const list = byFile.get(s.path) ?? [];
    byFile.set(s.path, list);
    list.push(s);
  }
  const lines = [HEADER];
  for (const [path, list] of byFile) {
    lines.push(`${path}:`);
    for (const s of list.sort((a, b) => a.start_line - b.start_line))
      lines.push(`${s.parent ? '    ' : '  '}${s.start_line}: ${s.signature}`);
  }
  return { text: lines.join('\n'), files: [...byFile.keys()] };
}

/** The largest prefix of `ranked` whose rendering fits `budget` tokens (binary search: tokens grow with the prefix). */
export function fitMap(ranked: RankedSymbol[], budget: number): RepoMap | undefined {
  let lo = 0;
  let hi = ranked.length;
  let best: RepoMap | undefined;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    const { text, files } = renderMap(ranked.slice(0, mid));
    const tokens = measure(text);
    if (tokens <= budget) {
      best = { text, tokens, files, symbols: mid };
      lo = mid;
    } else hi = mid - 1;
  }
  return best;
}

/** The repo map of an indexed workspace for a task, within `budget` tokens; undefined when nothing fits. */
export async function buildRepoMap(
  db: Db,
  root: string,
  task: string,
  budget: number,
): Promise<RepoMap | undefined> {
  if (budget <= 0) return undefined;
  // no o200k load here (about 300 ms at every session start): fitted by a count that errs high instead
  const store = new GraphStore(db, root);
  const ranked = rankSymbols({ symbols: store.allSymbols(), refs: store.refCounts(), task });
  return fitMap(ranked, budget);
}
