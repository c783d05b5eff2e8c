/**
 * `keel serve` in a folder is that one project's server (serve-projects.test.ts: several, named at
 * start). Its API answers nothing without the token (a sandboxed command with network, or any local
 * user, reaches loopback too), and with the token it serves its own project only: sessions and runs of another project, or of a repository nested inside this one, are unknown
 * ids (404, so ids do not leak), are not listed, do not stream, and cannot be continued here.
 */
import { mkdirSync, realpathSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openDb } from '../../src/store/db.js';
import { EventLog } from '../../src/store/event-log.js';
import { chatBodies, keel, keelHome, model, modelFlags } from '../e2e/harness.js';
import { type Served, startServe } from '../e2e/serve-harness.js';
import { git, gitRepo } from '../helpers/tmp.js';

/** A request whose answer may be a stream: the status, and the JSON body when there is one. */
async function probe(
  s: Served,
  method: string,
  path: string,
  token: string | null,
  body?: unknown,
  // biome-ignore lint/suspicious/noExplicitAny: a test reads whatever JSON the server answers
): Promise<{ status: number; body: any }> {
  const headers: Record<string, string> = {};
  if (token !== null) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`http://127.0.0.1:${s.port}${path}`, {
    method,
    headers,
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  if (!res.headers.get('content-type')?.includes('application/json')) {
    // a stream that would never end (an SSE stream between turns): its status is the answer
    await res.body?.cancel();
    return { status: res.status, body: null };
  }
  return { status: res.status, body: await res.json() };
}

/** A session recorded by `keel ask` in `cwd`. */
async function askIn(cwd: string, home: string, flags: string[], prompt: string): Promise<string> {
  const run = await keel(['ask', ...flags, '--json', prompt], { cwd, home });
  expect(run.code, run.stderr).toBe(0);
  return (JSON.parse(run.stdout) as { session_id: string }).session_id;
}

describe('keel serve serves its own project, and only with the token', () => {
  it("refuses every tokenless read, and answers with 404 for another project's or a nested repository's sessions and runs", async () => {
    const server = await model([
      { tool_calls: [{ id: 'r1', name: 'read_file', arguments: { path: 'secret.txt' } }] },
      { text: 'B read its secret' },
      { text: 'nested answer' },
      { text: 'A answer' },
      // what a session of another project would be continued with, if the server let it
      { text: 'continued in the wrong workspace' },
      { text: 'continued in the wrong workspace' },
    ]);
    const home = keelHome();
    const outer = gitRepo({ 'README.md': '# A\n' });
    const inner = join(outer, 'vendor', 'inner');
    mkdirSync(inner, { recursive: true });
    writeFileSync(join(inner, 'README.md'), '# nested\n');
    git(inner, 'init', '-q', '-b', 'main');
    git(inner, 'add', '-A');
    git(inner, 'commit', '-q', '-m', 'nested');
    const other = gitRepo({ 'secret.txt': 'B-SECRET-7f3a\n' });
    const flags = modelFlags(server);
    const otherId = await askIn(other, home, flags, 'B-PROMPT read the secret');
    const innerId = await askIn(inner, home, flags, 'INNER-PROMPT');
    // a fix run of the other project, as `keel fix` records its row
    const db = openDb(join(home, 'keel.db'));
    const otherRun = '20260101-000000-f1f1f1';
    new EventLog(db).createSession({
      id: otherRun,
      mode: 'fix',
      cwd: other,
      provider: 'openai',
      model: 'test-model',
      prompt: 'B-FIX-TASK',
    });
    db.close();

    const s = await startServe({ cwd: outer, home, args: flags });
    const own = await s.api('POST', '/v1/sessions', { prompt: 'A-PROMPT' });
    expect(own.status).toBe(201);
    const ownId = own.body.session_id as string;

    // no token, or a wrong one: nothing is read, whatever the route
    const reads = [
      '/v1/projects',
      '/v1/sessions',
      `/v1/sessions?project=${encodeURIComponent(other)}`,
      `/v1/runs?project=${encodeURIComponent(other)}`,
      `/v1/sessions/${ownId}`,
      `/v1/sessions/${ownId}/diff`,
      `/v1/sessions/${ownId}/events`,
      `/v1/sessions/${otherId}/events`,
      '/v1/runs',
      `/v1/runs/${otherRun}`,
      '/v1/memory/search?q=secret',
      '/v1/openapi.json',
      '/metrics',
      '/ready',
      '/anything',
    ];
    for (const path of reads)
      for (const token of [null, 'wrong', s.token.slice(0, -1)]) {
        const res = await probe(s, 'GET', path, token);
        expect(res.status, `GET ${path} with ${token}`).toBe(401);
        expect(res.body?.code, path).toBe('UNAUTHORIZED');
      }
    // open without it: liveness, the agent card and the page itself, none of which names a project
    const health = await probe(s, 'GET', '/health', null);
    expect(health).toEqual({ status: 200, body: { ok: true } });
    const card = await probe(s, 'GET', '/.well-known/agent-card.json', null);
    expect(card.status).toBe(200);
    const page = await fetch(`http://127.0.0.1:${s.port}/`);
    expect(page.status).toBe(200);
    const pageText = await page.text();
    for (const text of [JSON.stringify(card.body), pageText])
      for (const secret of [outer, other, 'A-PROMPT', 'B-PROMPT', 'INNER-PROMPT'])
        expect(text).not.toContain(secret);

    // with the token: this project's own session only, however the list is asked for
    const ids = (res: { body: { sessions: Array<{ session_id: string }> } }) =>
      res.body.sessions.map((x) => x.session_id);
    expect(ids(await s.api('GET', '/v1/sessions'))).toEqual([ownId]);
    // a project is chosen by its listed name only: any folder, this one's own path too, is refused
    for (const project of [other, inner, `${outer}/vendor/../vendor/inner`, outer, '.']) {
      const res = await s.api('GET', `/v1/sessions?project=${encodeURIComponent(project)}`);
      expect(res.status, project).toBe(400);
      expect(JSON.stringify(res.body), project).not.toMatch(new RegExp(`${otherId}|${innerId}`));
    }
    // naming this project by its name is fine: it is the one project served
    const served = (await s.api('GET', '/v1/projects')).body.projects;
    expect(served).toEqual([
      { name: basename(outer), path: realpathSync(outer), default: true, waiting: 0, waiting_builds: 0 },
    ]);
    const name = encodeURIComponent(basename(outer));
    expect(ids(await s.api('GET', `/v1/sessions?project=${name}`))).toEqual([ownId]);
    expect((await probe(s, 'GET', `/v1/sessions/${ownId}`, s.token)).status).toBe(200);
    expect((await s.api('GET', '/v1/runs')).body.runs).toEqual([]);
    // runs are listed as sessions are: naming a folder is refused, naming this project lists it
    for (const project of [other, inner, outer]) {
      const res = await s.api('GET', `/v1/runs?project=${encodeURIComponent(project)}`);
      expect(res.status, project).toBe(400);
      expect(JSON.stringify(res.body), project).not.toMatch(/B-FIX-TASK|20260101-000000-f1f1f1/);
    }
    const ownRuns = await s.api('GET', `/v1/runs?project=${name}`);
    expect(ownRuns.status).toBe(200);
    expect(ownRuns.body.runs).toEqual([]);
    const run = await probe(s, 'GET', `/v1/runs/${otherRun}`, s.token);
    expect(run.status).toBe(404);
    expect(JSON.stringify(run.body)).not.toContain('B-FIX-TASK');

    // another project's session, and the nested repository's, are unknown here: read, streamed or driven
    for (const id of [otherId, innerId]) {
      for (const [method, path, body] of [
        ['GET', `/v1/sessions/${id}`],
        ['GET', `/v1/sessions/${id}/diff`],
        ['GET', `/v1/sessions/${id}/events`],
        ['POST', `/v1/sessions/${id}/messages`, { text: 'go on, here' }],
        ['POST', `/v1/sessions/${id}/cancel`],
        ['POST', `/v1/sessions/${id}/fork`, { prompt: 'go on in a branch' }],
        ['POST', `/v1/sessions/${id}/approvals/r1`, { decision: 'allow' }],
        ['POST', '/v1/sessions', { prompt: 'a child of theirs', parent: id }],
      ] as Array<[string, string, unknown?]>) {
        const res = await probe(s, method, path, s.token, body);
        expect(res.status, `${method} ${path}`).toBe(404);
        expect(res.body.code, `${method} ${path}`).toBe('NOT_FOUND');
        expect(JSON.stringify(res.body)).not.toMatch(/B-SECRET|B-PROMPT|INNER-PROMPT/);
      }
    }
    // nothing ran for them: four model requests in all (B's two, the nested one, A's own)
    expect(chatBodies(server)).toHaveLength(4);
    const after = openDb(join(home, 'keel.db'));
    const log = new EventLog(after);
    expect(
      log
        .listSessions(100)
        .filter((r) => r.cwd !== other && r.cwd !== inner)
        .map((r) => r.id),
    ).toEqual([ownId]);
    expect(log.events(otherId).filter((e) => e.type === 'session_resume')).toEqual([]);
    after.close();
  });
});
