/**
 * `keel serve` shows the hub project the user's own config names (`hub_project`) from a team store other
 * projects share: another project's agents, messages and workflow runs are not listed, and its runs are
 * 404 by id, even a run whose frozen agent has the same name as one of ours, and a run mixing both.
 * A repository's config may not point the page at another hub project. Message bodies are data: they go
 * out as JSON strings, cut to a bound, never as markup.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openStore } from '../../src/store/engine.js';
import { keel, keelHome } from '../e2e/harness.js';
import { startServe } from '../e2e/serve-harness.js';
import { seedHub, seedWorkflowRun, sendMessage } from '../helpers/hub-seed.js';
import { gitRepo } from '../helpers/tmp.js';

describe('keel serve: the hub project the user names, only', () => {
  it("lists and reads its own agents, messages and runs; another project's are unlisted and 404; a repository cannot choose", async () => {
    const home = keelHome('hub_project = "team"\n');
    const project = gitRepo({ 'README.md': '# p\n' });
    const store = await openStore({ engine: 'sqlite', path: join(home, 'keel.db') });
    const team = await seedHub(store, 'team', { alice: 'reviewer', bob: 'builder' });
    // the rival project has an agent named alice too
    const rival = await seedHub(store, 'rival', { alice: 'spy', eve: 'spy' });
    const markup = '<img src=x onerror="alert(1)"><script>alert(2)</script>';
    await sendMessage(team, 'alice', 'bob', markup);
    await sendMessage(team, 'bob', 'alice', 'x'.repeat(5000));
    await sendMessage(rival, 'eve', 'alice', 'rival-secret');
    const id = (s: typeof team, n: string) => ({ id: s.agents.get(n)?.agentId as string, name: n });
    const at = Date.parse('2026-12-05T04:00:00Z');
    await seedWorkflowRun(store, 'run-mine', [id(team, 'alice'), id(team, 'bob')], at);
    await seedWorkflowRun(store, 'run-theirs', [id(rival, 'alice'), id(rival, 'eve')], at);
    await seedWorkflowRun(store, 'run-mixed', [id(team, 'alice'), id(rival, 'eve')], at);
    await store.close();

    const s = await startServe({ cwd: project, home });
    const hub = await s.api('GET', '/v1/hub');
    expect(hub.status).toBe(200);
    expect(hub.body.project).toBe('team');
    expect(hub.body.agents.map((a: { name: string; role: string }) => `${a.name}:${a.role}`)).toEqual([
      'alice:reviewer',
      'bob:builder',
    ]);
    const text = JSON.stringify(hub.body);
    expect(text).not.toContain('rival-secret');
    expect(text).not.toContain('spy');
    expect(hub.body.runs.map((r: { id: string }) => r.id)).toEqual(['run-mine']);
    const bodies = hub.body.messages.map((m: { body: string }) => m.body);
    expect(bodies).toContain(markup);
    const long = hub.body.messages.find((m: { from: string }) => m.from === 'bob');
    expect([long.body.length, long.body_truncated]).toEqual([2000, true]);

    const mine = await s.api('GET', '/v1/hub/runs/run-mine');
    expect(mine.status).toBe(200);
    expect(mine.body.stages.map((st: { id: string }) => st.id)).toEqual(['review', 'deploy']);
    expect(mine.body.stages[0].evidence.map((e: { agent: string }) => e.agent)).toEqual(['alice', 'bob']);
    for (const run of ['run-theirs', 'run-mixed', 'nothing', '..%2Frun-mine']) {
      const res = await s.api('GET', `/v1/hub/runs/${run}`);
      expect(res.status, run).toBe(404);
      expect(JSON.stringify(res.body)).not.toContain('eve');
    }
    expect((await s.api('GET', '/v1/hub', undefined, { token: null })).status).toBe(401);
    await s.stop();

    // a repository's config may not point the page at the rival project
    const repo = gitRepo({ 'keel.toml': 'hub_project = "rival"\n' });
    const refused = await keel(['serve', '--listen', '127.0.0.1:0'], { cwd: repo, home });
    expect(refused.code).toBe(2);
    expect(refused.stdout + refused.stderr).toContain('sets "hub_project": a project config may not choose');
  }, 90_000);
});
