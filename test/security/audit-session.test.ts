/**
 * The audit chain vouches for the session log it summarizes: a session whose recorded start was changed in
 * keel.db (its mode raised to auto), or one written into keel.db with no audit line at all, is refused on
 * resume, and `keel audit verify` names it instead of saying "intact".
 */
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { keel, keelHome, model, modelFlags } from '../e2e/harness.js';
import { gitRepo } from '../helpers/tmp.js';

function edit(home: string, sql: string, ...params: unknown[]): void {
  const db = new Database(join(home, 'keel.db'));
  // a forger renames rows at will
  db.pragma('foreign_keys = OFF');
  try {
    db.prepare(sql).run(...params);
  } finally {
    db.close();
  }
}

describe('audit vouches for sessions', () => {
  it('a mode changed in keel.db is refused on resume and reported by keel audit verify', async () => {
    const repo = gitRepo();
    const home = keelHome();
    const server = await model([
      { text: 'first' },
      { text: 'forked on' },
      { text: 'second home' },
      { text: 'forged' },
    ]);
    const a = JSON.parse(
      (await keel(['ask', ...modelFlags(server), '--json', 'hi'], { cwd: repo, home })).stdout,
    );
    const fork = JSON.parse(
      (await keel(['sessions', 'fork', '--json', a.session_id], { cwd: repo, home })).stdout,
    );
    // an untouched session and its fork go on, and the chain is intact
    const forked = await keel(['sessions', 'resume', fork.session_id, ...modelFlags(server), '-m', 'go on'], {
      cwd: repo,
      home,
    });
    expect(forked.code).toBe(0);
    expect((await keel(['audit', 'verify'], { cwd: repo, home })).code).toBe(0);

    edit(home, "UPDATE sessions SET mode = 'auto' WHERE id = ?", a.session_id);
    edit(
      home,
      "UPDATE events SET data = json_set(data, '$.mode', 'auto') WHERE session_id = ? AND type = 'session_start'",
      a.session_id,
    );
    const resumed = await keel(['sessions', 'resume', a.session_id, ...modelFlags(server), '-m', 'go on'], {
      cwd: repo,
      home,
    });
    expect(resumed.code).toBe(2);
    expect(resumed.stderr).toMatch(/mode auto in keel\.db, ask in the audit chain/);
    // the fork too: its start is its parent's, which the chain sealed
    edit(home, "UPDATE sessions SET mode = 'auto' WHERE id = ?", fork.session_id);
    const forkedAuto = await keel(
      ['sessions', 'resume', fork.session_id, ...modelFlags(server), '-m', 'more'],
      {
        cwd: repo,
        home,
      },
    );
    expect(forkedAuto.code).toBe(2);
    expect(forkedAuto.stderr).toMatch(/mode auto in keel\.db, ask in the audit chain/);
    const verify = await keel(['audit', 'verify'], { cwd: repo, home });
    expect(verify.code).toBe(1);
    expect(verify.stdout).not.toContain('intact');
    expect(verify.stderr).toContain(a.session_id);

    // the variant: a session written into keel.db whole, which no audit line vouches for
    const home2 = keelHome();
    await keel(['ask', ...modelFlags(server), '--json', 'hi'], { cwd: repo, home: home2 });
    const b = JSON.parse(
      (await keel(['ask', ...modelFlags(server), '--json', 'hi'], { cwd: repo, home: home2 })).stdout,
    );
    edit(home2, "UPDATE sessions SET id = 'forged-session', mode = 'auto' WHERE id = ?", b.session_id);
    edit(home2, "UPDATE events SET session_id = 'forged-session' WHERE session_id = ?", b.session_id);
    const forged = await keel(
      ['sessions', 'resume', 'forged-session', ...modelFlags(server), '-m', 'go on'],
      {
        cwd: repo,
        home: home2,
      },
    );
    expect(forged.code).toBe(2);
    expect(forged.stderr).toMatch(/no audit line/);
    expect((await keel(['audit', 'verify'], { cwd: repo, home: home2 })).stderr).toContain('forged-session');
  });
});
