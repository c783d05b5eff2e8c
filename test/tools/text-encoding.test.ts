import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { editFileTool } from '../../src/tools/edit-file.js';
import { readFileTool } from '../../src/tools/read-file.js';
import { decodeFile, detectEncoding, encodeText } from '../../src/tools/text-encoding.js';
import { writeFileTool } from '../../src/tools/write-file.js';
import { tempDir, testContext, writeFiles } from './context.js';

type EditArgs = { path: string; old_string: string; new_string: string; replace_all?: boolean };

const edit = (root: string, args: EditArgs) => editFileTool.execute(args, testContext(root));
const write = (root: string, path: string, content: string) =>
  writeFileTool.execute({ path, content }, testContext(root));
const read = async (root: string, path: string) =>
  (await readFileTool.execute({ path }, testContext(root))).output;
const bytes = (root: string, path: string) => readFileSync(join(root, path));

const latin1 = (s: string) => Buffer.from(s, 'latin1');
const utf16le = (s: string) => Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(s, 'utf16le')]);
const utf16be = (s: string) => Buffer.concat([Buffer.from([0xfe, 0xff]), Buffer.from(s, 'utf16le').swap16()]);
const utf8bom = (s: string) => Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(s, 'utf8')]);

describe('encoding detection', () => {
  it('tells the supported encodings apart', () => {
    expect(detectEncoding(Buffer.from('café\n'))).toBe('utf-8');
    expect(detectEncoding(utf8bom('x'))).toBe('utf-8-bom');
    expect(detectEncoding(utf16le('x'))).toBe('utf-16le');
    expect(detectEncoding(utf16be('x'))).toBe('utf-16be');
    expect(detectEncoding(latin1('café\n'))).toBe('latin1');
    // a UTF-8 sequence cut by the end of a head read is not held against UTF-8
    expect(detectEncoding(Buffer.from('café').subarray(0, 4), false)).toBe('utf-8');
    expect(detectEncoding(Buffer.from('café').subarray(0, 4), true)).toBe('latin1');
  });

  it('refuses what it cannot read back byte for byte', () => {
    expect(decodeFile(Buffer.from([0x61, 0, 0x62]))).toEqual({ binary: 'it contains NUL bytes' });
    expect(decodeFile(Buffer.from([0xff, 0xfe, 0x61]))).toEqual({
      binary: 'UTF-16 with an odd number of bytes',
    });
    // a UTF-32 LE BOM is not taken for UTF-16
    expect(decodeFile(Buffer.from([0xff, 0xfe, 0, 0, 0x61, 0, 0, 0]))).toHaveProperty('binary');
  });

  it('round-trips every byte value as Latin-1 and lone surrogates as UTF-16', () => {
    const all = Buffer.from(Array.from({ length: 255 }, (_, i) => i + 1));
    const decoded = decodeFile(all);
    expect(decoded).toMatchObject({ encoding: 'latin1' });
    if ('text' in decoded) expect(encodeText(decoded.text, 'latin1').equals(all)).toBe(true);
    const lone = Buffer.from([0xff, 0xfe, 0x00, 0xd8, 0x41, 0x00]);
    const back = decodeFile(lone);
    expect(back).toMatchObject({ encoding: 'utf-16le', text: '\ud800A' });
  });
});

describe('edit_file keeps bytes', () => {
  it('edits one line of a Latin-1 file and leaves every other byte identical', async () => {
    const root = tempDir();
    const before = latin1('caf\xe9 = 1\nna\xefve = 2\nend\n');
    writeFiles(root, { 'menu.txt': before });
    await edit(root, { path: 'menu.txt', old_string: 'na\xefve = 2', new_string: 'na\xefve = 3' });
    expect(bytes(root, 'menu.txt').equals(latin1('caf\xe9 = 1\nna\xefve = 3\nend\n'))).toBe(true);
  });

  it('refuses a character Latin-1 cannot hold, naming it, and writes nothing', async () => {
    const root = tempDir();
    const before = latin1('price = 5 EUR\ncaf\xe9\n');
    writeFiles(root, { 'p.txt': before });
    await expect(edit(root, { path: 'p.txt', old_string: '5 EUR', new_string: '5 €' })).rejects.toThrow(
      /new_string has "€" \(U\+20AC\), which p\.txt cannot hold: it is Latin-1/,
    );
    expect(bytes(root, 'p.txt').equals(before)).toBe(true);
  });

  it.each([
    ['UTF-16 LE', utf16le],
    ['UTF-16 BE', utf16be],
    ['UTF-8 with BOM', utf8bom],
  ])('edits a %s file in place, keeping its BOM', async (_name, encode) => {
    const root = tempDir();
    writeFiles(root, { 'r.rc': encode('naïve\r\nkeep 日本\r\nlast\r\n') });
    await edit(root, { path: 'r.rc', old_string: 'naïve\nkeep', new_string: 'naive →\nkeep' });
    expect(bytes(root, 'r.rc').equals(encode('naive →\r\nkeep 日本\r\nlast\r\n'))).toBe(true);
  });

  it('keeps CRLF, stray invalid bytes and UTF-8 sequences of a mixed file', async () => {
    const root = tempDir();
    // mostly UTF-8 with one Latin-1 byte: read as Latin-1, so the UTF-8 bytes are kept as they are
    const before = Buffer.concat([
      Buffer.from('a = "ü"\r\n'),
      Buffer.from([0xe9, 0x0d, 0x0a]),
      Buffer.from('x = 1\r\n'),
    ]);
    writeFiles(root, { 'm.py': before });
    await edit(root, { path: 'm.py', old_string: 'x = 1', new_string: 'x = 2' });
    const want = Buffer.concat([
      Buffer.from('a = "ü"\r\n'),
      Buffer.from([0xe9, 0x0d, 0x0a]),
      Buffer.from('x = 2\r\n'),
    ]);
    expect(bytes(root, 'm.py').equals(want)).toBe(true);
  });

  it('replaces every occurrence with replace_all in Latin-1, touching only those bytes', async () => {
    const root = tempDir();
    writeFiles(root, { 'l.txt': latin1('\xe9t\xe9 foo\nfoo \xff\nfoo\n') });
    const res = await edit(root, {
      path: 'l.txt',
      old_string: 'foo',
      new_string: 'b\xe0r',
      replace_all: true,
    });
    expect(bytes(root, 'l.txt').equals(latin1('\xe9t\xe9 b\xe0r\nb\xe0r \xff\nb\xe0r\n'))).toBe(true);
    // the diff is counted on the decoded text, so untouched lines do not count
    expect(res.output).toBe('Edited l.txt: 3 replacements (+3 -3 lines)');
  });

  it('refuses a binary file and a UTF-16 file cut to an odd length', async () => {
    const root = tempDir();
    writeFiles(root, {
      'b.dat': Buffer.from([0x61, 0x00, 0x62]),
      'odd.txt': Buffer.from([0xff, 0xfe, 0x61, 0x00, 0x62]),
    });
    await expect(edit(root, { path: 'b.dat', old_string: 'a', new_string: 'c' })).rejects.toThrow(
      /binary file/,
    );
    await expect(edit(root, { path: 'odd.txt', old_string: 'a', new_string: 'c' })).rejects.toThrow(
      /odd number of bytes/,
    );
  });
});

describe('write_file keeps an existing file encoding', () => {
  it('rewrites a UTF-16 LE file in UTF-16 LE with its BOM', async () => {
    const root = tempDir();
    writeFiles(root, { 'w.txt': utf16le('one\r\ntwo\r\n') });
    const res = await write(root, 'w.txt', 'one\r\nthree\r\n');
    expect(bytes(root, 'w.txt').equals(utf16le('one\r\nthree\r\n'))).toBe(true);
    expect(res.output).toBe('Overwrote w.txt (+1 -1 lines; kept its encoding, UTF-16 LE with BOM)');
    // identical content, even with the BOM the model may copy, writes nothing
    expect((await write(root, 'w.txt', '\ufeffone\r\nthree\r\n')).output).toMatch(/already has this content/);
  });

  it('rewrites a Latin-1 file in Latin-1 and refuses what Latin-1 cannot hold', async () => {
    const root = tempDir();
    writeFiles(root, { 'l.txt': latin1('caf\xe9\n') });
    await write(root, 'l.txt', 'caf\xe9\nna\xefve\n');
    expect(bytes(root, 'l.txt').equals(latin1('caf\xe9\nna\xefve\n'))).toBe(true);
    await expect(write(root, 'l.txt', 'caf\xe9 ☕\n')).rejects.toThrow(
      /content has "☕" \(U\+2615\), which cannot be written: l\.txt is Latin-1 \(not valid UTF-8\) and write_file keeps/,
    );
    expect(bytes(root, 'l.txt').equals(latin1('caf\xe9\nna\xefve\n'))).toBe(true);
  });

  it('keeps a UTF-8 BOM, and writes new files as plain UTF-8', async () => {
    const root = tempDir();
    writeFiles(root, { 'b.cs': utf8bom('class A {}\n') });
    await write(root, 'b.cs', 'class B {}\n');
    expect(bytes(root, 'b.cs').equals(utf8bom('class B {}\n'))).toBe(true);
    await write(root, 'new.txt', 'é\n');
    expect(bytes(root, 'new.txt').equals(Buffer.from('é\n'))).toBe(true);
  });
});

describe('read_file names the encoding', () => {
  it('says when it decoded Latin-1 or UTF-16, and shows the text', async () => {
    const root = tempDir();
    writeFiles(root, {
      'l.txt': latin1('caf\xe9\n'),
      'w.txt': utf16be('a\r\nb\u00e9\r\n'),
      'u.txt': 'plain é\n',
    });
    expect(await read(root, 'l.txt')).toBe(
      '[encoding: Latin-1 (not valid UTF-8); edits keep it]\n    1\tcafé',
    );
    expect(await read(root, 'w.txt')).toBe(
      '[encoding: UTF-16 BE with BOM; edits keep it]\n    1\ta\n    2\tbé',
    );
    // plain UTF-8 gets no note: most files cost no extra tokens
    expect(await read(root, 'u.txt')).toBe('    1\tplain é');
  });

  it('reads what it shows back into an edit that matches', async () => {
    const root = tempDir();
    writeFiles(root, { 'w.txt': utf16le('x = "ü"\n') });
    const shown = (await read(root, 'w.txt')).split('\n')[1]?.split('\t')[1] ?? '';
    await edit(root, { path: 'w.txt', old_string: shown, new_string: 'x = "ö"' });
    expect(bytes(root, 'w.txt').equals(utf16le('x = "ö"\n'))).toBe(true);
  });
});
