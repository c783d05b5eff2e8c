/** `keel serve` as an editor, a CI job or a browser uses it: real HTTP on 127.0.0.1, the scripted model. */
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { basename, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { rawRequest } from '../helpers/raw-http.js';
import { gitRepo } from '../helpers/tmp.js';
import { editTurns, fixtureRepo, planTurns } from './fix-harness.js';
import { chatBodies, keel, keelHome, model, modelFlags, requestMessages } from './harness.js';
import { readStream, startServe } from './serve-harness.js';

const ended = (f: { event: string }) => f.event === 'end';

describe('keel serve: sessions over HTTP', () => {
  it('starts a session, streams it from the start, and replays from Last-Event-ID and ?after=', async () => {
    const server = await model([
      { text: 'hello from the model', chunk_size: 3, chunk_delay_ms: 20, delay_ms: 300 },
    ]);
    const repo = gitRepo();
    const home = keelHome();
    const s = await startServe({ cwd: repo, home, args: modelFlags(server) });
    const created = await s.api('POST', '/v1/sessions', { prompt: 'say hello' });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ mode: 'ask', state: 'running' });
    const id = created.body.session_id as string;
    const events = `${s.url}v1/sessions/${id}/events`;
    const all = await readStream(events, ended, { token: s.token });
    const logged = all.filter((f) => f.id !== undefined);
    expect(logged.map((f) => Number(f.id))).toEqual(logged.map((_, i) => i + 1));
    expect(logged[0]?.event).toBe('session_start');
    expect(logged.at(-1)?.data).toMatchObject({ type: 'session_end', data: { code: 'COMPLETED' } });
    // the answer streamed in pieces before it was stored whole
    const deltas = all.filter((f) => f.event === 'delta').map((f) => f.data.text as string);
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.join('').trim()).toBe('hello from the model');
    expect(all.at(-1)?.data).toEqual({ code: 'COMPLETED', state: 'completed' });

    // a client that saw event 3 gets exactly the rest, by header or by query
    const rest = logged.slice(3).map((f) => f.event);
    const byHeader = await readStream(events, (_f, got) => got.length === rest.length, {
      token: s.token,
      headers: { 'Last-Event-ID': '3' },
    });
    expect(byHeader.map((f) => f.event)).toEqual(rest);
    const byQuery = await readStream(`${events}?after=3`, (_f, got) => got.length === rest.length, {
      token: s.token,
    });
    expect(byQuery.map((f) => f.id)).toEqual(logged.slice(3).map((f) => f.id));

    const one = await s.api('GET', `/v1/sessions/${id}`);
    expect(one.body).toMatchObject({ session_id: id, state: 'completed', code: 'COMPLETED', rounds: 1 });
    expect(one.body.tokens).toBeGreaterThan(0);
    const list = await s.api('GET', '/v1/sessions?state=completed');
    expect(list.body.sessions.map((x: { session_id: string }) => x.session_id)).toEqual([id]);
    expect((await s.api('GET', '/v1/sessions?state=running')).body.sessions).toEqual([]);
    // the same session, read by the CLI from the one log
    const shown = await keel(['sessions', 'show', id, '--json'], { cwd: repo, home });
    expect(JSON.parse(shown.stdout).events).toHaveLength(logged.length);
  });

  it('a message during a turn steers it; after the turn it starts the next one in the same session', async () => {
    const server = await model([
      { tool_calls: [{ id: 'c1', name: 'read_file', arguments: { path: 'README.md' } }], delay_ms: 1500 },
      { text: 'steered fine', expect: { last_user_contains: 'also look at the tests' } },
      { text: 'second turn', expect: { last_user_contains: 'and now this' } },
    ]);
    const repo = gitRepo();
    const home = keelHome();
    const s = await startServe({ cwd: repo, home, args: modelFlags(server) });
    const id = (await s.api('POST', '/v1/sessions', { prompt: 'look around' })).body.session_id;
    await readStream(`${s.url}v1/sessions/${id}/events`, (f) => f.event === 'model_request', {
      token: s.token,
    });
    const steer = await s.api('POST', `/v1/sessions/${id}/messages`, { text: 'also look at the tests' });
    expect(steer).toEqual({ status: 202, body: { delivered: 'steer' } });
    const first = await readStream(`${s.url}v1/sessions/${id}/events`, ended, { token: s.token });
    const types = first.map((f) => (f.event === 'user_message' ? `user:${f.data.data.text}` : f.event));
    expect(types.indexOf('user:also look at the tests')).toBeGreaterThan(types.indexOf('tool_result'));
    expect(first.find((f) => f.event === 'session_end')?.data.data.code).toBe('COMPLETED');
    const next = await s.api('POST', `/v1/sessions/${id}/messages`, { text: 'and now this' });
    expect(next).toEqual({ status: 202, body: { delivered: 'turn' } });
    const second = await readStream(
      `${s.url}v1/sessions/${id}/events`,
      (f, all) => f.event === 'end' && all.filter((x) => x.event === 'session_end').length === 2,
      { token: s.token },
    );
    expect(second.filter((f) => f.event === 'session_end').map((f) => f.data.data.code)).toEqual([
      'COMPLETED',
      'COMPLETED',
    ]);
    expect(chatBodies(server)).toHaveLength(3);
  });

  it('a gated write waits for an answer: allowed it is written, denied the reason reaches the model', async () => {
    const server = await model([
      { tool_calls: [{ id: 'w1', name: 'write_file', arguments: { path: 'yes.txt', content: 'ok\n' } }] },
      { tool_calls: [{ id: 'w2', name: 'write_file', arguments: { path: 'no.txt', content: 'x\n' } }] },
      { text: 'done', expect: { last_tool_result_contains: 'not that file' } },
    ]);
    const repo = gitRepo();
    const home = keelHome('approvals = "writes"\n');
    const s = await startServe({ cwd: repo, home, args: modelFlags(server) });
    const id = (await s.api('POST', '/v1/sessions', { prompt: 'write files', mode: 'edit' })).body.session_id;
    const stream = `${s.url}v1/sessions/${id}/events`;
    const asked = await readStream(stream, (f) => f.event === 'approval', { token: s.token });
    const question = asked.at(-1)?.data;
    expect(question).toMatchObject({ call_id: 'c1', tool: 'write_file' });
    expect(question.diff).toContain('+ok');
    const waiting = await s.api('GET', `/v1/sessions/${id}`);
    expect(waiting.body.state).toBe('waiting');
    expect(waiting.body.pending_approvals.map((a: { call_id: string }) => a.call_id)).toEqual(['c1']);
    // an answer names the question by keel's id, not the model's call id
    expect(question.id).toMatch(/^q-[0-9a-f]{12}$/);
    expect(waiting.body.pending_approvals[0].id).toBe(question.id);
    // an answer needs the token like every write
    expect(
      (
        await s.api(
          'POST',
          `/v1/sessions/${id}/approvals/${question.id}`,
          { decision: 'allow' },
          { token: null },
        )
      ).status,
    ).toBe(401);
    expect(existsSync(join(repo, 'yes.txt'))).toBe(false);
    expect(
      (await s.api('POST', `/v1/sessions/${id}/approvals/${question.id}`, { decision: 'allow' })).status,
    ).toBe(200);
    const second = (
      await readStream(stream, (f) => f.event === 'approval' && f.data.call_id === 'c2', { token: s.token })
    ).at(-1)?.data;
    expect(readFileSync(join(repo, 'yes.txt'), 'utf8')).toBe('ok\n');
    const denied = await s.api('POST', `/v1/sessions/${id}/approvals/${second.id}`, {
      decision: 'deny',
      reason: 'not that file',
    });
    expect(denied.status).toBe(200);
    const all = await readStream(stream, ended, { token: s.token });
    expect(all.find((f) => f.event === 'session_end')?.data.data.code).toBe('COMPLETED');
    expect(existsSync(join(repo, 'no.txt'))).toBe(false);
    const view = (await s.api('GET', `/v1/sessions/${id}`)).body;
    expect(view.files_changed).toEqual(['yes.txt']);
    const diff = (await s.api('GET', `/v1/sessions/${id}/diff`)).body;
    expect(diff.files.map((f: { path: string }) => f.path)).toEqual(['yes.txt']);
    expect(diff.files[0].diff).toContain('+ok');
    // answering a question nobody asks is a 404, not a crash
    expect((await s.api('POST', `/v1/sessions/${id}/approvals/w9`, { decision: 'allow' })).status).toBe(404);
  });

  it("a subagent's question names it, and its answer reaches the child", async () => {
    const server = await model([
      {
        task: 'PARENT',
        tool_calls: [{ name: 'spawn_agent', arguments: { task: 'CHILD: write c.txt', name: 'helper' } }],
      },
      {
        task: 'CHILD',
        tool_calls: [{ id: 'c1', name: 'write_file', arguments: { path: 'c.txt', content: 'c\n' } }],
      },
      { task: 'CHILD', text: 'wrote c.txt' },
      { task: 'PARENT', tool_calls: [{ name: 'wait_agent', arguments: { names: ['helper'] } }] },
      { task: 'PARENT', text: 'the helper wrote it', expect: { last_tool_result_contains: 'wrote c.txt' } },
    ]);
    const repo = gitRepo();
    const home = keelHome('approvals = "writes"\n');
    const s = await startServe({ cwd: repo, home, args: modelFlags(server) });
    const id = (await s.api('POST', '/v1/sessions', { prompt: 'PARENT: delegate', mode: 'edit' })).body
      .session_id;
    const stream = `${s.url}v1/sessions/${id}/events`;
    const asked = (await readStream(stream, (f) => f.event === 'approval', { token: s.token })).at(-1)?.data;
    expect(asked).toMatchObject({ call_id: 'c1', tool: 'write_file', agent: 'helper' });
    expect(asked.question).toContain('subagent helper');
    const waiting = (await s.api('GET', `/v1/sessions/${id}`)).body;
    expect(waiting.pending_approvals).toMatchObject([{ call_id: 'c1', agent: 'helper' }]);
    expect(
      (await s.api('POST', `/v1/sessions/${id}/approvals/${asked.id}`, { decision: 'allow' })).status,
    ).toBe(200);
    const all = await readStream(stream, ended, { token: s.token });
    expect(all.find((f) => f.event === 'session_end')?.data.data.code).toBe('COMPLETED');
    expect(readFileSync(join(repo, 'c.txt'), 'utf8')).toBe('c\n');
  });

  it('a question nobody answers is a no after --approval-timeout', async () => {
    const server = await model([
      { tool_calls: [{ id: 'w1', name: 'write_file', arguments: { path: 'late.txt', content: 'x\n' } }] },
      { text: 'gave up', expect: { last_tool_result_contains: 'no one answered' } },
    ]);
    const repo = gitRepo();
    const home = keelHome('approvals = "writes"\n');
    const s = await startServe({ cwd: repo, home, args: [...modelFlags(server), '--approval-timeout', '1'] });
    const id = (await s.api('POST', '/v1/sessions', { prompt: 'write', mode: 'edit' })).body.session_id;
    const all = await readStream(`${s.url}v1/sessions/${id}/events`, ended, { token: s.token });
    expect(all.find((f) => f.event === 'approval_settled')?.data).toEqual({
      id: all.find((f) => f.event === 'approval')?.data.id,
      call_id: 'c1',
      decision: 'deny',
      reason: 'no one answered within 1 s; the call was not made',
    });
    expect(all.find((f) => f.event === 'session_end')?.data.data.code).toBe('COMPLETED');
    expect(existsSync(join(repo, 'late.txt'))).toBe(false);
  });

  it('cancel ends the turn CANCELLED; fork branches the session and goes on in the branch', async () => {
    const server = await model([
      { hang: true },
      { text: 'in the fork', expect: { last_user_contains: 'try another way' } },
    ]);
    const repo = gitRepo();
    const home = keelHome();
    const s = await startServe({ cwd: repo, home, args: modelFlags(server) });
    const id = (await s.api('POST', '/v1/sessions', { prompt: 'take forever' })).body.session_id;
    const stream = `${s.url}v1/sessions/${id}/events`;
    await readStream(stream, (f) => f.event === 'model_request', { token: s.token });
    // cancel once the model holds the request (a cancel before it arrives would leave the hanging turn
    // for the fork's request)
    for (const end = Date.now() + 20_000; chatBodies(server).length === 0 && Date.now() < end; )
      await new Promise((r) => setTimeout(r, 20));
    expect((await s.api('POST', `/v1/sessions/${id}/cancel`)).status).toBe(202);
    const all = await readStream(stream, ended, { token: s.token });
    expect(all.at(-1)?.data).toEqual({ code: 'CANCELLED', state: 'cancelled' });
    const fork = await s.api('POST', `/v1/sessions/${id}/fork`, { prompt: 'try another way' });
    expect(fork.status).toBe(201);
    const forkId = fork.body.session_id as string;
    expect(forkId).not.toBe(id);
    const forked = await readStream(`${s.url}v1/sessions/${forkId}/events`, ended, { token: s.token });
    expect(forked.find((f) => f.event === 'session_fork')?.data.data.from).toBe(id);
    expect(forked.at(-1)?.data).toEqual({ code: 'COMPLETED', state: 'completed' });
    expect((await s.api('GET', `/v1/sessions/${forkId}`)).body.parent_id).toBe(id);
    // the fork's request carries the parent's history
    const sent = requestMessages(chatBodies(server).at(-1)).map((m) => m.content);
    expect(sent).toContain('take forever');
  });
});

describe('keel serve: who may talk to it', () => {
  /** A raw request, so Host can be forged (fetch will not send another Host). */
  const raw = (port: number, headers: Record<string, string>, method = 'GET', body?: string) =>
    rawRequest(port, '/v1/sessions', { method, headers, ...(body !== undefined ? { body } : {}) }).then(
      (r) => r.status,
    );

  it('every request needs the token, a forged Origin or Host is refused, bodies are capped', async () => {
    const server = await model([]);
    const repo = gitRepo();
    const home = keelHome();
    const s = await startServe({ cwd: repo, home, args: modelFlags(server) });
    expect((await s.api('POST', '/v1/sessions', { prompt: 'x' }, { token: null })).status).toBe(401);
    expect((await s.api('POST', '/v1/sessions', { prompt: 'x' }, { token: 'wrong' })).status).toBe(401);
    // reads too, on loopback as anywhere (test/security/serve-project.test.ts tries every route)
    expect((await s.api('GET', '/v1/sessions', undefined, { token: null })).status).toBe(401);
    expect(
      (await s.api('GET', '/v1/sessions', undefined, { headers: { origin: 'http://evil.example' } })).status,
    ).toBe(403);
    expect(
      (await s.api('POST', '/v1/sessions', { prompt: 'x' }, { headers: { origin: 'http://evil.example' } }))
        .status,
    ).toBe(403);
    expect(
      (await s.api('GET', '/v1/sessions', undefined, { headers: { origin: `http://localhost:${s.port}` } }))
        .status,
    ).toBe(200);
    // DNS rebinding: a page on evil.example resolved to 127.0.0.1 still says Host: evil.example
    const auth = { authorization: `Bearer ${s.token}` };
    expect(await raw(s.port, { ...auth, host: `evil.example:${s.port}` })).toBe(421);
    expect(await raw(s.port, { ...auth, host: `127.0.0.1:${s.port}` })).toBe(200);
    const big = JSON.stringify({ prompt: 'x'.repeat(2 * 1024 * 1024) });
    const tooBig = await raw(
      s.port,
      { host: `127.0.0.1:${s.port}`, authorization: `Bearer ${s.token}`, 'content-type': 'application/json' },
      'POST',
      big,
    );
    expect(tooBig).toBe(413);
    const bad = await s.api('POST', '/v1/sessions', { prompt: 'x', mode: 'yolo' });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toContain('mode');
    const outside = await s.api('POST', '/v1/sessions', { prompt: 'x', scope: '../..' });
    expect(outside.status).toBe(400);
    expect(outside.body.code).toBe('SCOPE');
    expect((await s.api('GET', '/v1/sessions/nope')).status).toBe(404);
    expect(chatBodies(server)).toHaveLength(0);
  });

  it('refuses to listen off loopback without KEEL_SERVE_TOKEN, and names what to do', async () => {
    const repo = gitRepo();
    const home = keelHome();
    const run = await keel(['serve', '--listen', '0.0.0.0:0', '--provider', 'scripted'], { cwd: repo, home });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('KEEL_SERVE_TOKEN');
    const bad = await keel(['serve', '--listen', 'nonsense', '--json'], { cwd: repo, home });
    expect(bad.code).toBe(2);
    expect(JSON.parse(bad.stdout)).toMatchObject({ code: 'CONFIG_ERROR', exit_code: 2 });
  });

  it('with KEEL_SERVE_TOKEN set it is the token, and it is not printed as generated; --json names the project served', async () => {
    const server = await model([{ text: 'ok' }]);
    const repo = gitRepo();
    const home = keelHome();
    const token = 'a-token-the-team-chose-1234';
    const s = await startServe({
      cwd: repo,
      home,
      args: modelFlags(server),
      env: { KEEL_SERVE_TOKEN: token },
    });
    expect(s.token).toBe(token);
    // --json names the project it serves too: this folder's, the default
    expect(s.projects).toEqual([
      { name: basename(realpathSync(repo)), path: realpathSync(repo), default: true },
    ]);
    expect((await s.api('POST', '/v1/sessions', { prompt: 'x' })).status).toBe(201);
  });
});

describe('keel serve: the document and the counters', () => {
  it('/v1/openapi.json lists exactly the routes the server answers, with request schemas', async () => {
    const server = await model([]);
    const s = await startServe({ cwd: gitRepo(), home: keelHome(), args: modelFlags(server) });
    const doc = (await s.api('GET', '/v1/openapi.json')).body;
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.info.title).toBe('keel serve');
    const documented = Object.entries(doc.paths as Record<string, Record<string, unknown>>).flatMap(
      ([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`),
    );
    // every documented route answers (not the 404 of an unknown route), and a made-up one does not
    for (const route of documented) {
      const [method, path] = route.split(' ') as [string, string];
      if (path.endsWith('/events')) continue;
      const concrete = path.replace(/\{[a-z]+\}/g, 'x');
      const res = await s.api(method, concrete, method === 'POST' ? {} : undefined);
      expect(res.body?.error ?? '', route).not.toMatch(/^no route/);
    }
    expect((await s.api('GET', '/v1/nothing')).body.error).toMatch(/^no route/);
    for (const op of Object.values(doc.paths as Record<string, Record<string, { responses?: unknown }>>))
      for (const o of Object.values(op)) expect(o.responses).toBeTruthy();
    expect(
      doc.paths['/v1/sessions'].post.requestBody.content['application/json'].schema.properties.mode.enum,
    ).toEqual(['ask', 'plan', 'edit', 'auto']);
    expect(documented).toEqual(
      expect.arrayContaining(['POST /v1/sessions/{id}/approvals/{question}', 'GET /metrics']),
    );
  });

  it('/metrics counts sessions, tokens and tool calls by decision; /health and /ready answer', async () => {
    const server = await model([
      { tool_calls: [{ id: 'c1', name: 'read_file', arguments: { path: 'README.md' } }] },
      { text: 'read it' },
    ]);
    const s = await startServe({ cwd: gitRepo(), home: keelHome(), args: modelFlags(server) });
    expect((await s.api('GET', '/health')).body).toEqual({ ok: true });
    expect((await s.api('GET', '/ready')).body).toEqual({ ready: true });
    const id = (await s.api('POST', '/v1/sessions', { prompt: 'read' })).body.session_id;
    await readStream(`${s.url}v1/sessions/${id}/events`, ended, { token: s.token });
    const text = (await s.api('GET', '/metrics')).body as string;
    expect(text).toContain('keel_tool_calls_total{decision="allow"} 1');
    expect(text).toMatch(/keel_tokens_total [1-9]\d*/);
    expect(text).toContain('keel_sessions{state="running"} 0');
    expect(text).toMatch(/keel_http_request_duration_seconds_count\{route="\/v1\/sessions",code="2xx"\} 1/);
  });
});

describe('keel serve: fix runs and memory', () => {
  it('POST /v1/fix runs a fix to its verdict; /v1/runs shows it with attempts, rationale and diff', async () => {
    const repo = fixtureRepo('stats');
    const server = await model([
      ...planTurns('src/stats.js', '1. mean divides by one too many.'),
      ...editTurns(
        'src/stats.js',
        '  return sum(values) / (values.length + 1);',
        '  return sum(values) / values.length;',
        'mean now divides by the length.',
      ),
    ]);
    const home = keelHome();
    const s = await startServe({ cwd: repo, home, args: modelFlags(server) });
    const started = await s.api('POST', '/v1/fix', { task: 'mean() of [2, 4, 6] returns 3, not 4' });
    expect(started.status).toBe(202);
    const id = started.body.run_id as string;
    let run: { status: string } & Record<string, unknown> = { status: 'running' };
    for (const end = Date.now() + 60_000; run.status === 'running' && Date.now() < end; ) {
      await new Promise((r) => setTimeout(r, 200));
      const got = await s.api('GET', `/v1/runs/${id}`);
      if (got.status === 200) run = got.body;
    }
    expect(run).toMatchObject({ run_id: id, status: 'verified', attempts: 1, code: 'COMPLETED' });
    expect(run.rationale).toContain('VERIFIED');
    expect(run.diff).toContain('+  return sum(values) / values.length;');
    expect(run.pr_description).toBeTruthy();
    const runs = (await s.api('GET', '/v1/runs')).body.runs as Array<{ run_id: string }>;
    expect(runs.map((r) => r.run_id)).toEqual([id]);
    // the same run, as the CLI reads it from the one log
    const cli = JSON.parse((await keel(['runs', 'list', '--json'], { cwd: repo, home })).stdout);
    expect(JSON.stringify(cli)).toContain(id);
    expect((await s.api('GET', '/v1/runs/nope')).status).toBe(404);
  });

  it('memory: a note added over HTTP is found by search, and by keel memory search', async () => {
    const repo = gitRepo();
    const home = keelHome();
    const s = await startServe({ cwd: repo, home, args: ['--provider', 'scripted'] });
    const added = await s.api('POST', '/v1/memory', {
      text: 'lookup_rate retries twice on timeouts',
      tags: ['rates'],
    });
    expect(added.status).toBe(201);
    expect(added.body.item).toMatchObject({ kind: 'note', author: 'user', tags: ['rates'] });
    const hits = (await s.api('GET', '/v1/memory/search?q=retried%20lookup_rate')).body.items;
    expect(hits[0].text).toBe('lookup_rate retries twice on timeouts');
    const cli = await keel(['memory', 'search', 'lookup_rate', '--json'], { cwd: repo, home });
    expect(cli.stdout).toContain('retries twice');
    expect((await s.api('GET', '/v1/memory/search')).status).toBe(400);
  });
});
