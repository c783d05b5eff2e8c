/**
 * Applying a verified fix from the page moves the person's branch, so `POST /v1/runs/:id/apply` is held
 * to everything the CLI's `keel runs apply` is, and to the server's own guard: a page elsewhere (its
 * Origin, or none with no token) cannot, a run of another project is not found, a run not verified is
 * not applied, and nothing is applied without the confirmation. The real binary, real repositories.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openDb } from '../../src/store/db.js';
import { EventLog } from '../../src/store/event-log.js';
import { editTurns, fixtureRepo, planTurns } from '../e2e/fix-harness.js';
import { keel, keelHome, model, modelFlags } from '../e2e/harness.js';
import { startServe } from '../e2e/serve-harness.js';
import { git } from '../helpers/tmp.js';

const BUGGY = '  return sum(values) / (values.length + 1);';
const FIXED = '  return sum(values) / values.length;';

async function fixRun(
  repo: string,
  home: string,
  newLine: string,
): Promise<{ run_id: string; status: string }> {
  const server = await model([
    ...planTurns('src/stats.js', '1. mean divides by one too many.'),
    ...editTurns('src/stats.js', BUGGY, newLine, 'Fixed.'),
  ]);
  const run = await keel(
    [
      'fix',
      '--repo',
      repo,
      '--json',
      '--max-attempts',
      '1',
      '--issue',
      'mean of [2, 4, 6] is 3',
      ...modelFlags(server),
    ],
    { cwd: repo, home, timeoutMs: 60_000 },
  );
  const doc = JSON.parse(run.stdout);
  return { run_id: doc.run_id ?? doc.session_id, status: doc.status };
}

describe('POST /v1/runs/:id/apply: only a verified fix of this project, only from the page, only when confirmed', () => {
  it('refuses a cross-origin POST, no token, another project, a run not verified and no confirmation; applies a verified fix by fast-forward, logged and audited; the CLI applies through the same rules', async () => {
    const home = keelHome();
    const project = fixtureRepo('stats');
    const other = fixtureRepo('stats');
    const verified = await fixRun(project, home, FIXED);
    const failed = await fixRun(project, home, '  return sum(values) / (values.length - 1);');
    const elsewhere = await fixRun(other, home, FIXED);
    expect([verified.status, failed.status, elsewhere.status]).toEqual(['verified', 'failed', 'verified']);
    const head = git(project, 'rev-parse', 'HEAD').trim();
    const otherHead = git(other, 'rev-parse', 'HEAD').trim();

    const s = await startServe({ cwd: project, home });
    const apply = (id: string, body: unknown, o?: Parameters<typeof s.api>[3]) =>
      s.api('POST', `/v1/runs/${id}/apply`, body, o);
    const yes = { confirm: true };

    // a page elsewhere, with the token it could have stolen or not
    expect((await apply(verified.run_id, yes, { headers: { origin: 'http://evil.example' } })).status).toBe(
      403,
    );
    expect((await apply(verified.run_id, yes, { headers: { origin: 'null' } })).status).toBe(403);
    expect((await apply(verified.run_id, yes, { token: null })).status).toBe(401);
    // another project's verified run is not named here: neither repository moves
    const foreign = await apply(elsewhere.run_id, yes);
    expect(foreign.status).toBe(404);
    expect((await s.api('GET', `/v1/runs/${elsewhere.run_id}/patch`)).status).toBe(404);
    // not verified: refused, and no patch to download
    const unverified = await apply(failed.run_id, yes);
    expect(unverified.status).toBe(409);
    expect(unverified.body.error).toMatch(
      /is not verified \(failed, VERIFICATION_FAILED\): only a verified fix is applied/,
    );
    expect((await s.api('GET', `/v1/runs/${failed.run_id}/patch`)).status).toBe(409);
    // no confirmation (the CLI's --yes): nothing
    expect((await apply(verified.run_id, {})).status).toBe(400);
    expect((await apply(verified.run_id, { confirm: 'yes' })).status).toBe(400);
    expect(git(project, 'rev-parse', 'HEAD').trim()).toBe(head);
    expect(git(other, 'rev-parse', 'HEAD').trim()).toBe(otherHead);

    // the verified fix of this project: its patch, then a fast-forward to exactly the verified commit
    const patch = await s.api('GET', `/v1/runs/${verified.run_id}/patch`);
    expect(patch.status).toBe(200);
    expect(patch.body).toContain(`+${FIXED}`);
    const view = await s.api('GET', `/v1/runs/${verified.run_id}`);
    expect(view.body.applicable).toBe(true);
    // an uncommitted edit the fast-forward would overwrite: git refuses, the person's edit stays
    const mine = `${readFileSync(join(project, 'src/stats.js'), 'utf8')}// my work in progress\n`;
    writeFileSync(join(project, 'src/stats.js'), mine);
    const dirty = await apply(verified.run_id, yes);
    expect(dirty.status).toBe(409);
    expect(dirty.body.error).toMatch(/git did not apply the fix to main/);
    expect(readFileSync(join(project, 'src/stats.js'), 'utf8')).toBe(mine);
    expect(git(project, 'rev-parse', 'HEAD').trim()).toBe(head);
    git(project, 'checkout', '--', 'src/stats.js');
    const done = await apply(verified.run_id, yes);
    expect(done.status).toBe(200);
    const tip = git(project, 'rev-parse', view.body.branch).trim();
    expect(done.body).toMatchObject({ applied: true, into: 'main', commit: tip });
    expect(git(project, 'rev-parse', 'HEAD').trim()).toBe(tip);
    expect(readFileSync(join(project, 'src/stats.js'), 'utf8')).toContain(FIXED);
    expect((await apply(verified.run_id, yes)).body.error).toMatch(/main already holds the fix/);
    await s.stop();

    // the CLI: the same refusals and the same apply, recorded in the run's log and the audit chain
    const cliFailed = await keel(['runs', 'apply', failed.run_id, '--yes'], { cwd: project, home });
    expect(cliFailed.code).toBe(1);
    expect(cliFailed.stderr).toMatch(/only a verified fix is applied/);
    const cliForeign = await keel(['runs', 'apply', elsewhere.run_id, '--yes'], { cwd: project, home });
    expect(cliForeign.stderr).toMatch(/is not a fix of this repository/);
    // a branch that moved since the run: the fix would land on code no test ran on, so it is refused
    writeFileSync(join(other, 'NOTES.md'), 'later work\n');
    git(other, 'add', 'NOTES.md');
    git(other, 'commit', '-q', '-m', 'later work');
    const moved = await keel(['runs', 'apply', elsewhere.run_id, '--yes'], { cwd: other, home });
    expect(moved.code).toBe(1);
    expect(moved.stderr.replace(/\s+/g, ' ')).toMatch(/main moved since run \S+ started/);
    git(other, 'reset', '-q', '--hard', otherHead);
    const cliNoYes = await keel(['runs', 'apply', elsewhere.run_id], { cwd: other, home });
    expect(cliNoYes.stderr).toMatch(/nothing applied: pass --yes/);
    expect(git(other, 'rev-parse', 'HEAD').trim()).toBe(otherHead);
    const cli = await keel(['runs', 'apply', elsewhere.run_id, '--yes'], { cwd: other, home });
    expect(cli.code).toBe(0);
    expect(readFileSync(join(other, 'src/stats.js'), 'utf8')).toContain(FIXED);
    const db = openDb(join(home, 'keel.db'));
    const applied = [verified.run_id, elsewhere.run_id].map(
      (id) => new EventLog(db).events(id).find((e) => e.type === 'fix_applied')?.data,
    );
    db.close();
    expect(applied).toEqual([
      expect.objectContaining({ into: 'main', from: head, commit: tip }),
      expect.objectContaining({ into: 'main', from: otherHead }),
    ]);
    const audit = await keel(['audit', 'verify'], { cwd: project, home });
    expect(audit.code).toBe(0);
  }, 240_000);
});
