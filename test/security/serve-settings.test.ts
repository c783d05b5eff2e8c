/**
 * Switching a session's mode and model (`POST /v1/sessions/:id/settings`) is never a way around what
 * `keel serve` allows: it needs the token, takes only the modes and the model check a new session has
 * (no `fix` session, no extra fields such as a scope), is refused while a turn runs (the turn keeps what
 * it started with), and another project's session is as unknown as no session. A model chosen
 * for the next turn is still the one it runs with after the server restarts.
 */
import { describe, expect, it } from 'vitest';
import { keel, keelHome, lastSessionEvents, model, modelFlags } from '../e2e/harness.js';
import { startServe } from '../e2e/serve-harness.js';
import { gitRepo } from '../helpers/tmp.js';

describe('the next-turn settings route', () => {
  it("refuses without the token, outside serve's modes, while a turn runs, and for another project's session; a chosen model outlives a restart", async () => {
    const server = await model([
      { model: 'test-model', text: 'other project' },
      { model: 'test-model', text: 'first turn' },
      { model: 'other', text: 'after the restart' },
      { model: 'other', hang: true },
    ]);
    const home = keelHome();
    const other = gitRepo({ 'b.txt': 'b\n' });
    const run = await keel(['ask', ...modelFlags(server), '--json', 'in B'], { cwd: other, home });
    expect(run.code, run.stderr).toBe(0);
    const foreign = (JSON.parse(run.stdout) as { session_id: string }).session_id;

    const repo = gitRepo({ 'a.txt': 'a\n' });
    let s = await startServe({ cwd: repo, home, args: modelFlags(server) });
    const id = (await s.api('POST', '/v1/sessions', { prompt: 'first' })).body.session_id as string;
    await expect
      .poll(async () => (await s.api('GET', `/v1/sessions/${id}`)).body.state, { timeout: 30_000 })
      .toBe('completed');
    const path = `/v1/sessions/${id}/settings`;

    // no token, a wrong token
    expect((await s.api('POST', path, { mode: 'auto' }, { token: null })).status).toBe(401);
    expect((await s.api('POST', path, { mode: 'auto' }, { token: 'x'.repeat(43) })).status).toBe(401);
    // modes serve does not start sessions in, and fields a new session's body does not take here
    for (const body of [
      { mode: 'fix' },
      { mode: 'yolo' },
      { mode: 'AUTO' },
      { mode: 'auto', scope: '/' },
      { mode: 'auto', sandbox: 'none' },
      { model: '' },
      {},
    ]) {
      const r = await s.api('POST', path, body);
      expect(r.status, JSON.stringify(body)).toBe(400);
    }
    // another project's session (same store): unknown here
    const foreignAnswer = await s.api('POST', `/v1/sessions/${foreign}/settings`, { mode: 'auto' });
    expect(foreignAnswer.status).toBe(404);
    expect(JSON.stringify(foreignAnswer.body)).not.toContain('in B');
    // nothing was recorded by the refusals
    expect(lastSessionEvents(home).some((e) => e.type === 'session_settings')).toBe(false);

    // a model chosen before a restart is the one the next turn runs with after it
    expect((await s.api('POST', path, { model: 'other' })).status).toBe(200);
    await s.stop();
    s = await startServe({ cwd: repo, home, args: modelFlags(server) });
    expect((await s.api('POST', `/v1/sessions/${id}/messages`, { text: 'go on' })).status).toBe(202);
    await expect
      .poll(async () => (await s.api('GET', `/v1/sessions/${id}`)).body.state, { timeout: 30_000 })
      .toBe('completed');
    expect(lastSessionEvents(home).findLast((e) => e.type === 'session_resume')?.data.model).toBe('other');

    // while a turn runs: 409, and the turn's mode is not changed under it
    expect((await s.api('POST', `/v1/sessions/${id}/messages`, { text: 'hang' })).status).toBe(202);
    const busy = await s.api('POST', path, { mode: 'auto' });
    expect(busy.status).toBe(409);
    expect(busy.body.code).toBe('CONFLICT');
    expect((await s.api('GET', `/v1/sessions/${id}`)).body.mode).toBe('ask');
    await s.api('POST', `/v1/sessions/${id}/cancel`);
  }, 90_000);
});
