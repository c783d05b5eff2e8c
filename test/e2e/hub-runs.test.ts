/** `keel hub runs list|show|verify` through the real binary. */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type AgentDirectory, RunsStore } from '../../src/hub/runs-store.js';
import { runSignalSecret } from '../../src/hub/signals.js';
import { parseWorkflow } from '../../src/hub/workflow-file.js';
import { ensureAuditKey } from '../../src/store/audit-key.js';
import { openStore } from '../../src/store/engine.js';
import { keel, keelHome } from './harness.js';

const FLOW = `version: 1
trigger: {source: github, event: pull_request, secret_env: KEEL_WH_GITHUB, signal_secret_env: KEEL_WH_SIGNALS}
stages:
  - {id: review, kind: quorum, eligible: [rev-a, rev-b], min_producers: 2, prompt: "Review PR {{pull_request.number}}"}
  - {id: ci, kind: await_signal, signal: ci-result, timeout: 2h}
`;

const agents: AgentDirectory = {
  resolve: async (_tx, names) => new Map(names.map((n) => [n, `id-${n}`] as [string, string])),
};

describe('keel hub runs', () => {
  it('lists and shows a run with its stages and signal secret; verify passes, then finds an edited event', async () => {
    const home = keelHome();
    const { key } = ensureAuditKey(join(home, 'audit.key'));
    const store = await openStore({ engine: 'sqlite', path: join(home, 'keel.db') });
    const runs = new RunsStore(store, { key, agents });
    const { run_id } = await runs.startRun({
      workflow: {
        name: 'pr',
        file: 'pr.yaml',
        sha256: 'a'.repeat(64),
        workflow: parseWorkflow(FLOW, 'pr.yaml'),
      },
      deliveryId: 'delivery-1',
      bodySha256: 'b'.repeat(64),
      event: 'pull_request.opened',
      payload: { pull_request: { number: 5 } },
    });
    const env = { KEEL_WH_SIGNALS: 'whsec_c2lnbmFscy1zZWNyZXQtZm9yLXRlc3Rz' };

    const list = await keel(['hub', 'runs', 'list', '--json'], { cwd: home, home });
    expect(list.code).toBe(0);
    expect(JSON.parse(list.stdout).runs).toEqual([
      expect.objectContaining({ run_id, workflow: 'pr', status: 'running', delivery_id: 'delivery-1' }),
    ]);
    const show = await keel(['hub', 'runs', 'show', run_id, '--json'], { cwd: home, home, env });
    expect(show.code).toBe(0);
    const doc = JSON.parse(show.stdout);
    expect(doc.signal_secret).toBe(runSignalSecret(env.KEEL_WH_SIGNALS, run_id));
    expect(doc.stages.map((s: { id: string; state: string }) => [s.id, s.state])).toEqual([
      ['review', 'active'],
      ['ci', 'pending'],
    ]);
    expect(doc.stages[0]).toMatchObject({ prompt: 'Review PR 5', producers: 0, min_producers: 2 });
    expect(doc.events.map((e: { type: string }) => e.type)).toEqual(['run_started', 'stage_started']);

    const intact = await keel(['hub', 'runs', 'verify', run_id], { cwd: home, home });
    expect(intact.code).toBe(0);
    expect(intact.stdout).toContain('2 events, chain and seals intact');

    // someone with the database rewrites which agents the run froze: the hash and seal give it away
    await store.run(
      `UPDATE hub_run_events SET data = replace(data, 'id-rev-b', 'id-mallory') WHERE run_id = $1`,
      [run_id],
    );
    await store.close();
    const tampered = await keel(['hub', 'runs', 'verify', run_id, '--json'], { cwd: home, home });
    expect(tampered.code).toBe(1);
    expect(JSON.parse(tampered.stdout)).toMatchObject({
      ok: false,
      problems: expect.arrayContaining([{ seq: 1, problem: 'its hash does not match its contents' }]),
    });
    const missing = await keel(['hub', 'runs', 'verify', 'no-such-run', '--json'], { cwd: home, home });
    expect(missing.code).toBe(2);
  });
});
