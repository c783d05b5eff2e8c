/**
 * Issue 27: several `keel fix` runs on ONE repository at once (a batch's tasks on one repo) meet each
 * other's git locks: a ref being written, the index, the config. git then fails at once with
 * "Unable to create '….lock': File exists"; keel waits and runs the command again instead of failing the
 * fix before any model call. Each fix here finds its own branch's lock held by "another git" for a moment.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { git, tempDir } from '../helpers/tmp.js';
import { editTurns, fixtureRepo, planTurns } from './fix-harness.js';
import { keel, keelHome } from './harness.js';

const ISSUE = 'mean() of [2, 4, 6] returns 3, not 4';
const TURNS = [
  ...planTurns('src/stats.js', '1. mean divides by one too many.\n2. Divide by values.length.'),
  ...editTurns(
    'src/stats.js',
    '  return sum(values) / (values.length + 1);',
    '  return sum(values) / values.length;',
    'mean now divides by the length.',
  ),
];

describe('concurrent keel fix runs on one repository', () => {
  it('wait for the git locks they meet and all verify, each on its own branch', async () => {
    const script = join(tempDir('keel-script-'), 'script.json');
    writeFileSync(script, JSON.stringify({ turns: TURNS }));
    const home = keelHome(`provider = "scripted"\nmodel = "scripted"\nscript = "${script}"\n`);
    const repo = fixtureRepo('stats');
    // the run ids a batch worker would choose (KEEL_BATCH_FIX_RUN_ID) name each fix's branch in advance
    const ids = ['20261205-000000-00aaa1', '20261205-000000-00aaa2', '20261205-000000-00aaa3'];
    mkdirSync(join(repo, '.git', 'refs', 'heads', 'keel'), { recursive: true });
    for (const id of ids) {
      const lock = join(
        repo,
        '.git',
        'refs',
        'heads',
        'keel',
        `fix-mean-of-2-4-6-returns-3-not-4-${id.slice(-6)}.lock`,
      );
      writeFileSync(lock, '');
      // "another git" lets go of the ref after a while
      spawn('sh', ['-c', `sleep 2; rm -f '${lock}'`], { stdio: 'ignore', detached: true }).unref();
    }
    const runs = await Promise.all(
      ids.map((id) =>
        keel(['fix', '--repo', repo, '--issue', ISSUE, '--json'], {
          cwd: repo,
          home,
          env: { KEEL_BATCH_FIX_RUN_ID: id },
          timeoutMs: 120_000,
        }),
      ),
    );
    for (const [i, run] of runs.entries()) {
      expect(run.code, run.stdout + run.stderr).toBe(0);
      const doc = JSON.parse(run.stdout);
      expect(doc.status).toBe('verified');
      expect(doc.branch).toBe(`keel/fix-mean-of-2-4-6-returns-3-not-4-${ids[i]?.slice(-6)}`);
      expect(git(repo, 'show', `${doc.branch}:src/stats.js`)).toContain('/ values.length;');
    }
  }, 180_000);
});
