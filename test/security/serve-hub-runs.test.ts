/**
 * The hub page's workflow runs are the ones the hub recorded as the named project's (`hub_runs.project_id`):
 * another project's runs, however many and however new, neither show on it nor push the project's own
 * off its list, and a run another project recorded is not ours even when its frozen agents are.
 * A run of the project with no agent stage (an approval, a signal) is listed and read.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openStore, type Store } from '../../src/store/engine.js';
import { keelHome } from '../e2e/harness.js';
import { startServe } from '../e2e/serve-harness.js';
import { seedHub, seedWorkflowRun } from '../helpers/hub-seed.js';
import { freshPgDatabase, skipReason } from '../helpers/pg.js';
import { gitRepo } from '../helpers/tmp.js';

// the page's queries on both engines: the SQLite keel.db, and a PostgreSQL store the user's config names
const pgUrl = await freshPgDatabase();
const engines = [
  { name: 'sqlite', url: undefined, skip: '' },
  { name: 'postgres', url: pgUrl, skip: pgUrl ? '' : skipReason },
];

async function bareRun(store: Store, id: string, projectId: string, at: number): Promise<void> {
  await store.run(
    `INSERT INTO hub_runs (id, workflow, workflow_sha256, source, event, delivery_id, body_sha256,
       signal_secret_env, status, stage_index, created_at, updated_at, event_count, head_hash, head_mac, project_id)
     VALUES ($1, 'gate', $2, 'github', 'push', $3, $4, NULL, 'running', 0, $5, $5, 0, 'h', 'm', $6)`,
    [id, 'a'.repeat(64), `d-${id}`, 'b'.repeat(64), at, projectId],
  );
  await store.run(
    `INSERT INTO hub_run_stages (run_id, position, id, kind, state, attempt, started_at)
     VALUES ($1, 0, 'approve', 'approval', 'active', 1, $2)`,
    [id, at],
  );
}

describe.each(engines)(
  'keel serve: the hub project’s runs are the ones recorded as its own ($name)',
  (engine) => {
    it.skipIf(engine.skip)(
      "lists the project's runs by project_id: another project's flood of newer runs hides none, and its run over our agents is a 404",
      async () => {
        const home = keelHome(`hub_project = "team"\n${engine.url ? `store = "${engine.url}"\n` : ''}`);
        const project = gitRepo({ 'README.md': '# p\n' });
        const store = await openStore(
          engine.url
            ? { engine: 'postgres', url: engine.url }
            : { engine: 'sqlite', path: join(home, 'keel.db') },
        );
        const team = await seedHub(store, 'team', { alice: 'reviewer', bob: 'builder' });
        const rival = await seedHub(store, 'rival', { eve: 'spy' });
        const at = Date.parse('2026-12-05T04:00:00Z');
        // ours: an approval-only run (no agent is frozen into it)
        await bareRun(store, 'run-approval', team.projectId, at);
        // theirs, over our agents: the rival project's hub recorded it
        const alice = { id: team.agents.get('alice')?.agentId as string, name: 'alice' };
        await seedWorkflowRun(store, 'run-forged', [alice], at + 1);
        await store.run('UPDATE hub_runs SET project_id = $1 WHERE id = $2', [rival.projectId, 'run-forged']);
        // theirs: more newer runs than the page lists
        for (let i = 0; i < 210; i++) await bareRun(store, `rival-${i}`, rival.projectId, at + 10 + i);
        await store.close();

        const s = await startServe({ cwd: project, home });
        const hub = await s.api('GET', '/v1/hub');
        expect(hub.status).toBe(200);
        expect(hub.body.runs.map((r: { id: string }) => r.id)).toEqual(['run-approval']);
        const own = await s.api('GET', '/v1/hub/runs/run-approval');
        expect(own.status).toBe(200);
        expect(own.body.stages.map((st: { id: string; kind: string }) => `${st.id}:${st.kind}`)).toEqual([
          'approve:approval',
        ]);
        for (const run of ['run-forged', 'rival-0', 'rival-209']) {
          const res = await s.api('GET', `/v1/hub/runs/${run}`);
          expect(res.status, run).toBe(404);
        }
      },
      90_000,
    );
  },
);
