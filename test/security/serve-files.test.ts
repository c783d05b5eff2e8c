/**
 * The browser workspace's file viewer reads the project through `keel serve` (GET /v1/files and
 * /v1/files/content). Through the real binary: nothing without the token, and with it nothing outside the
 * project however the path is spelled (`..`, escaped `..`, absolute, a symlink to /etc/passwd, a folder
 * linked out of the project, a link to a credential file, a hard link to a file outside), nothing of git's metadata, no credential file
 * (.env, a private key), no file whose text holds a credential, no binary and nothing over the size cap;
 * and the tree lists none of them.
 */
import { linkSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { keelHome, model, modelFlags } from '../e2e/harness.js';
import { startServe } from '../e2e/serve-harness.js';
import { gitRepo, tempDir } from '../helpers/tmp.js';

const AWS = 'AKIAZ7QWERTYUIOPASDF';

describe('keel serve: the project files, read-only', () => {
  it('reads text files of the project only, and refuses every way out, git, secrets, binaries and big files', async () => {
    const outside = tempDir();
    writeFileSync(join(outside, 'loot.txt'), 'OUTSIDE-LOOT\n');
    const repo = gitRepo({ 'src/a.ts': 'export const a = 1;\n', 'README.md': '# demo\n' });
    writeFileSync(join(repo, '.env'), 'OPENAI_API_KEY=ENV-FILE-SECRET\n');
    writeFileSync(join(repo, 'deploy.pem'), 'PEM-FILE-BODY\n');
    writeFileSync(join(repo, 'settings.py'), `AWS_ACCESS_KEY_ID = "${AWS}"\n`);
    writeFileSync(join(repo, 'blob.bin'), Buffer.from([0x7f, 0x45, 0x4c, 0x46, 0, 0, 1, 2]));
    writeFileSync(join(repo, 'big.txt'), 'x'.repeat(1024 * 1024 + 1));
    linkSync(join(outside, 'loot.txt'), join(repo, 'hard.txt'));
    symlinkSync('/etc/passwd', join(repo, 'passwd-link'));
    symlinkSync(outside, join(repo, 'out-dir'));
    symlinkSync(join(repo, '.env'), join(repo, 'innocent.txt'));
    symlinkSync(join(repo, '.git'), join(repo, 'gitlink'));
    symlinkSync('src/a.ts', join(repo, 'a-link.ts'));
    mkdirSync(join(repo, 'docs'));
    writeFileSync(join(repo, 'docs', 'guide.md'), '# Guide\n');

    const server = await model([]);
    const s = await startServe({ cwd: repo, home: keelHome(), args: modelFlags(server) });

    for (const path of ['/v1/files', '/v1/files?dir=src', '/v1/files/content?path=src/a.ts'])
      for (const token of [null, 'wrong', s.token.slice(0, -1)]) {
        const res = await s.api('GET', path, undefined, { token });
        expect(res.status, `${path} with ${token}`).toBe(401);
      }

    // the tree: folders first, nothing hidden or leading out
    const top = await s.api('GET', '/v1/files');
    expect(top.status).toBe(200);
    const names = top.body.entries.map((e: { name: string }) => e.name);
    expect(names).toEqual([
      'docs',
      'src',
      'a-link.ts',
      'big.txt',
      'blob.bin',
      'hard.txt',
      'README.md',
      'settings.py',
    ]);
    expect((await s.api('GET', '/v1/files?dir=src')).body.entries).toEqual([
      { name: 'a.ts', path: 'src/a.ts', kind: 'file', size: 20 },
    ]);

    // what may be read
    const a = await s.api('GET', '/v1/files/content?path=src/a.ts');
    expect(a.body).toEqual({ path: 'src/a.ts', size: 20, text: 'export const a = 1;\n' });
    expect((await s.api('GET', '/v1/files/content?path=a-link.ts')).body.text).toBe('export const a = 1;\n');
    expect((await s.api('GET', '/v1/files/content?path=./docs/guide.md')).body.path).toBe('docs/guide.md');

    const refused: Array<[string, number, string]> = [
      ['../../../../etc/passwd', 400, 'BAD_PATH'],
      ['src/../../etc/passwd', 400, 'BAD_PATH'],
      ['%2e%2e%2f%2e%2e%2fetc%2fpasswd', 400, 'BAD_PATH'],
      ['src%2f..%2f..%2fetc%2fpasswd', 400, 'BAD_PATH'],
      ['..\\..\\etc\\passwd', 400, 'BAD_PATH'],
      ['/etc/passwd', 400, 'BAD_PATH'],
      [encodeURIComponent(join(repo, 'src/a.ts')), 400, 'BAD_PATH'],
      ['passwd-link', 403, 'OUTSIDE'],
      ['out-dir/loot.txt', 403, 'OUTSIDE'],
      ['hard.txt', 403, 'HARD_LINK'],
      ['.git/config', 403, 'HIDDEN'],
      ['.git/HEAD', 403, 'HIDDEN'],
      ['.GIT./config', 404, 'NOT_FOUND'],
      ['gitlink/config', 403, 'HIDDEN'],
      ['.env', 403, 'HIDDEN'],
      ['innocent.txt', 403, 'HIDDEN'],
      ['deploy.pem', 403, 'HIDDEN'],
      ['settings.py', 403, 'SECRET'],
      ['blob.bin', 415, 'BINARY'],
      ['big.txt', 413, 'TOO_LARGE'],
      ['src', 400, 'NOT_A_FILE'],
      ['src/a.ts%00.md', 400, 'BAD_PATH'],
      ['nope.txt', 404, 'NOT_FOUND'],
    ];
    for (const [path, status, code] of refused) {
      const res = await s.api('GET', `/v1/files/content?path=${path}`);
      expect([res.status, res.body.code], path).toEqual([status, code]);
      const text = JSON.stringify(res.body);
      for (const leak of [
        'root:x:0',
        'OUTSIDE-LOOT',
        'ENV-FILE-SECRET',
        'PEM-FILE-BODY',
        AWS,
        'repositoryformatversion',
      ])
        expect(text, path).not.toContain(leak);
    }
    for (const [dir, status] of [
      ['..', 400],
      ['/etc', 400],
      ['out-dir', 403],
      ['.git', 403],
      ['gitlink', 403],
      ['src/a.ts', 400],
    ] as const) {
      const res = await s.api('GET', `/v1/files?dir=${encodeURIComponent(dir)}`);
      expect(res.status, dir).toBe(status);
      expect(JSON.stringify(res.body)).not.toContain('loot.txt');
    }
  });
});
