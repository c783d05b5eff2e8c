/**
 * A build's tests wait for the person who runs keel serve: another project's server cannot see or answer
 * them, another server's token is refused, a question that is not waiting cannot be answered (a late yes
 * does not revive a no), and no answer in time is a no that builds nothing.
 */
import { describe, expect, it } from 'vitest';
import { TESTS_TURNS, tinyProject } from '../e2e/build-harness.js';
import { leftovers, modelPosts } from '../e2e/fix-harness.js';
import { keelHome, model, modelFlags } from '../e2e/harness.js';
import { runUntil } from '../e2e/serve-build-harness.js';
import { startServe } from '../e2e/serve-harness.js';

describe('keel serve: who may approve a build', () => {
  it("another project's build is not found, a question that does not wait is refused, and no answer builds nothing", async () => {
    const home = keelHome();
    const repoA = tinyProject();
    const repoB = tinyProject();
    const serverA = await model([...TESTS_TURNS, { text: 'this turn must never be asked for' }]);
    const serverB = await model([...TESTS_TURNS, { text: 'this turn must never be asked for' }]);
    const a = await startServe({ cwd: repoA, home, args: modelFlags(serverA) });
    const b = await startServe({
      cwd: repoB,
      home,
      args: [...modelFlags(serverB), '--approval-timeout', '1'],
    });
    const id = (await a.api('POST', '/v1/build', { feature: 'add a median function' })).body.run_id as string;
    const waiting = await runUntil(a, id, (r) => r.status === 'waiting');
    const question = waiting.pending_approvals[0].id as string;
    const yes = { decision: 'allow' };

    // the other project's server (same KEEL_HOME, same log) neither shows nor answers it, by any route
    expect((await b.api('GET', `/v1/runs/${id}`)).status).toBe(404);
    expect((await b.api('POST', `/v1/runs/${id}/approvals/${question}`, yes)).status).toBe(404);
    expect((await b.api('POST', `/v1/sessions/${id}/approvals/${question}`, yes)).status).toBe(404);
    // the other server's token is not this one's
    expect(
      (await a.api('POST', `/v1/runs/${id}/approvals/${question}`, yes, { token: b.token })).status,
    ).toBe(401);
    // a question the build does not ask, and the session route for a run's question
    const other = await a.api('POST', `/v1/runs/${id}/approvals/not-${question}`, yes);
    expect(other.status).toBe(409);
    expect(other.body.error).toContain('pending_approvals');
    expect((await a.api('POST', `/v1/sessions/${id}/approvals/${question}`, yes)).status).toBe(404);
    expect((await a.api('GET', `/v1/runs/${id}`)).body.status).toBe('waiting');

    // answered no, a late yes is refused: the no stands, nothing is built
    expect((await a.api('POST', `/v1/runs/${id}/approvals/${question}`, { decision: 'deny' })).status).toBe(
      200,
    );
    const late = await a.api('POST', `/v1/runs/${id}/approvals/${question}`, yes);
    expect(late.status).toBe(409);
    const rejected = await runUntil(a, id, (r) => r.status !== 'waiting' && r.status !== 'running');
    expect(rejected).toMatchObject({
      status: 'failed',
      code: 'CANCELLED',
      branch: null,
      pending_approvals: [],
    });
    expect(leftovers(repoA)).toEqual({ branches: [], worktrees: 0 });
    expect(modelPosts(serverA)).toBe(2);

    // --approval-timeout: no one answers, so it is a no
    const timed = (await b.api('POST', '/v1/build', { feature: 'add a median function' })).body
      .run_id as string;
    const ended = await runUntil(b, timed, (r) => r.status !== 'waiting' && r.status !== 'running');
    expect(ended).toMatchObject({ status: 'failed', code: 'CANCELLED', branch: null });
    expect(ended.reason).toContain('no one answered within 1 s; nothing built');
    expect(leftovers(repoB)).toEqual({ branches: [], worktrees: 0 });
    expect(modelPosts(serverB)).toBe(2);
  }, 90_000);
});
