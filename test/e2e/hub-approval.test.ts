/**
 * A workflow's approval stage through the real binaries: a GitHub-signed webhook starts a run on
 * `keel hub start --workflow-project demo`, the run parks at its approval stage, a person approves it
 * with `keel hub runs approve` (the project token in KEEL_HUB_TOKEN), and the next stage's request
 * reaches its agent's `keel hub inbox`. Another run is rejected with a reason and ends `rejected`.
 */
import { describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/tmp.js';
import { githubWebhook, HUB_ENV, projectWithAgents, startHub, workflowProject } from './hub-harness.js';

const GATED = `version: 1
trigger: {source: github, event: pull_request, secret_env: KEEL_WH_GITHUB}
stages:
  - {id: sign-off, kind: approval, prompt: "Ship PR {{pull_request.number}}?"}
  - {id: ship, kind: agent, agent: shipper, mode: ask, prompt: "Ship PR {{pull_request.number}}"}
`;

describe('keel hub runs approve', () => {
  it('a parked approval stage approved through the CLI runs the next stage; a rejected one ends the run', async () => {
    const home = tempDir('keel-hub-home-');
    const cwd = workflowProject(home, { gate: GATED });
    const hub = await startHub({ home, cwd, env: HUB_ENV, args: ['--workflow-project', 'demo'] });
    const { token, tokenId } = await projectWithAgents(hub, 'demo', 'shipper');
    const start = async (n: number) => {
      const res = await githubWebhook(hub, 'gate', { action: 'opened', pull_request: { number: n } });
      expect(res.status).toBe(202);
      return ((await res.json()) as { run_id: string; stage: string }).run_id;
    };
    const show = async (run: string) => {
      const shown = await hub.cli(['runs', 'show', run, '--json']);
      expect(shown.code, shown.stderr).toBe(0);
      return JSON.parse(shown.stdout);
    };
    const runId = await start(7);
    let run = await show(runId);
    expect(run.stages.map((s: { state: string }) => s.state)).toEqual(['parked', 'pending']);
    // the person's view says what waits and how to decide it
    const text = await hub.cli(['runs', 'show', runId]);
    expect(text.stdout).toContain(`waits for approval: keel hub runs approve ${runId} sign-off`);

    // approved through the CLI with the project token
    const approved = await hub.cli(['runs', 'approve', runId, 'sign-off', '--reason', 'LGTM', '--json'], {
      token,
    });
    expect(approved.code, approved.stderr).toBe(0);
    expect(JSON.parse(approved.stdout)).toMatchObject({
      run_id: runId,
      stage: 'sign-off',
      decision: 'approve',
      by: `project token ${tokenId}`,
      status: 'running',
    });
    run = await show(runId);
    expect(run.stages.map((s: { state: string }) => s.state)).toEqual(['done', 'active']);
    const inbox = await hub.cli(['inbox', '--json'], { agent: 'shipper', token });
    expect(inbox.code, inbox.stderr).toBe(0);
    const [request] = JSON.parse(inbox.stdout).messages;
    expect(JSON.parse(request.body)).toMatchObject({
      workflow_run: runId,
      stage: 'ship',
      prompt: 'Ship PR 7',
    });
    // deciding again is refused with the hub's reason
    const again = await hub.cli(['runs', 'approve', runId, 'sign-off'], { token });
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('stage_not_waiting');

    // rejected with a reason (the admin token the hub wrote in KEEL_HOME): the run ends rejected
    const second = await start(8);
    const rejected = await hub.cli([
      'runs',
      'approve',
      second,
      'sign-off',
      '--reject',
      '--reason',
      'not now',
    ]);
    expect(rejected.code, rejected.stderr).toBe(0);
    expect(rejected.stdout).toContain(`run ${second}: sign-off rejected by admin token`);
    run = await show(second);
    expect(run.status).toBe('rejected');
    expect(run.stages.map((s: { state: string }) => s.state)).toEqual(['rejected', 'pending']);
    const listed = JSON.parse((await hub.cli(['runs', 'list', '--json'])).stdout).runs;
    expect(
      Object.fromEntries(listed.map((r: { run_id: string; status: string }) => [r.run_id, r.status])),
    ).toEqual({ [runId]: 'running', [second]: 'rejected' });
    for (const id of [runId, second]) {
      const verified = await hub.cli(['runs', 'verify', id]);
      expect(verified.code, verified.stdout + verified.stderr).toBe(0);
    }
  });
});
