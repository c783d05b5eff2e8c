/**
 * The API of `keel serve` meets a hostile client: no token or a wrong one, a body that never says how
 * long it is, JSON built to pollute prototypes, ids that look like paths, a cursor that is not a number,
 * and origins that only look local. Each must be refused with a clear 4xx before anything runs: no
 * model request, no session, never a 500.
 */
import { mkdirSync, symlinkSync } from 'node:fs';
import { Agent } from 'node:http';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { chatBodies, keelHome, model, modelFlags } from '../e2e/harness.js';
import { readStream, startServe } from '../e2e/serve-harness.js';
import { rawRequest } from '../helpers/raw-http.js';
import { gitRepo, tempDir } from '../helpers/tmp.js';

/** A raw request to keel serve with the token and a JSON body type (a large one is a prompt of `a`s). */
function raw(
  port: number,
  method: string,
  path: string,
  opts: { token?: string; body?: string; chunkedBytes?: number; declaredBytes?: number; agent?: Agent } = {},
): Promise<{ status: number; body: string }> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  const bytes = opts.chunkedBytes ?? opts.declaredBytes;
  return rawRequest(port, path, {
    method,
    headers,
    ...(opts.body !== undefined ? { body: opts.body } : {}),
    ...(bytes !== undefined
      ? { stream: { bytes, open: '{"prompt":"', close: '"}', declared: opts.declaredBytes !== undefined } }
      : {}),
    ...(opts.agent ? { agent: opts.agent } : {}),
  }).then((r) => ({ status: r.status, body: r.text }));
}

async function served(files?: Record<string, string>) {
  const server = await model([{ text: 'should never be asked' }]);
  const repo = gitRepo(files);
  const s = await startServe({ cwd: repo, home: keelHome(), args: modelFlags(server) });
  return { server, repo, s };
}

describe('keel serve API under attack', () => {
  it('every state-changing route refuses a request without the token, or with a wrong one', async () => {
    const { server, s } = await served();
    const doc = (await s.api('GET', '/v1/openapi.json')).body as {
      paths: Record<string, Record<string, unknown>>;
    };
    const posts = Object.entries(doc.paths)
      .filter(([, ops]) => 'post' in ops)
      .map(([path]) => path.replace(/\{[^}]+\}/g, 'x'));
    expect(posts.length).toBeGreaterThanOrEqual(7);
    for (const path of [...posts, '/a2a']) {
      for (const token of [null, 'wrong', `${s.token}x`, s.token.slice(0, -1), '']) {
        const res = await s.api('POST', path, { prompt: 'p', text: 't', task: 't' }, { token });
        expect(res.status, `${path} with ${JSON.stringify(token)}`).toBe(401);
        expect(res.body.code).toBe('UNAUTHORIZED');
      }
      // a token in the wrong scheme is not a token
      const basic = await s.api(
        'POST',
        path,
        { prompt: 'p' },
        {
          token: null,
          headers: { authorization: `Basic ${s.token}` },
        },
      );
      expect(basic.status, path).toBe(401);
    }
    expect((await s.api('GET', '/v1/sessions')).body.sessions).toEqual([]);
    expect((await s.api('GET', '/v1/runs')).body.runs).toEqual([]);
    expect(chatBodies(server)).toEqual([]);
  });

  it('a body over the limit is refused even when it is chunked with no length', async () => {
    const { server, s } = await served();
    const big = 2 * 1024 * 1024;
    for (const how of [{ chunkedBytes: big }, { declaredBytes: big }]) {
      const res = await raw(s.port, 'POST', '/v1/sessions', { token: s.token, ...how });
      expect(res.status, JSON.stringify(how)).toBe(413);
      expect(JSON.parse(res.body)).toMatchObject({ code: 'TOO_LARGE' });
    }
    // a keep-alive client's next request does not go down the refused connection to die there
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    for (let i = 0; i < 3; i++) {
      const refused = await raw(s.port, 'POST', '/v1/sessions', { token: s.token, chunkedBytes: big, agent });
      expect(refused.status).toBe(413);
      const next = await raw(s.port, 'POST', '/v1/sessions', {
        token: s.token,
        body: '{"prompt":""}',
        agent,
      });
      expect(next.status).toBe(400);
    }
    agent.destroy();
    // just under the limit is read and judged on its content (a prompt over 200,000 characters)
    const under = await raw(s.port, 'POST', '/v1/sessions', { token: s.token, chunkedBytes: 1000 * 1000 });
    expect(under.status).toBe(400);
    expect(JSON.parse(under.body)).toMatchObject({ code: 'BAD_REQUEST' });
    // the server is still up and ran nothing
    expect((await s.api('GET', '/health')).status).toBe(200);
    expect((await s.api('GET', '/v1/sessions')).body.sessions).toEqual([]);
    expect(chatBodies(server)).toEqual([]);
  });

  it('hostile JSON is a 400 that names the problem, and starts nothing', async () => {
    const { server, s } = await served();
    const bodies: Array<[string, string]> = [
      ['{"prompt":"x","__proto__":{"mode":"auto"}}', '__proto__'],
      ['{"prompt":"x","constructor":{"prototype":{"mode":"auto"}}}', 'constructor'],
      ['{"prompt":"x","mode":"auto","extra":1}', 'extra'],
      ['{"prompt":"x","mode":"root"}', 'mode'],
      ['{"prompt":42}', 'prompt'],
      ['{"prompt":""}', 'prompt'],
      ['["prompt","x"]', 'body'],
      ['null', 'body'],
      ['"x"', 'body'],
      ['{"prompt":"x"', 'not JSON'],
      ['prompt=x', 'not JSON'],
    ];
    for (const [raw, names] of bodies) {
      const res = await s.api('POST', '/v1/sessions', raw);
      expect(res.status, raw).toBe(400);
      expect(res.body.code, raw).toBe('BAD_REQUEST');
      expect(res.body.error, raw).toContain(names);
    }
    // the fix route's schema is as strict
    const fix = await s.api('POST', '/v1/fix', '{"task":"t","__proto__":{"test_command":"rm -rf /"}}');
    expect(fix.status).toBe(400);
    expect((await s.api('GET', '/v1/sessions')).body.sessions).toEqual([]);
    expect((await s.api('GET', '/v1/runs')).body.runs).toEqual([]);
    expect(chatBodies(server)).toEqual([]);
  });

  it('ids that look like paths or SQL are unknown ids, and unknown routes are JSON 404s: never a 500', async () => {
    const { server, s } = await served();
    const ids = [
      '..%2F..%2Fetc%2Fpasswd',
      '%2e%2e',
      '..',
      "x'%20OR%20'1'%3D'1",
      'x%22%3B%20DROP%20TABLE%20sessions%3B--',
      '%00',
      '%E0%A4%A',
      'a'.repeat(4000),
    ];
    const bodyFor = (path: string) =>
      path.endsWith('/messages')
        ? '{"text":"hi"}'
        : path.includes('/approvals/')
          ? '{"decision":"allow"}'
          : '{}';
    for (const id of ids) {
      for (const [method, path] of [
        ['GET', `/v1/sessions/${id}`],
        ['GET', `/v1/sessions/${id}/diff`],
        ['GET', `/v1/sessions/${id}/events`],
        ['GET', `/v1/runs/${id}`],
        ['POST', `/v1/sessions/${id}/messages`],
        ['POST', `/v1/sessions/${id}/cancel`],
        ['POST', `/v1/sessions/${id}/fork`],
        ['POST', `/v1/sessions/${id}/approvals/${id}`],
      ] as const) {
        const what = `${method} ${path.slice(0, 80)}`;
        const res = await raw(s.port, method, path, {
          token: s.token,
          ...(method === 'POST' ? { body: bodyFor(path) } : {}),
        });
        // 404 for an unknown id; 400 for a path the server cannot even decode
        expect([400, 404], `${what}: ${res.status} ${res.body.slice(0, 200)}`).toContain(res.status);
        expect(JSON.parse(res.body).code, what).toMatch(/^(NOT_FOUND|BAD_REQUEST)$/);
      }
    }
    // a route that does not exist, for any method, answers in the API's own shape
    for (const method of ['POST', 'PUT', 'DELETE', 'PATCH']) {
      const res = await s.api(method, '/v1/nothing-here', {});
      expect(res.status, method).toBe(404);
      expect(res.body, method).toMatchObject({ code: 'NOT_FOUND' });
    }
    // the store survived every one of them, and nothing ran
    expect((await s.api('GET', '/v1/sessions')).body.sessions).toEqual([]);
    expect(chatBodies(server)).toEqual([]);
  });

  it('a resume cursor that is not a count is read as the start, never a 500', async () => {
    const server = await model([{ text: 'done' }]);
    const repo = gitRepo();
    const s = await startServe({ cwd: repo, home: keelHome(), args: modelFlags(server) });
    const id = (await s.api('POST', '/v1/sessions', { prompt: 'hi' })).body.session_id as string;
    const events = `${s.url}v1/sessions/${id}/events`;
    const all = await readStream(events, (f) => f.event === 'end', { token: s.token });
    const count = all.filter((f) => f.id !== undefined).length;
    for (const cursor of ['abc', '-5', '1e3', '0x10', '3.5']) {
      const got = await readStream(events, (f) => f.event === 'end', {
        token: s.token,
        headers: { 'Last-Event-ID': cursor },
      });
      expect(
        got.filter((f) => f.id !== undefined),
        cursor,
      ).toHaveLength(count);
    }
    // past the end: nothing logged to send, only the end
    const far = await readStream(events, (f) => f.event === 'end', {
      token: s.token,
      headers: { 'Last-Event-ID': '99999999999999999999' },
    });
    expect(far.filter((f) => f.id !== undefined)).toEqual([]);
    expect(far.at(-1)?.event).toBe('end');
  });

  it('origins that only look local are refused', async () => {
    const { server, s } = await served();
    const origins = [
      'null',
      `http://127.0.0.1:${s.port}.evil.example`,
      `http://localhost:${s.port}@evil.example`,
      `http://evil.example#127.0.0.1:${s.port}`,
      `http://127.0.0.1:${s.port + 1}`,
      'http://127.0.0.1',
      `file://127.0.0.1:${s.port}`,
    ];
    for (const origin of origins) {
      const res = await s.api('POST', '/v1/sessions', { prompt: 'p' }, { headers: { origin } });
      expect(res.status, origin).toBe(403);
      expect(res.body.code).toBe('BAD_ORIGIN');
      // reads too: a page elsewhere may not read the sessions
      expect((await s.api('GET', '/v1/sessions', undefined, { headers: { origin } })).status, origin).toBe(
        403,
      );
    }
    expect(chatBodies(server)).toEqual([]);
    // the real origin still works
    const ok = await s.api('GET', '/v1/sessions', undefined, {
      headers: { origin: `http://127.0.0.1:${s.port}` },
    });
    expect(ok.status).toBe(200);
  });

  it('a scope that leaves the project, by path or by a symlink inside it, is refused', async () => {
    const outside = tempDir('keel-outside-');
    const { server, repo, s } = await served({ 'README.md': '# demo\n', 'src/a.ts': 'export {}\n' });
    symlinkSync(outside, join(repo, 'escape'));
    mkdirSync(`${repo}x`);
    mkdirSync(join(repo, 'src', 'deep'));
    symlinkSync('../../..', join(repo, 'src', 'deep', 'up'));
    for (const scope of [
      outside,
      '..',
      '../..',
      'escape',
      'escape/',
      'src/deep/up',
      'src/../..',
      `${repo}/../${outside.split('/').at(-1)}`,
      `${repo}x`,
      'README.md',
      'missing',
    ]) {
      const res = await s.api('POST', '/v1/sessions', { prompt: 'p', mode: 'edit', scope });
      expect(res.status, scope).toBe(400);
      expect(res.body.code, scope).toBe('SCOPE');
    }
    expect(chatBodies(server)).toEqual([]);
    // a real folder inside is accepted
    const ok = await s.api('POST', '/v1/sessions', { prompt: 'p', mode: 'edit', scope: 'src' });
    expect(ok.status).toBe(201);
  });
});
