import { chmodSync, readdirSync, readFileSync, statSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { editFileTool } from '../../src/tools/edit-file.js';
import { ToolError } from '../../src/tools/types.js';
import { writeFileTool } from '../../src/tools/write-file.js';
import { tempDir, testContext, writeFiles } from './context.js';

type EditArgs = { path: string; old_string: string; new_string: string; replace_all?: boolean };

const edit = (root: string, args: EditArgs) => editFileTool.execute(args, testContext(root));
const write = (root: string, path: string, content: string) =>
  writeFileTool.execute({ path, content }, testContext(root));
const text = (root: string, path: string) => readFileSync(join(root, path), 'utf8');

describe('edit_file', () => {
  it('replaces a unique string and reports the change', async () => {
    const root = tempDir();
    writeFiles(root, { 'src/a.ts': 'const a = 1;\nconst b = 2;\n' });
    const res = await edit(root, {
      path: 'src/a.ts',
      old_string: 'const b = 2;',
      new_string: 'const b = 3;\nconst c = 4;',
    });
    expect(text(root, 'src/a.ts')).toBe('const a = 1;\nconst b = 3;\nconst c = 4;\n');
    expect(res).toEqual({
      output: 'Edited src/a.ts: 1 replacement (+2 -1 lines)',
      filesChanged: ['src/a.ts'],
      diffLines: 3,
      outcome: { added: 2, removed: 1 },
      diff: [
        '--- a/src/a.ts',
        '+++ b/src/a.ts',
        '@@ -1,2 +1,3 @@',
        ' const a = 1;',
        '-const b = 2;',
        '+const b = 3;',
        '+const c = 4;',
      ].join('\n'),
    });
    // the atomic write leaves no temp file behind
    expect(readdirSync(join(root, 'src'))).toEqual(['a.ts']);
  });

  it('says when old_string is missing, and hints to re-read the file', async () => {
    const root = tempDir();
    writeFiles(root, { 'a.ts': 'x\n' });
    await expect(edit(root, { path: 'a.ts', old_string: 'y', new_string: 'z' })).rejects.toThrow(
      /old_string not found in a\.ts\. Re-read the file/,
    );
  });

  it('refuses an ambiguous match unless replace_all is set', async () => {
    const root = tempDir();
    writeFiles(root, { 'a.ts': 'foo\nfoo\nfoo\n' });
    const call = edit(root, { path: 'a.ts', old_string: 'foo', new_string: 'bar' });
    await expect(call).rejects.toThrow(ToolError);
    await expect(call).rejects.toThrow(/matches 3 places in a\.ts.*more surrounding lines.*replace_all=true/);
    expect(text(root, 'a.ts')).toBe('foo\nfoo\nfoo\n');
    const res = await edit(root, { path: 'a.ts', old_string: 'foo', new_string: 'bar', replace_all: true });
    expect(text(root, 'a.ts')).toBe('bar\nbar\nbar\n');
    expect(res.output).toBe('Edited a.ts: 3 replacements (+3 -3 lines)');
  });

  it('refuses identical strings and an empty old_string', async () => {
    const root = tempDir();
    writeFiles(root, { 'a.ts': 'x\n' });
    await expect(edit(root, { path: 'a.ts', old_string: 'x', new_string: 'x' })).rejects.toThrow(/identical/);
    await expect(edit(root, { path: 'a.ts', old_string: '', new_string: 'y' })).rejects.toThrow(
      /use write_file/,
    );
  });

  it('keeps $ patterns in new_string literal', async () => {
    const root = tempDir();
    writeFiles(root, { 'a.ts': 'price\n' });
    await edit(root, { path: 'a.ts', old_string: 'price', new_string: "$& costs $1 and $'" });
    expect(text(root, 'a.ts')).toBe("$& costs $1 and $'\n");
  });

  it('preserves CRLF line endings and the file mode', async () => {
    const root = tempDir();
    writeFiles(root, { 'run.sh': 'echo one\r\necho two\r\n' });
    chmodSync(join(root, 'run.sh'), 0o755);
    await edit(root, { path: 'run.sh', old_string: 'echo one\necho two', new_string: 'echo 1\necho 2' });
    expect(text(root, 'run.sh')).toBe('echo 1\r\necho 2\r\n');
    expect(statSync(join(root, 'run.sh')).mode & 0o777).toBe(0o755);
  });

  it('writes through a symlink to its canonical target, keeping the link', async () => {
    const root = tempDir();
    writeFiles(root, { 'real.ts': 'old\n' });
    symlinkSync('real.ts', join(root, 'link.ts'));
    const res = await edit(root, { path: 'link.ts', old_string: 'old', new_string: 'new' });
    expect(text(root, 'real.ts')).toBe('new\n');
    expect(res.filesChanged).toEqual(['real.ts']);
    expect(readdirSync(root).sort()).toEqual(['link.ts', 'real.ts']);
  });

  it('points a missing file at write_file', async () => {
    const root = tempDir();
    await expect(edit(root, { path: 'new.ts', old_string: 'a', new_string: 'b' })).rejects.toThrow(
      /use write_file/,
    );
  });

  it('previews the exact change it would make without making it', async () => {
    const root = tempDir();
    writeFiles(root, { 'a.ts': 'x = 1\n' });
    const preview = await editFileTool.preview?.(
      { path: 'a.ts', old_string: '1', new_string: '2' },
      testContext(root),
    );
    expect(preview).toEqual({
      path: 'a.ts',
      diff: '--- a/a.ts\n+++ b/a.ts\n@@ -1,1 +1,1 @@\n-x = 1\n+x = 2',
    });
    expect(text(root, 'a.ts')).toBe('x = 1\n');
    const created = await writeFileTool.preview?.({ path: 'b/new.ts', content: 'y\n' }, testContext(root));
    expect(created).toEqual({ path: 'b/new.ts', diff: '--- /dev/null\n+++ b/b/new.ts\n@@ -0,0 +1,1 @@\n+y' });
    expect(readdirSync(root)).toEqual(['a.ts']);
  });

  it('declares a write access for the gate', () => {
    expect(editFileTool.paths?.({ path: 'a', old_string: 'x', new_string: 'y' })).toEqual([
      { path: 'a', access: 'write' },
    ]);
  });
});

describe('write_file', () => {
  it('creates parent folders and reports a created file', async () => {
    const root = tempDir();
    const res = await write(root, 'deep/er/new.ts', 'a\nb\n');
    expect(text(root, 'deep/er/new.ts')).toBe('a\nb\n');
    expect(res).toEqual({
      output: 'Created deep/er/new.ts (2 lines)',
      filesChanged: ['deep/er/new.ts'],
      diffLines: 2,
      outcome: { added: 2, removed: 0 },
      diff: '--- /dev/null\n+++ b/deep/er/new.ts\n@@ -0,0 +1,2 @@\n+a\n+b',
    });
  });

  it('reports an overwrite with its line diff, and an unchanged write as such', async () => {
    const root = tempDir();
    writeFiles(root, { 'a.txt': 'one\ntwo\n' });
    const res = await write(root, 'a.txt', 'one\nthree\nfour\n');
    expect(res).toMatchObject({
      output: 'Overwrote a.txt (+2 -1 lines)',
      filesChanged: ['a.txt'],
      diffLines: 3,
    });
    expect(res.diff).toBe('--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,3 @@\n one\n-two\n+three\n+four');
    const same = await write(root, 'a.txt', 'one\nthree\nfour\n');
    expect(same.output).toBe('a.txt already has this content; nothing written');
    expect(same.filesChanged).toBeUndefined();
  });

  it('lets a scope error propagate and writes nothing outside', async () => {
    const root = tempDir();
    await expect(write(root, '../escape.txt', 'x')).rejects.toThrow(/outside the workspace/);
  });

  it('refuses to overwrite a folder', async () => {
    const root = tempDir();
    writeFiles(root, { 'dir/f': '' });
    await expect(write(root, 'dir', 'x')).rejects.toThrow(/not a regular file/);
  });
});
