import { spawnSync } from 'node:child_process';
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { KEEL_BIN } from '../e2e/harness.js';
import { MANIFEST, realText } from '../helpers/secret-corpus.js';
import { git, gitRepo } from '../helpers/tmp.js';

// Issue 7, finding 11: formats `keel check` let through. Each is a labelled line of the corpus.
const MISSED: Array<[string, string, number]> = [
  ['unquoted .env password', 'app/.env', 5],
  ['unquoted YAML password', 'deploy/config.yaml', 7],
  ['unquoted .properties password', 'src/main/resources/application.properties', 4],
  ['64-hex JWT_SECRET', 'app/.env', 7],
  ['Google AIza key in YAML', 'deploy/config.yaml', 10],
  ['postgres URL with a password', 'app/.env', 6],
  ['GitLab glpat-', 'deploy/values.yaml', 23],
  ['Twilio SK', 'app/.env', 21],
  ['SendGrid SG.', 'app/.env', 20],
  ['Slack xapp-', 'deploy/config.yaml', 18],
  ['.npmrc _authToken', 'home/.npmrc', 2],
  ['PuTTY .ppk key', 'keys/key.ppk', 8],
  ['0x 64-hex private key', 'wallet/.env', 1],
  ['Basic auth header', 'scripts/deploy.sh', 6],
  ['Discord token', 'src/config.ts', 13],
  ['docker config.json auth', 'home/.docker/config.json', 4],
];

describe('keel check as a pre-commit hook stops every format it used to miss', () => {
  it('blocks the commit and names each secret by file, line and rule', () => {
    const dir = gitRepo({ 'README.md': '# app\n' });
    const hook = join(dir, '.git', 'hooks', 'pre-commit');
    writeFileSync(hook, `#!/bin/sh\nexec "${process.execPath}" "${KEEL_BIN}" check\n`);
    chmodSync(hook, 0o755);
    const files = [...new Set(MISSED.map(([, file]) => file))];
    for (const file of files) {
      const full = join(dir, file);
      spawnSync('mkdir', ['-p', join(full, '..')]);
      writeFileSync(full, realText(file));
    }
    git(dir, 'add', '-A');
    const commit = spawnSync('git', ['commit', '-q', '-m', 'add config'], {
      cwd: dir,
      encoding: 'utf8',
      env: {
        PATH: process.env.PATH,
        HOME: dir,
        KEEL_HOME: join(dir, '.git', 'keel-home'),
        NO_COLOR: '1',
        GIT_AUTHOR_NAME: 't',
        GIT_AUTHOR_EMAIL: 't@e',
        GIT_COMMITTER_NAME: 't',
        GIT_COMMITTER_EMAIL: 't@e',
      },
    });
    expect(commit.status).toBe(1);
    expect(git(dir, 'log', '--oneline')).not.toContain('add config');
    for (const [what, file, line] of MISSED) {
      const rule = MANIFEST.cases.find((c) => c.file === file && c.line === line)?.rule;
      expect(rule, what).toBeTruthy();
      expect(commit.stdout + commit.stderr, what).toMatch(
        new RegExp(`^${file.replaceAll('.', '\\.')}:${line}:\\d+  ${rule}  `, 'm'),
      );
    }
  });
});
