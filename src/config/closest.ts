/** Did-you-mean: the known word nearest to a mistyped one, by the rule commander uses for flags. */

/** Optimal string alignment distance: edits, where swapping two neighbours counts as one. */
export function editDistance(a: string, b: string): number {
  const d: number[][] = [];
  for (let i = 0; i <= a.length; i++) d[i] = [i];
  for (let j = 0; j <= b.length; j++) (d[0] as number[])[j] = j;
  for (let i = 1; i <= a.length; i++) {
    const row = d[i] as number[];
    const prev = d[i - 1] as number[];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(
        (prev[j] as number) + 1,
        (row[j - 1] as number) + 1,
        (prev[j - 1] as number) + cost,
      );
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        best = Math.min(best, ((d[i - 2] as number[])[j - 2] as number) + 1);
      row[j] = best;
    }
  }
  return (d[a.length] as number[])[b.length] as number;
}

/**
 * The candidate closest to `word`: at most `maxDistance` edits (default 2) and more than 40% of it
 * unchanged (so "add" is not taken for "ask"), or undefined when none is that close.
 */
export function closest(word: string, candidates: Iterable<string>, maxDistance = 2): string | undefined {
  let best: string | undefined;
  let bestDistance = maxDistance + 1;
  for (const candidate of candidates) {
    if (candidate.length <= 1 || candidate === word) continue;
    const distance = editDistance(word.toLowerCase(), candidate.toLowerCase());
    const length = Math.max(word.length, candidate.length);
    if ((length - distance) / length <= 0.4) continue;
    if (distance < bestDistance) {
      bestDistance = distance;
      best = candidate;
    }
  }
  return best;
}
