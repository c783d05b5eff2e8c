import { describe, expect, it } from 'vitest';
import { importersOf } from '../../src/graph/importers.js';
import { fitMap, renderMap } from '../../src/graph/map.js';
import { rankSymbols } from '../../src/graph/rank.js';
import type { SymbolRow } from '../../src/graph/store.js';
import { estimateTokens, loadTokenizer } from '../../src/model/tokens.js';

const sym = (path: string, name: string, line = 1): SymbolRow => ({
  path,
  name,
  kind: 'function',
  signature: `export function ${name}(input: string): string {`,
  start_line: line,
  end_line: line + 3,
  parent: null,
});

/** A small codebase: `core` is used from every feature file, each feature file has a leaf nobody calls. */
function codebase(features = 8) {
  const symbols: SymbolRow[] = [sym('src/core.ts', 'core')];
  const refs: Array<{ path: string; name: string; n: number }> = [];
  for (let i = 0; i < features; i++) {
    const path = `src/feature${i}.ts`;
    symbols.push(sym(path, `feature${i}`), sym(path, `leaf${i}`, 10));
    refs.push({ path, name: 'core', n: 2 });
    refs.push({ path: 'src/app.ts', name: `feature${i}`, n: 1 });
  }
  symbols.push(sym('src/app.ts', 'app'));
  return { symbols, refs };
}

describe('ranking', () => {
  it('a definition referenced from many files outranks a leaf; the order is deterministic', () => {
    const { symbols, refs } = codebase();
    const ranked = rankSymbols({ symbols, refs, task: 'tidy up' });
    const pos = (name: string) => ranked.findIndex((s) => s.name === name);
    expect(pos('core')).toBe(0);
    for (let i = 0; i < 8; i++) expect(pos('core')).toBeLessThan(pos(`leaf${i}`));
    expect(rankSymbols({ symbols, refs, task: 'tidy up' }).map((s) => s.name)).toEqual(
      ranked.map((s) => s.name),
    );
  });

  it('a task naming a file or an identifier moves it up', () => {
    const { symbols, refs } = codebase();
    const plain = rankSymbols({ symbols, refs, task: 'tidy up' });
    const leafBefore = plain.findIndex((s) => s.name === 'leaf5');
    const byFile = rankSymbols({ symbols, refs, task: 'fix the bug in src/feature5.ts please' });
    const leafAfter = byFile.findIndex((s) => s.name === 'leaf5');
    expect(leafAfter).toBeLessThan(leafBefore);
    expect(byFile.slice(0, 2).map((s) => s.path)).toEqual(['src/feature5.ts', 'src/feature5.ts']);
    const byName = rankSymbols({ symbols, refs, task: 'why does leaf3 return null?' });
    expect(byName[0]?.name).toBe('leaf3');
    // a file named by its file name alone counts too
    expect(rankSymbols({ symbols, refs, task: 'look at feature2.ts' })[0]?.path).toBe('src/feature2.ts');
    expect(rankSymbols({ symbols, refs, task: 'see ./src/feature6.ts, then stop' })[0]?.path).toBe(
      'src/feature6.ts',
    );
    // a name inside a longer word is not a mention
    expect(rankSymbols({ symbols, refs, task: 'rename myfeature2.tsx' })[0]?.name).toBe('core');
  });
});

describe('the repo map', () => {
  it('fits its budget, grows with it, and lists files then their signatures with line numbers', async () => {
    await loadTokenizer();
    const { symbols, refs } = codebase(40);
    const ranked = rankSymbols({ symbols, refs, task: 'tidy up' });
    for (const budget of [60, 200, 1000]) {
      const map = fitMap(ranked, budget);
      expect(map).toBeDefined();
      if (!map) continue;
      expect(map.tokens).toBeLessThanOrEqual(budget);
      expect(estimateTokens(map.text)).toBe(map.tokens);
      // one more definition would not have fit
      if (map.symbols < ranked.length)
        expect(estimateTokens(renderMap(ranked.slice(0, map.symbols + 1)).text)).toBeGreaterThan(budget);
    }
    const small = fitMap(ranked, 200);
    const large = fitMap(ranked, 1000);
    expect(small && large && large.symbols > small.symbols).toBe(true);
    expect(small?.text.split('\n')[1]).toBe('src/core.ts:');
    expect(small?.text.split('\n')[2]).toBe('  1: export function core(input: string): string {');
    expect(fitMap(ranked, 5)).toBeUndefined();
  });
});

describe('importers', () => {
  const imports = [
    { path: 'src/app.ts', module: './util.js' },
    { path: 'src/deep/x.ts', module: '../util' },
    { path: 'src/other.ts', module: 'react' },
    { path: 'src/other2.ts', module: 'react/jsx-runtime' },
    { path: 'pkg/main.py', module: '.models' },
    { path: 'app/run.py', module: 'pkg.models' },
    { path: 'src/main/java/a/B.java', module: 'com.acme.Store' },
  ];
  it('finds files importing a workspace file by relative or dotted specifier, and a package by name', () => {
    expect(importersOf(imports, 'src/util.ts', true)).toEqual(['src/app.ts', 'src/deep/x.ts']);
    expect(importersOf(imports, 'pkg/models.py', true)).toEqual(['app/run.py', 'pkg/main.py']);
    expect(importersOf(imports, 'src/main/java/com/acme/Store.java', true)).toEqual([
      'src/main/java/a/B.java',
    ]);
    expect(importersOf(imports, 'react', false)).toEqual(['src/other.ts', 'src/other2.ts']);
    expect(importersOf(imports, 'rea', false)).toEqual([]);
  });
});
