/**
 * Issue 27: `keel config show` prints the effective config, and `store` may be a PostgreSQL URL with a
 * password in it (as user info, or as libpq's `?password=` parameter). Shown on a screen, pasted into a
 * bug report or a CI log, it must not carry the password: masked as keel's store errors mask it.
 */
import { describe, expect, it } from 'vitest';
import { keel, keelHome } from '../e2e/harness.js';
import { tempDir } from '../helpers/tmp.js';

describe('the store password in keel config show', () => {
  it('is masked in the text and the JSON, in the URL user info, its query, and from KEEL_STORE', async () => {
    const cases: Array<{ config?: string; env?: Record<string, string>; shown: string }> = [
      {
        config: 'store = "postgres://keel:hunter2-secret@db.internal:5432/keel"\n',
        shown: 'postgres://keel:***@db.internal:5432/keel',
      },
      {
        config: 'store = "postgresql://keel@db.internal/keel?sslmode=require&password=hunter2-secret"\n',
        shown: 'postgresql://keel@db.internal/keel?sslmode=require&password=***',
      },
      {
        config: 'profile = "team"\n[profiles.team]\nstore = "postgres://keel:hunter2%2Dsecret@db/keel"\n',
        shown: 'postgres://keel:***@db/keel',
      },
      { env: { KEEL_STORE: 'postgres://keel:hunter2-secret@db/keel' }, shown: 'postgres://keel:***@db/keel' },
    ];
    const cwd = tempDir('keel-config-');
    for (const { config, env, shown } of cases) {
      const home = keelHome(config);
      for (const args of [
        ['config', 'show'],
        ['config', 'show', '--json'],
      ]) {
        const run = await keel(args, { cwd, home, ...(env ? { env } : {}) });
        expect(run.code, run.stderr).toBe(0);
        expect(run.stdout + run.stderr).not.toMatch(/hunter2/);
        expect(run.stdout).toContain(shown);
      }
    }
  });
});
