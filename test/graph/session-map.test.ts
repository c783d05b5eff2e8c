import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sessionRepoMap } from '../../src/graph/session-map.js';
import { gitRepo, tempDir } from '../helpers/tmp.js';

// the indexer runs in a worker thread from the built files (npm run build, as before every e2e test)
describe("a session's repo map", () => {
  const signal = new AbortController().signal;
  const files = {
    'src/price.ts': 'export function round(n: number): number {\n  return Math.round(n);\n}\n',
    'src/invoice.ts':
      "import { round } from './price.js';\nexport function total(xs: number[]) {\n  return round(xs.length);\n}\n",
  };

  it('past its time cap the session starts without a map, noting why; the next one has it', async () => {
    const root = gitRepo(files);
    const dbPath = join(tempDir(), 'keel.db');
    const base = { dbPath, root, task: 'fix total in src/invoice.ts', budget: 1000, signal };
    const late = await sessionRepoMap({ ...base, timeoutMs: 1 });
    expect(late).toEqual({ type: 'repo_map_skipped', reason: 'indexing took longer than 1 ms' });
    const map = await sessionRepoMap({ ...base, timeoutMs: 60_000 });
    expect(map?.type).toBe('repo_map');
    if (map?.type !== 'repo_map') return;
    expect(map.files).toEqual(['src/invoice.ts', 'src/price.ts']);
    expect(map.text).toContain('src/invoice.ts:\n  2: export function total(xs: number[]) {');
    expect(map.tokens).toBeLessThanOrEqual(1000);
  }, 60_000);

  it('no map and no note when maps are off or there is no source to map', async () => {
    const dbPath = join(tempDir(), 'keel.db');
    const off = await sessionRepoMap({ dbPath, root: gitRepo(files), task: 'x', budget: 0, signal });
    expect(off).toBeUndefined();
    const empty = await sessionRepoMap({
      dbPath,
      root: gitRepo(),
      task: 'x',
      budget: 1000,
      signal,
      timeoutMs: 60_000,
    });
    expect(empty).toBeUndefined();
  }, 60_000);
});
