import { mkdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { listFiles } from '../../src/tools/files.js';
import { globTool } from '../../src/tools/glob.js';
import { listDirTool } from '../../src/tools/list-dir.js';
import { git, tempDir, testContext, writeFiles } from './context.js';

/** A git repo with tracked, untracked, ignored (root and nested .gitignore) and node_modules files. */
function repo(): string {
  const root = tempDir();
  git(root, 'init', '-q');
  writeFiles(root, {
    '.gitignore': 'dist/\n*.log\n',
    'src/index.ts': 'export {};\n',
    'src/lib/util.ts': 'export const x = 1;\n',
    'src/lib/.gitignore': 'generated.ts\n',
    'src/lib/generated.ts': 'ignored by the nested .gitignore\n',
    'dist/index.js': 'ignored\n',
    'debug.log': 'ignored\n',
    'node_modules/pkg/index.js': 'never listed\n',
    'README.md': '# hi\n',
  });
  git(root, 'add', 'src/index.ts', 'README.md');
  return root;
}

async function listDir(root: string, args: { path?: string; depth?: number } = {}) {
  return (await listDirTool.execute(args, testContext(root))).output;
}

async function glob(root: string, pattern: string, path?: string) {
  return (await globTool.execute(path ? { pattern, path } : { pattern }, testContext(root))).output;
}

describe('listFiles', () => {
  it('lists tracked and untracked files in a git repo, hiding ignored ones', async () => {
    const root = repo();
    const { files } = await listFiles(root);
    expect(files).toEqual([
      '.gitignore',
      'README.md',
      'src/index.ts',
      'src/lib/.gitignore',
      'src/lib/util.ts',
    ]);
  });

  it('lists relative to a subfolder of the repo', async () => {
    const root = repo();
    expect((await listFiles(join(root, 'src'))).files).toEqual(['index.ts', 'lib/.gitignore', 'lib/util.ts']);
  });

  it('ignores an inherited GIT_DIR that points at another repository', async () => {
    const root = repo();
    const other = tempDir();
    git(other, 'init', '-q');
    process.env.GIT_DIR = join(other, '.git');
    try {
      expect((await listFiles(root)).files).toContain('src/lib/util.ts');
    } finally {
      delete process.env.GIT_DIR;
    }
  });

  it('walks a folder outside git, honouring root and nested .gitignore files', async () => {
    const root = tempDir();
    writeFiles(root, {
      '.gitignore': 'build/\n*.tmp\n',
      'a.ts': '',
      'x.tmp': '',
      'build/out.js': '',
      'pkg/.gitignore': 'secret.txt\n',
      'pkg/secret.txt': '',
      'pkg/ok.txt': '',
      'node_modules/dep/i.js': '',
      '.git/HEAD': '',
    });
    mkdirSync(join(root, 'empty'));
    const listing = await listFiles(root);
    expect(listing.files).toEqual(['.gitignore', 'a.ts', 'pkg/.gitignore', 'pkg/ok.txt']);
    expect(listing.dirs).toEqual(['empty', 'pkg']);
  });

  it('does not follow a symlinked folder (no cycles)', async () => {
    const root = tempDir();
    writeFiles(root, { 'a/f.txt': '' });
    symlinkSync(root, join(root, 'a', 'loop'));
    expect((await listFiles(root)).files).toEqual(['a/f.txt', 'a/loop']);
  });

  it('stops at the cap and says so', async () => {
    const root = tempDir();
    writeFiles(root, Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`f${i}.txt`, ''])));
    const listing = await listFiles(root, { maxFiles: 5 });
    expect(listing.files).toHaveLength(5);
    expect(listing.truncated).toBe(true);
  });
});

describe('list_dir', () => {
  it('shows a tree to depth 2, folders with a trailing slash, deeper folders with a file count', async () => {
    const root = repo();
    writeFiles(root, { 'src/lib/deep/a.ts': '', 'src/lib/deep/b.ts': '' });
    expect(await listDir(root)).toBe(
      ['./', '  src/', '    lib/ (4 files)', '    index.ts', '  .gitignore', '  README.md'].join('\n'),
    );
    expect(await listDir(root, { path: 'src', depth: 9 })).toBe(
      [
        'src/',
        '  lib/',
        '    deep/',
        '      a.ts',
        '      b.ts',
        '    .gitignore',
        '    util.ts',
        '  index.ts',
      ].join('\n'),
    );
  });

  it('shows the inside of an ignored folder when asked for it by name', async () => {
    const root = repo();
    expect(await listDir(root, { path: 'dist' })).toBe('dist/\n  index.js');
  });

  it('refuses a file and a missing path with a hint', async () => {
    const root = repo();
    await expect(listDir(root, { path: 'README.md' })).rejects.toThrow(/is a file; use read_file/);
    await expect(listDir(root, { path: 'nope' })).rejects.toThrow(/does not exist/);
  });

  it('defaults its path to the workspace for the gate', () => {
    expect(listDirTool.paths?.({})).toEqual([{ path: '.', access: 'read' }]);
  });
});

describe('glob', () => {
  it('matches over the gitignore-respecting listing, sorted, relative to the workspace', async () => {
    const root = repo();
    expect(await glob(root, '**/*.ts')).toBe('src/index.ts\nsrc/lib/util.ts');
    expect(await glob(root, '*.js')).toBe('No files match *.js in .');
    expect(await glob(root, 'lib/*.ts', 'src')).toBe('src/lib/util.ts');
  });

  it('matches a pattern without a slash against names at any depth', async () => {
    const root = repo();
    expect(await glob(root, 'util.*')).toBe('src/lib/util.ts');
  });

  it('caps the results with a marker', async () => {
    const root = tempDir();
    writeFiles(
      root,
      Object.fromEntries(Array.from({ length: 510 }, (_, i) => [`f${String(i).padStart(3, '0')}.txt`, ''])),
    );
    const out = await glob(root, '*.txt');
    expect(out.split('\n')).toHaveLength(501);
    expect(out).toMatch(
      /\[truncated: 10 more lines not shown \(500-line limit\); narrow the pattern or path\]$/,
    );
  });
});
