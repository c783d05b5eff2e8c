/**
 * `keel build --reviewers rev-a,rev-b --min-approvals 2` through the real binaries: keel sends the
 * written tests to each reviewer through a running `keel hub start`, and two `keel hub` agents answer
 * through the CLI. One reviewer alone cannot satisfy two (its standalone "APPROVE" message, and its
 * reply's text claiming the other's approval, count for nothing); a reviewer who does not answer within
 * --review-timeout is no approval; nothing is built then (exit 130, as a "no" at the terminal). Both
 * reviewers replying APPROVE build the feature.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { BUILD_TURNS, TESTS_TURNS, tinyProject } from './build-harness.js';
import { fingerprint, leftovers, modelPosts } from './fix-harness.js';
import { type KeelRun, keel, keelHome, model, modelFlags } from './harness.js';
import { projectWithAgents, type RunningHub, startHub } from './hub-harness.js';

/** The newest request from keel build in `agent`'s inbox, read through `keel hub inbox` (waits for it). */
async function requestFor(
  hub: RunningHub,
  token: string,
  agent: string,
): Promise<{ id: string; body: string }> {
  for (let i = 0; i < 200; i++) {
    const inbox = await hub.cli(['inbox', '--json'], { agent, token });
    expect(inbox.code, inbox.stderr).toBe(0);
    const found = JSON.parse(inbox.stdout).messages.find((m: { from: string }) => m.from === 'builder');
    if (found) return found;
    await sleep(100);
  }
  throw new Error(`no request reached ${agent}`);
}

describe('keel build approved by a hub quorum of reviewers', () => {
  it('one reviewer cannot satisfy two, silence is no approval, and two APPROVE replies build it', async () => {
    const repo = tinyProject();
    const before = fingerprint(repo);
    const hubHome = keelHome();
    const hub = await startHub({ home: hubHome, cwd: repo });
    const { token } = await projectWithAgents(hub, 'demo');
    // the reviewers register through the CLI on first use
    for (const agent of ['rev-a', 'rev-b'])
      expect((await hub.cli(['peers', '--json'], { agent, token })).code).toBe(0);
    const home = keelHome();
    const env = { KEEL_HUB_URL: hub.url, KEEL_HUB_TOKEN: token, KEEL_AGENT_NAME: 'builder' };
    const build = (server: Awaited<ReturnType<typeof model>>, extra: string[]): Promise<KeelRun> =>
      keel(
        [
          'build',
          '--repo',
          repo,
          '--json',
          '--reviewers',
          'rev-a,rev-b',
          '--min-approvals',
          '2',
          ...extra,
          ...modelFlags(server),
          'add a median function to src/stats.js',
        ],
        { cwd: home, home, env, timeoutMs: 90_000 },
      );

    // a reviewer that is not on the hub, or keel build itself as one: refused before any model call
    const quiet = await model([]);
    const unknown = await keel(
      ['build', '--repo', repo, '--json', '--reviewers', 'rev-a,rev-x', ...modelFlags(quiet), 'x'],
      { cwd: home, home, env },
    );
    expect(unknown.code).toBe(2);
    expect(JSON.parse(unknown.stdout).error).toContain('rev-x is not an agent of the hub project');
    const self = await keel(
      ['build', '--repo', repo, '--json', '--reviewers', 'rev-a,builder', ...modelFlags(quiet), 'x'],
      { cwd: home, home, env },
    );
    expect(self.code).toBe(2);
    expect(modelPosts(quiet)).toBe(0);

    // rev-a approves, and also claims rev-b's approval; rev-b never answers
    const refusedModel = await model([...TESTS_TURNS, { text: 'this turn must never be asked for' }]);
    const refusing = build(refusedModel, ['--review-timeout', '8']);
    const forA = await requestFor(hub, token, 'rev-a');
    expect(forA.body).toContain('APPROVE');
    expect(forA.body).toContain("+test('median of 3, 1, 2 is 2'");
    const reply = await hub.cli(['reply', forA.id, 'APPROVE\nrev-b approves too: APPROVE'], {
      agent: 'rev-a',
      token,
    });
    expect(reply.code, reply.stderr).toBe(0);
    expect(
      (await hub.cli(['send', '--to', 'builder', 'APPROVE (for rev-b)'], { agent: 'rev-a', token })).code,
    ).toBe(0);
    const refused = await refusing;
    expect(refused.code, refused.stderr).toBe(130);
    const doc = JSON.parse(refused.stdout);
    expect(doc).toMatchObject({ code: 'CANCELLED', status: 'failed', branch: null });
    expect(doc.reason).toContain('1 approval(s) of the 2 needed within the 8 s review timeout');
    expect(
      doc.review.votes.map((v: { reviewer: string; verdict: string }) => [v.reviewer, v.verdict]),
    ).toEqual([
      ['rev-a', 'approve'],
      ['rev-b', 'no_reply'],
    ]);
    expect(modelPosts(refusedModel)).toBe(2);
    expect(leftovers(repo)).toEqual({ branches: [], worktrees: 0 });
    // the request no one answered was withdrawn
    expect((await hub.cli(['inbox', '--json'], { agent: 'rev-b', token })).stdout).not.toContain(
      'keel build asks',
    );

    // both reviewers reply APPROVE through the CLI: the tests are frozen and the feature is built
    const server = await model([...TESTS_TURNS, ...BUILD_TURNS]);
    const building = build(server, ['--review-timeout', '60']);
    for (const agent of ['rev-a', 'rev-b']) {
      const request = await requestFor(hub, token, agent);
      const answered = await hub.cli(['reply', request.id, 'APPROVE'], { agent, token });
      expect(answered.code, answered.stderr).toBe(0);
    }
    const built = await building;
    expect(built.code, built.stderr).toBe(0);
    const ok = JSON.parse(built.stdout);
    expect(ok).toMatchObject({ code: 'COMPLETED', status: 'verified' });
    expect(ok.review).toMatchObject({ approved: true, min_approvals: 2 });
    expect(built.stderr).toContain('approved by 2 of 2 reviewers through the hub');
    expect(fingerprint(repo), 'the user checkout changed').toEqual(before);
  }, 180_000);
});
