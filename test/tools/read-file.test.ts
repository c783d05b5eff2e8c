import { closeSync, openSync, symlinkSync, truncateSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readFileTool } from '../../src/tools/read-file.js';
import { ToolError } from '../../src/tools/types.js';
import { tempDir, testContext, writeFiles } from './context.js';

const numbered = (n: number) => Array.from({ length: n }, (_, i) => `line ${i + 1}`).join('\n');

async function read(root: string, args: { path: string; offset?: number; limit?: number }) {
  return (await readFileTool.execute(args, testContext(root))).output;
}

/** Write `lines` numbered lines of ~80 bytes without holding the whole file in memory. */
function writeBigFile(path: string, lines: number): void {
  const fd = openSync(path, 'w');
  const pad = 'x'.repeat(70);
  let batch: string[] = [];
  for (let i = 1; i <= lines; i++) {
    batch.push(`row ${i} ${pad}`);
    if (batch.length === 10_000) {
      writeSync(fd, `${batch.join('\n')}\n`);
      batch = [];
    }
  }
  if (batch.length) writeSync(fd, `${batch.join('\n')}\n`);
  closeSync(fd);
}

describe('read_file', () => {
  it('numbers lines and reads everything by default', async () => {
    const root = tempDir();
    writeFiles(root, { 'a.txt': 'alpha\nbeta\n' });
    expect(await read(root, { path: 'a.txt' })).toBe('    1\talpha\n    2\tbeta');
  });

  it('reads a window with offset and limit, and says where to continue', async () => {
    const root = tempDir();
    writeFiles(root, { 'a.txt': numbered(100) });
    const out = await read(root, { path: 'a.txt', offset: 10, limit: 3 });
    expect(out).toBe(
      '   10\tline 10\n   11\tline 11\n   12\tline 12\n' +
        '[truncated: showing lines 10-12 of 100 (3-line limit); use offset=13 to continue]',
    );
    expect(await read(root, { path: 'a.txt', offset: 99 })).toBe('   99\tline 99\n  100\tline 100');
  });

  it('caps a long file at 2000 lines', async () => {
    const root = tempDir();
    writeFiles(root, { 'a.txt': numbered(2500) });
    const out = await read(root, { path: 'a.txt' });
    expect(out.split('\n')).toHaveLength(2001);
    expect(out).toMatch(/showing lines 1-2000 of 2500 \(2000-line limit\); use offset=2001 to continue\]$/);
  });

  it('streams the start of a 50 MB file without loading it', async () => {
    const root = tempDir();
    const path = join(root, 'big.log');
    writeBigFile(path, 650_000);
    const before = process.memoryUsage();
    const out = await read(root, { path: 'big.log', offset: 5, limit: 3 });
    const after = process.memoryUsage();
    expect(out.split('\n').slice(0, 3)).toEqual(
      [5, 6, 7].map((n) => `${String(n).padStart(5)}\trow ${n} ${'x'.repeat(70)}`),
    );
    expect(out).toMatch(/showing lines 5-7, file continues.*use offset=8 to continue/);
    const grown = after.heapUsed + after.arrayBuffers - (before.heapUsed + before.arrayBuffers);
    expect(grown).toBeLessThan(20 * 1024 * 1024);
  });

  it('never reads a huge sparse file whole', async () => {
    const root = tempDir();
    const path = join(root, 'huge.txt');
    // more than the 8 KiB binary sniff of text before the sparse (NUL) part starts
    writeFiles(root, { 'huge.txt': `${numbered(2000)}\n` });
    // 8 GiB: reading it whole would fail (over the Buffer limit) or run past the test timeout
    truncateSync(path, 8 * 1024 ** 3);
    const out = await read(root, { path: 'huge.txt', limit: 2 });
    expect(out).toContain('    1\tline 1\n    2\tline 2\n[truncated: showing lines 1-2, file continues');
  });

  it('refuses binary files, saying so and giving the size', async () => {
    const root = tempDir();
    writeFiles(root, { 'blob.dat': Buffer.from([1, 2, 0, 3, 4]), 'logo.png': 'not really a png' });
    await expect(read(root, { path: 'blob.dat' })).rejects.toThrow(/blob\.dat is a binary file \(5 bytes\)/);
    await expect(read(root, { path: 'logo.png' })).rejects.toThrow(ToolError);
  });

  it('points a directory at list_dir and a missing file at glob', async () => {
    const root = tempDir();
    writeFiles(root, { 'src/a.ts': 'x' });
    await expect(read(root, { path: 'src' })).rejects.toThrow(/is a directory; use list_dir/);
    await expect(read(root, { path: 'nope.ts' })).rejects.toThrow(/does not exist; use glob or list_dir/);
  });

  it('rejects an offset past the end', async () => {
    const root = tempDir();
    writeFiles(root, { 'a.txt': numbered(3) });
    await expect(read(root, { path: 'a.txt', offset: 9 })).rejects.toThrow(
      'offset 9 is past the end of a.txt (3 lines)',
    );
  });

  it('cuts very long lines and strips CRLF', async () => {
    const root = tempDir();
    writeFiles(root, { 'min.js': `${'z'.repeat(100_000)}\r\nend\r\n` });
    const out = await read(root, { path: 'min.js' });
    expect(out).toBe(`    1\t${'z'.repeat(2000)}… [line cut at 2000 chars]\n    2\tend`);
  });

  it('lets a scope error from resolve propagate', async () => {
    const root = tempDir();
    const outside = tempDir();
    writeFiles(outside, { 'secret.txt': 'top secret' });
    symlinkSync(join(outside, 'secret.txt'), join(root, 'link.txt'));
    await expect(read(root, { path: 'link.txt' })).rejects.toThrow(/outside the workspace/);
    await expect(read(root, { path: '../x' })).rejects.toThrow(/outside the workspace/);
  });

  it('declares the path it reads for the gate', () => {
    expect(readFileTool.paths?.({ path: 'a.ts' })).toEqual([{ path: 'a.ts', access: 'read' }]);
  });
});
