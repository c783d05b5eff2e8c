/** `keel serve` lists sessions another keel process runs: running while that process lives, failed once it died. */
import type { ChildProcess } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { gitRepo } from '../helpers/tmp.js';
import { keel, keelHome, model, modelFlags } from './harness.js';
import { startServe } from './serve-harness.js';

describe('keel serve: a session of another process', () => {
  it('shows running while its process lives (not failed), and failed once that process is gone', async () => {
    // the model holds its answer: the ask process stays in its first request
    const server = await model([{ hang: true }]);
    const repo = gitRepo();
    const home = keelHome();
    let child: ChildProcess | undefined;
    const asked = keel(['ask', 'hold on', ...modelFlags(server)], {
      cwd: repo,
      home,
      timeoutMs: 60_000,
      onSpawn: (c) => {
        child = c;
      },
    });
    const s = await startServe({ cwd: repo, home, args: modelFlags(server) });
    // the ask's session is listed once its request is at the model
    let listed: { session_id: string; state: string; code: string | null } | undefined;
    for (let i = 0; i < 200 && !listed; i++) {
      if (server.requests.some((r) => r.path.endsWith('/chat/completions'))) {
        const { body } = await s.api('GET', '/v1/sessions');
        listed = body.sessions[0];
      }
      if (!listed) await new Promise((r) => setTimeout(r, 100));
    }
    expect(listed, 'the ask session is listed').toBeDefined();
    const id = listed?.session_id as string;
    expect(listed).toMatchObject({ state: 'running', code: null });
    expect((await s.api('GET', `/v1/sessions/${id}`)).body).toMatchObject({ state: 'running' });
    const running = (await s.api('GET', '/v1/sessions?state=running')).body.sessions;
    expect(running.map((x: { session_id: string }) => x.session_id)).toEqual([id]);

    // the process dies without writing its end: the session is failed now, not running forever
    child?.kill('SIGKILL');
    const run = await asked;
    expect(run.signal).toBe('SIGKILL');
    expect((await s.api('GET', `/v1/sessions/${id}`)).body).toMatchObject({ state: 'failed', code: null });
  });
});
