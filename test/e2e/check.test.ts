import { spawnSync } from 'node:child_process';
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { CORPUS_FILES, committedText, MANIFEST, realText } from '../helpers/secret-corpus.js';
import { git, gitRepo, tempDir, writeFiles } from '../helpers/tmp.js';

const KEEL = fileURLToPath(new URL('../../bin/keel.js', import.meta.url));
// assembled so this repository holds no secret of its own; AWS's documented AKIAIOSFODNN7EXAMPLE is
// deliberately not a finding, so this is a synthetic id in the same format
const AWS_ID = 'AKIA' + 'Q3ZLW7RN4XTB2KHD';
const GH_TOKEN = 'ghp_' + 'R4nd0mT0k3nV4lu3F0rT3st1ngAbCdEf0123';

function keel(cwd: string, ...args: string[]) {
  const result = spawnSync(process.execPath, [KEEL, ...args], {
    cwd,
    encoding: 'utf8',
    env: { PATH: process.env.PATH, HOME: cwd, KEEL_HOME: join(cwd, '.keel-home'), NO_COLOR: '1' },
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe('keel check', () => {
  it('fails on a staged secret, naming file, line and rule, without printing the secret', () => {
    const dir = gitRepo();
    writeFiles(dir, { 'config/app.ts': `// settings\nexport const awsId = '${AWS_ID}';\n` });
    git(dir, 'add', 'config/app.ts');
    const run = keel(dir, 'check');
    expect(run.code).toBe(1);
    expect(run.stdout).toContain('config/app.ts:2:23  aws-access-key  AKIA****');
    expect(run.stderr).toContain('keel: 1 secret found');
    expect(run.stdout + run.stderr).not.toContain(AWS_ID);
  });

  it('scans what is staged, not the working tree; --all-files scans every tracked file', () => {
    const dir = gitRepo({
      'src/old.ts': `export const token = '${GH_TOKEN}';\n`,
      'src/b.ts': 'export {};\n',
    });
    writeFiles(dir, { 'src/b.ts': `export const id = '${AWS_ID}';\n`, 'notes.txt': 'nothing to see\n' });
    git(dir, 'add', 'notes.txt');

    const staged = keel(dir, 'check');
    expect(staged.code).toBe(0);
    expect(staged.stderr).toContain('no secrets found in 1 file');

    const all = keel(dir, 'check', '--all-files');
    expect(all.code).toBe(1);
    expect(all.stdout).toContain('src/old.ts:1:23  github-token  ghp_****');
    expect(all.stdout).toContain('src/b.ts:1:20  aws-access-key');
    expect(all.stderr).toContain('keel: 2 secrets found');
  });

  it('passes a clean repository, and honours a keel-allow pragma', () => {
    const dir = gitRepo({ 'src/index.ts': 'export const answer = 42;\n', 'README.md': '# demo\n' });
    writeFiles(dir, {
      'src/fixture.ts': `export const sample = '${AWS_ID}'; // keel-allow: aws-access-key\n`,
    });
    git(dir, 'add', '-A');
    expect(keel(dir, 'check')).toMatchObject({ code: 0, stdout: '' });
    const all = keel(dir, 'check', '--all-files');
    expect(all.code).toBe(0);
    expect(all.stderr).toContain('no secrets found in 3 files');
  });

  it('--json prints one document with files_scanned and redacted findings', () => {
    const dir = gitRepo();
    writeFiles(dir, { '.env': `GITHUB_TOKEN=${GH_TOKEN}\n` });
    git(dir, 'add', '.env');
    const run = keel(tempDir(), 'check', '--json', '-C', dir);
    expect(run.code).toBe(1);
    expect(JSON.parse(run.stdout)).toEqual({
      files_scanned: 1,
      findings: [{ file: '.env', line: 1, column: 14, rule: 'github-token', preview: 'ghp_****' }],
    });
    expect(run.stdout).not.toContain(GH_TOKEN);

    const clean = keel(gitRepo(), 'check', '--json', '--all-files');
    expect(clean.code).toBe(0);
    expect(JSON.parse(clean.stdout)).toEqual({ files_scanned: 1, findings: [] });
  });

  it('exits 2 outside a git repository, and for a folder that does not exist', () => {
    const outside = keel(tempDir(), 'check');
    expect(outside.code).toBe(2);
    expect(outside.stderr).toMatch(/not a git repository/);
    expect(outside.stdout).toBe('');
    expect(keel(tempDir(), 'check', '-C', '/no/such/folder').code).toBe(2);
  });

  it('as a pre-commit hook, blocks `git commit -a` that would commit a secret', () => {
    const dir = gitRepo({ 'src/a.ts': 'export {};\n' });
    const hook = join(dir, '.git', 'hooks', 'pre-commit');
    writeFileSync(hook, `#!/bin/sh\nexec "${process.execPath}" "${KEEL}" check\n`);
    chmodSync(hook, 0o755);
    writeFiles(dir, { 'src/a.ts': `export const id = '${AWS_ID}';\n` });
    // spawned directly (not via the git helper) so the hook's report is captured, not echoed
    const env = {
      PATH: process.env.PATH,
      HOME: dir,
      GIT_AUTHOR_NAME: 't',
      GIT_AUTHOR_EMAIL: 't@e',
      GIT_COMMITTER_NAME: 't',
      GIT_COMMITTER_EMAIL: 't@e',
    };
    const blocked = spawnSync('git', ['commit', '-q', '-a', '-m', 'leak'], {
      cwd: dir,
      encoding: 'utf8',
      env,
    });
    expect(blocked.status).not.toBe(0);
    expect(blocked.stdout + blocked.stderr).toContain('src/a.ts:1:20  aws-access-key');
    expect(git(dir, 'log', '--oneline')).not.toContain('leak');

    writeFiles(dir, { 'src/a.ts': 'export const id = 1;\n' });
    git(dir, 'commit', '-q', '-a', '-m', 'fine');
    expect(git(dir, 'log', '--oneline')).toContain('fine');
  });

  it('--all-files reports exactly the corpus secrets, committed as real files, each redacted', () => {
    const dir = gitRepo(Object.fromEntries(CORPUS_FILES.map((file) => [file, realText(file)])));
    const run = keel(dir, 'check', '--all-files', '--json');
    expect(run.code).toBe(1);
    const { files_scanned, findings } = JSON.parse(run.stdout) as {
      files_scanned: number;
      findings: Array<{ file: string; line: number; rule: string; preview: string }>;
    };
    expect(files_scanned).toBe(CORPUS_FILES.length);
    const expected = MANIFEST.cases
      .filter((c) => c.rule !== null)
      .map((c) => `${c.file}:${c.line} ${c.rule}`);
    expect(findings.map((f) => `${f.file}:${f.line} ${f.rule}`).sort()).toEqual(expected.sort());
    for (const f of findings) expect(f.preview).toMatch(/^.{0,4}\*\*\*\*$/);
  });

  it('passes the corpus as this repository commits it (defanged), and a documented example key', () => {
    const corpus = Object.fromEntries(
      CORPUS_FILES.map((file) => [`corpus/${file}.txt`, committedText(file)]),
    );
    const dir = gitRepo({ ...corpus, 'docs/aws.md': `Example: ${'AKIA' + 'IOSFODNN7EXAMPLE'}\n` });
    const run = keel(dir, 'check', '--all-files');
    expect(run.stdout).toBe('');
    expect(run.code).toBe(0);
  });
});
