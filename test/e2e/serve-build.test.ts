/** `POST /v1/build` on keel serve: the written tests wait as a run's pending question a person answers over HTTP. */
import { describe, expect, it } from 'vitest';
import { git } from '../helpers/tmp.js';
import { BUILD_TURNS, MEDIAN, MEDIAN_TEST, SUM, TESTS_TURNS, tinyProject } from './build-harness.js';
import { leftovers, modelPosts } from './fix-harness.js';
import { keelHome, model, modelFlags, withEventLog } from './harness.js';
import { runUntil } from './serve-build-harness.js';
import { startServe } from './serve-harness.js';

describe('keel serve: keel build approved over HTTP', () => {
  it('the tests wait as a pending question with their diff; approved, the feature is built and verified; rejected, nothing is built', async () => {
    const repo = tinyProject();
    const server = await model([
      ...TESTS_TURNS,
      ...BUILD_TURNS,
      ...TESTS_TURNS,
      { text: 'this turn must never be asked for' },
    ]);
    const home = keelHome();
    const s = await startServe({ cwd: repo, home, args: modelFlags(server) });
    const started = await s.api('POST', '/v1/build', { feature: 'add a median function to src/stats.js' });
    expect(started.status, JSON.stringify(started.body)).toBe(202);
    const id = started.body.run_id as string;
    const waiting = await runUntil(s, id, (r) => r.status === 'waiting');
    expect(waiting).toMatchObject({ run_id: id, kind: 'build', code: null, tests: ['test/median.test.js'] });
    expect(waiting.pending_approvals).toHaveLength(1);
    const question = waiting.pending_approvals[0];
    expect(question).toMatchObject({ tool: 'keel build', args: { files: ['test/median.test.js'] } });
    expect(question.diff).toContain("+test('median of 3, 1, 2 is 2'");
    // it waits for a person as a session's question does: the projects' list counts it (the page's alert)
    const counts = async () => (await s.api('GET', '/v1/projects')).body.projects;
    expect(await counts()).toMatchObject([{ waiting: 1, waiting_builds: 1 }]);
    // nothing is built while the question waits: no branch, no implementation asked for
    expect(leftovers(repo).branches.filter((b) => !b.includes('tests-'))).toEqual([]);
    expect(modelPosts(server)).toBe(2);
    // the answer needs the person's token
    const anonymous = await s.api(
      'POST',
      `/v1/runs/${id}/approvals/${question.id}`,
      { decision: 'allow' },
      { token: null },
    );
    expect(anonymous.status).toBe(401);
    const approved = await s.api('POST', `/v1/runs/${id}/approvals/${question.id}`, { decision: 'allow' });
    expect(approved.status, JSON.stringify(approved.body)).toBe(200);
    const built = await runUntil(s, id, (r) => !['waiting', 'running'].includes(r.status));
    expect(built).toMatchObject({
      run_id: id,
      kind: 'build',
      status: 'verified',
      code: 'COMPLETED',
      attempts: 1,
    });
    expect(built.pending_approvals).toEqual([]);
    expect(await counts()).toMatchObject([{ waiting: 0, waiting_builds: 0 }]);
    expect(git(repo, 'show', `${built.branch}:test/median.test.js`)).toBe(MEDIAN_TEST);
    expect(git(repo, 'show', `${built.branch}:src/stats.js`)).toBe(SUM + MEDIAN);
    // the person's yes is in the log, in the session that wrote the tests
    const decisions = withEventLog(home, (log) =>
      log
        .events(built.tests_session)
        .filter((e) => e.type === 'gate_decision' && e.data.tool === 'keel build'),
    );
    expect(decisions.map((e) => [e.data.decision, e.data.question_id])).toEqual([['allow', question.id]]);

    // a second build, rejected: nothing built, no branch made, the model asked nothing more
    const branches = leftovers(repo).branches;
    const second = (await s.api('POST', '/v1/build', { feature: 'add a median function' })).body
      .run_id as string;
    const asked = await runUntil(s, second, (r) => r.status === 'waiting');
    expect(await counts()).toMatchObject([{ waiting: 1, waiting_builds: 1 }]);
    const no = await s.api('POST', `/v1/runs/${second}/approvals/${asked.pending_approvals[0].id}`, {
      decision: 'deny',
      reason: 'the test should cover an even count',
    });
    expect(no.status).toBe(200);
    const rejected = await runUntil(s, second, (r) => r.status !== 'waiting' && r.status !== 'running');
    expect(rejected).toMatchObject({ kind: 'build', status: 'failed', code: 'CANCELLED', branch: null });
    expect(rejected.reason).toContain('the tests were not approved; nothing built');
    expect(rejected.reason).toContain('the test should cover an even count');
    expect(await counts()).toMatchObject([{ waiting: 0, waiting_builds: 0 }]);
    expect(leftovers(repo)).toEqual({ branches, worktrees: 0 });
    expect(modelPosts(server)).toBe(7);
  }, 90_000);
});
