import { symlinkSync, truncateSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { grepTool } from '../../src/tools/grep.js';
import { ToolError } from '../../src/tools/types.js';
import { git, tempDir, testContext, writeFiles } from './context.js';

type GrepArgs = { pattern: string; path?: string; glob?: string; ignore_case?: boolean };

async function grep(root: string, args: GrepArgs) {
  return (await grepTool.execute(args, testContext(root))).output;
}

function repo(): string {
  const root = tempDir();
  git(root, 'init', '-q');
  writeFiles(root, {
    '.gitignore': 'dist/\n',
    'src/a.ts': 'const needle = 1;\nconst other = 2;\n',
    'src/b.js': '// Needle in js\n',
    'dist/a.js': 'const needle = 1;\n',
    'node_modules/x/i.js': 'needle\n',
    'img.bin': Buffer.from('needle\0\0binary'),
    'crlf.txt': 'first\r\nneedle end\r\n',
  });
  return root;
}

describe('grep', () => {
  it('prints path:line: text for matches, skipping gitignored and binary files', async () => {
    const root = repo();
    expect(await grep(root, { pattern: 'needle' })).toBe(
      'crlf.txt:2: needle end\nsrc/a.ts:1: const needle = 1;',
    );
  });

  it('honours ignore_case, glob and path', async () => {
    const root = repo();
    expect(await grep(root, { pattern: 'needle', ignore_case: true, glob: '*.js' })).toBe(
      'src/b.js:1: // Needle in js',
    );
    expect(await grep(root, { pattern: 'needle', path: 'src' })).toBe('src/a.ts:1: const needle = 1;');
    expect(await grep(root, { pattern: 'end$', path: 'crlf.txt' })).toBe('crlf.txt:2: needle end');
  });

  it('searches an ignored file when asked for it by path', async () => {
    const root = repo();
    expect(await grep(root, { pattern: 'needle', path: 'dist/a.js' })).toBe('dist/a.js:1: const needle = 1;');
  });

  it('turns an invalid regex into a ToolError carrying the regex error', async () => {
    const root = repo();
    const call = grep(root, { pattern: 'foo(' });
    await expect(call).rejects.toThrow(ToolError);
    await expect(grep(root, { pattern: 'foo(' })).rejects.toThrow(
      /Invalid regular expression.*Escape regex characters/,
    );
  });

  it('says when nothing matched', async () => {
    const root = repo();
    expect(await grep(root, { pattern: 'zzz' })).toBe('No matches for /zzz/ in .');
  });

  it('caps the matches with a marker telling the model to narrow the search', async () => {
    const root = tempDir();
    writeFiles(root, { 'many.txt': 'hit\n'.repeat(400) });
    const out = await grep(root, { pattern: 'hit' });
    expect(out.split('\n')).toHaveLength(301);
    expect(out).toMatch(
      /\[truncated: showing the first 300 matches \(300-line limit\); narrow the pattern, path or glob\]$/,
    );
  });

  it('skips files over 5 MB with a note', async () => {
    const root = tempDir();
    writeFiles(root, { 'small.txt': 'hit\n', 'large.txt': 'hit\n' });
    truncateSync(join(root, 'large.txt'), 6 * 1024 * 1024);
    expect(await grep(root, { pattern: 'hit' })).toBe('small.txt:1: hit\n[skipped 1 files over 5 MB]');
  });

  it('skips a listed symlink that points outside the workspace', async () => {
    const root = tempDir();
    const outside = tempDir();
    writeFiles(outside, { 'secret.txt': 'hit secret\n' });
    writeFiles(root, { 'ok.txt': 'hit\n' });
    symlinkSync(join(outside, 'secret.txt'), join(root, 'leak.txt'));
    expect(await grep(root, { pattern: 'hit' })).toBe(
      'ok.txt:1: hit\n[skipped 1 files outside the allowed scope]',
    );
  });
});

describe('grep decodes files as read_file does', () => {
  it('finds a word in a Latin-1 file and in a UTF-16 file, and shows the line as text', async () => {
    const root = tempDir();
    git(root, 'init', '-q');
    writeFiles(root, {
      'menu-latin1.txt': Buffer.from('dessert: crème brûlée\n', 'latin1'),
      'notes-utf16.txt': Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('une crème\n', 'utf16le')]),
    });
    expect(await grep(root, { pattern: 'crème' })).toBe(
      'menu-latin1.txt:1: dessert: crème brûlée\nnotes-utf16.txt:1: une crème',
    );
  });
});
