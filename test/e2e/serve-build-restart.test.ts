/**
 * A build waiting for its tests' approval is on disk, not only in keel serve's memory: after the server is
 * killed (-9, no chance to clean up) and started again, GET /v1/runs still lists it, as `interrupted`, with
 * no question waiting and a reason that says what happened and how to go on; nothing was built. The
 * worktree and branch its tests were written in are removed by the restart: they do not pile up.
 */
import { describe, expect, it } from 'vitest';
import { git } from '../helpers/tmp.js';
import { TESTS_TURNS, tinyProject } from './build-harness.js';
import { modelPosts } from './fix-harness.js';
import { keelHome, model, modelFlags } from './harness.js';
import { runUntil } from './serve-build-harness.js';
import { startServe } from './serve-harness.js';

describe('keel serve: a build across a crash', () => {
  it('a build waiting for approval is listed as interrupted after kill -9 and a restart', async () => {
    const home = keelHome();
    const repo = tinyProject();
    const server = await model([...TESTS_TURNS, { text: 'this turn must never be asked for' }]);
    const first = await startServe({ cwd: repo, home, args: modelFlags(server) });
    const id = (await first.api('POST', '/v1/build', { feature: 'add a median function' })).body
      .run_id as string;
    const waiting = await runUntil(first, id, (r) => r.status === 'waiting');
    const question = waiting.pending_approvals[0].id as string;
    // the tests' worktree (under KEEL_HOME) and its branch, as the killed server leaves them
    const keelTrees = () =>
      git(repo, 'worktree', 'list', '--porcelain')
        .split('\n')
        .filter((l) => l.startsWith('worktree ') && l.includes(home));
    const keelBranches = () => git(repo, 'branch', '--list', 'keel/*').trim();
    expect(keelTrees()).toHaveLength(1);
    expect(keelBranches()).toContain('keel/fix-tests-add-a-median-function-');
    const exited = new Promise((resolve) => first.child.once('exit', resolve));
    first.child.kill('SIGKILL');
    await exited;

    expect(keelTrees()).toHaveLength(1);

    const second = await startServe({ cwd: repo, home, args: modelFlags(server) });
    // the restart removed what the killed build was writing its tests in
    expect(keelTrees()).toEqual([]);
    expect(keelBranches()).toBe('');
    expect(git(repo, 'status', '--porcelain')).toBe('');
    const listed = (await second.api('GET', '/v1/runs')).body.runs as Array<Record<string, unknown>>;
    const build = listed.find((r) => r.run_id === id);
    expect(build).toMatchObject({
      kind: 'build',
      title: 'add a median function',
      status: 'interrupted',
      code: 'CANCELLED',
      branch: null,
      tests: ['test/median.test.js'],
      pending_approvals: [],
    });
    expect(build?.reason).toContain(
      'keel serve stopped while the tests waited for approval; nothing was built: the server was killed or crashed; start the build again',
    );
    expect(build?.ended_at).not.toBeNull();
    expect((await second.api('GET', `/v1/runs/${id}`)).body).toMatchObject({ status: 'interrupted' });
    // the question it waited on is gone with the process: a yes now is refused
    const late = await second.api('POST', `/v1/runs/${id}/approvals/${question}`, { decision: 'allow' });
    expect(late.status).toBe(409);
    await second.stop();

    // and it stays listed, the same, after another restart
    const third = await startServe({ cwd: repo, home, args: modelFlags(server) });
    expect((await third.api('GET', `/v1/runs/${id}`)).body).toMatchObject({
      status: 'interrupted',
      ended_at: build?.ended_at,
    });
    expect(modelPosts(server)).toBe(2);
  }, 90_000);
});
