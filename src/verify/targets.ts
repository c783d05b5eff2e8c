/** Target selection: which results a user's words name (an id, a test name, a file or a folder). */
import { ID_SEPARATOR } from './result-ids.js';
import type { SuiteRun, TestResult } from './types.js';

export type TargetResolution =
  | { ok: true; ids: string[] }
  | { ok: false; error: string; unmatched: string[] };

const MAX_CANDIDATES = 5;

/** The ids of results one request names: exact id first, then test name or id suffix, then file or folder. */
export function matchTarget(results: TestResult[], requested: string): string[] {
  const want = normalize(requested);
  if (want === '') return [];
  const exact = results.filter((r) => r.id === want);
  if (exact.length > 0) return ids(exact);
  const byName = results.filter((r) => r.name === want || r.id.endsWith(`${ID_SEPARATOR}${want}`));
  if (byName.length > 0) return ids(byName);
  const folder = want.replace(/\/+$/, '');
  const byFile = results.filter(
    (r) => r.file !== undefined && (r.file === folder || r.file.startsWith(`${folder}/`)),
  );
  return ids(byFile);
}

/** Resolve requested targets against a run, or say which did not match and what was close. */
export function resolveTargets(run: Pick<SuiteRun, 'results'>, requested: string[]): TargetResolution {
  const found = new Set<string>();
  const unmatched: string[] = [];
  for (const request of requested) {
    const matched = matchTarget(run.results, request);
    if (matched.length === 0) unmatched.push(request);
    for (const id of matched) found.add(id);
  }
  if (unmatched.length === 0) return { ok: true, ids: [...found] };
  const lines = unmatched.map((request) => {
    const close = closeCandidates(run.results, request);
    const hint =
      close.length === 0 ? 'no similar test' : `close: ${close.map((c) => JSON.stringify(c)).join(', ')}`;
    return `${JSON.stringify(request)} (${hint})`;
  });
  const noun = unmatched.length === 1 ? 'target matches' : 'targets match';
  return { ok: false, unmatched, error: `no test ${noun} ${lines.join('; ')}` };
}

/** Test ids most like `request`, by edit distance on the name, the id and the file, best first. */
export function closeCandidates(results: TestResult[], request: string, max = MAX_CANDIDATES): string[] {
  const want = normalize(request).toLowerCase();
  const scored = results.map((r) => {
    const fields = [r.name, r.id, r.file ?? ''].map((f) => f.toLowerCase());
    const contains = fields.some((f) => f !== '' && (f.includes(want) || want.includes(f)));
    const distance = Math.min(...fields.filter((f) => f !== '').map((f) => editDistance(f, want)));
    // containment beats any edit distance: "add" should suggest "adds two numbers"
    return { id: r.id, score: contains ? -1 : distance / Math.max(want.length, 1) };
  });
  const best = scored
    .filter((s) => s.score < 0.5)
    .sort((a, b) => a.score - b.score)
    .map((s) => s.id);
  return [...new Set(best)].slice(0, max);
}

/** pytest node ids (`a.py::Class::test`) and `./` prefixes name the same tests as keel's ids. */
function normalize(request: string): string {
  return request.trim().replace(/^\.\//, '').split('::').join(ID_SEPARATOR);
}

function ids(results: TestResult[]): string[] {
  return results.map((r) => r.id);
}

/** Levenshtein distance, capped in length so long ids stay cheap to compare. */
function editDistance(a: string, b: string): number {
  const s = a.slice(0, 200);
  const t = b.slice(0, 200);
  let prev = Array.from({ length: t.length + 1 }, (_, j) => j);
  for (let i = 1; i <= s.length; i++) {
    const row = [i];
    for (let j = 1; j <= t.length; j++) {
      const cost = s[i - 1] === t[j - 1] ? 0 : 1;
      row.push(Math.min((prev[j] ?? 0) + 1, (row[j - 1] ?? 0) + 1, (prev[j - 1] ?? 0) + cost));
    }
    prev = row;
  }
  return prev[t.length] ?? 0;
}
