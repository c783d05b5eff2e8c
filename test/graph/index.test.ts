import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { indexWorkspace } from '../../src/graph/index.js';
import { GraphStore } from '../../src/graph/store.js';
import { openDb } from '../../src/store/db.js';
import { gitRepo, tempDir, writeFiles } from '../helpers/tmp.js';

describe('incremental indexing', () => {
  it('parses every source file once, then only a changed one; a deleted file takes its symbols with it', async () => {
    const repo = gitRepo({
      '.gitignore': 'generated/\n',
      'src/a.ts': 'export function alpha() { return beta(); }\n',
      'src/b.ts': 'export function beta() { return 1; }\n',
      'lib/c.py': 'def gamma():\n    return 2\n',
      'generated/big.ts': 'export function ignoredByGit() {}\n',
      'node_modules/dep/index.js': 'function dependency() {}\n',
      'README.md': '# not source\n',
    });
    const db = openDb(join(tempDir(), 'keel.db'));
    const store = new GraphStore(db, repo);

    const first = await indexWorkspace(db, repo);
    expect(first).toMatchObject({ files: 3, symbols: 3, parsed: 3, removed: 0 });
    expect(store.definitions('ignoredByGit', 10)).toEqual([]);
    expect(store.definitions('dependency', 10)).toEqual([]);

    const again = await indexWorkspace(db, repo);
    expect(again).toMatchObject({ files: 3, parsed: 0, removed: 0 });

    writeFileSync(
      join(repo, 'src/b.ts'),
      'export function beta() { return 2; }\nexport function delta() {}\n',
    );
    const touched = await indexWorkspace(db, repo);
    expect(touched).toMatchObject({ files: 3, symbols: 4, parsed: 1, removed: 0 });
    expect(store.definitions('delta', 10).map((d) => d.path)).toEqual(['src/b.ts']);

    rmSync(join(repo, 'lib/c.py'));
    const deleted = await indexWorkspace(db, repo);
    expect(deleted).toMatchObject({ files: 2, parsed: 0, removed: 1 });
    expect(store.definitions('gamma', 10)).toEqual([]);
    expect(store.references('beta', 10).map((r) => `${r.path}:${r.line}`)).toEqual(['src/a.ts:1']);
    db.close();
  });

  it('skips binary, oversized and build-output files; keeps roots apart', async () => {
    const repo = gitRepo({
      'src/ok.ts': 'export function ok() {}\n',
      'dist/out.js': 'function built() {}\n',
    });
    writeFileSync(join(repo, 'src/bin.ts'), Buffer.from([0x66, 0x00, 0x01, 0x02]));
    writeFileSync(join(repo, 'src/huge.ts'), `export function huge() {}\n${'// x\n'.repeat(300_000)}`);
    const other = gitRepo({ 'main.go': 'package main\n\nfunc other() {}\n' });
    const db = openDb(join(tempDir(), 'keel.db'));
    expect(await indexWorkspace(db, repo)).toMatchObject({ files: 1, symbols: 1 });
    expect(await indexWorkspace(db, other)).toMatchObject({ files: 1, symbols: 1 });
    expect(new GraphStore(db, repo).definitions('other', 10)).toEqual([]);
    expect(new GraphStore(db, other).definitions('other', 10)).toHaveLength(1);
    db.close();
  });

  it('indexes a folder that is not a git repository by walking it, .gitignore still respected', async () => {
    const dir = tempDir();
    writeFiles(dir, {
      '.gitignore': 'skip.ts\n',
      'keep.ts': 'export class Keep {}\n',
      'skip.ts': 'export class Skip {}\n',
    });
    const db = openDb(join(tempDir(), 'keel.db'));
    expect(await indexWorkspace(db, dir)).toMatchObject({ files: 1, symbols: 1 });
    expect(new GraphStore(db, dir).definitions('Keep', 10)).toHaveLength(1);
    db.close();
  });
});
