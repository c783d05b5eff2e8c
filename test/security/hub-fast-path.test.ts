/**
 * The hub's hot routes are served straight from node:http (src/hub/fast-path.ts), and an agent key it
 * checked is remembered for KEY_CACHE_MS. Attacks on both, through two real `keel hub start` processes
 * on one SQLite store: a forged secret under a remembered key's id; a key revoked through one process,
 * used at once on it and, after the bound, on the other (no hint crosses SQLite processes); and the same
 * bad requests by the fast way in and by hono's (a chunked body, a query string), answered alike.
 */
import { expect, it } from 'vitest';
import { KEY_CACHE_MS } from '../../src/hub/hub-store.js';
import { projectWithAgents, startHub } from '../e2e/hub-harness.js';
import { rawRequest } from '../helpers/raw-http.js';
import { tempDir } from '../helpers/tmp.js';

it('a remembered key still needs its secret, a revoked one is refused at once here and within the bound elsewhere; the fast path refuses as hono does', async () => {
  const home = tempDir('keel-hub-fast-');
  const cwd = tempDir('keel-hub-fast-cwd-');
  const env = { KEEL_HUB_ADMIN_TOKEN: 'fast-path-admin-token' };
  const a = await startHub({ home, cwd, env });
  const b = await startHub({ home, cwd, env });
  const one = await projectWithAgents(a, 'one', 'alice', 'bob');
  const [alice, bob] = [one.keys.alice, one.keys.bob] as [string, string];
  const forged = `${alice.slice(0, 4 + 18 + 1)}${'A'.repeat(43)}`;
  const sent = await a.api('POST', '/v1/messages', alice, { to: 'bob', body: 'x', idempotency_key: 'k' });
  expect(sent.status).toBe(201);
  const id = sent.body.message.id as string;
  for (const hub of [a, b]) {
    // alice's key is remembered on both processes now; its id with another secret opens nothing
    expect((await hub.api('GET', '/v1/agents', alice)).status).toBe(200);
    for (const [method, path] of [
      ['GET', '/v1/agents'],
      ['POST', '/v1/messages'],
      ['POST', `/v1/messages/${id}/reply`],
      ['POST', '/v1/acks'],
    ] as const)
      expect(
        (await hub.api(method, path, forged, method === 'POST' ? { ids: [id] } : undefined)).body.code,
        `${method} ${path}`,
      ).toBe('UNAUTHORIZED');
  }

  // the same bad requests by the fast path (a declared length, a plain path) and by hono (chunked, a query)
  const by = async (path: string, body: string, way: 'fast' | 'hono') => {
    const r = await rawRequest(a.port, way === 'fast' ? path : `${path}?via=hono`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${bob}`,
        'content-type': 'application/json',
        ...(way === 'fast' ? { 'content-length': String(Buffer.byteLength(body)) } : {}),
      },
      ...(way === 'fast' ? { body } : { stream: { bytes: 0, open: body } }),
    });
    return [r.status, JSON.parse(r.text).code ?? 'ok'];
  };
  const cases: [string, string, [number, string]][] = [
    ['/v1/messages', '{"to":"nobody","body":"x","idempotency_key":"u"}', [404, 'UNKNOWN_AGENT']],
    ['/v1/messages', '{"to":"alice",', [400, 'BAD_REQUEST']],
    ['/v1/messages', '{"to":"alice","body":"x","idempotency_key":"e","extra":1}', [400, 'BAD_REQUEST']],
    ['/v1/acks', '{"ids":[]}', [400, 'BAD_REQUEST']],
    [`/v1/messages/${id}/reply`, '{"body":7}', [400, 'BAD_REQUEST']],
    // alice's message to bob is bob's to ack (twice is no error), by either way in
    [`/v1/messages/${sent.body.message.id}/ack`, '', [200, 'ok']],
  ];
  for (const [path, body, expected] of cases)
    for (const way of ['fast', 'hono'] as const)
      expect(await by(path, body, way), `${way} ${path}`).toEqual(expected);
  const reply = await a.api('POST', '/v1/messages/m_000000000000000000000000/reply', bob, { body: 'r' });
  expect([reply.status, reply.body.code]).toEqual([404, 'NOT_FOUND']);
  const others = await a.api('POST', '/v1/acks', alice, { ids: [id] });
  expect(others.body).toEqual({ acked: [], skipped: [id] });
  // a declared length past 2 MiB is refused on the header alone, and the connection closed
  const huge = await rawRequest(a.port, '/v1/messages', {
    method: 'POST',
    headers: { authorization: `Bearer ${bob}`, 'content-type': 'application/json' },
    stream: {
      bytes: 3 * 1024 * 1024,
      open: '{"to":"alice","idempotency_key":"h","body":"',
      close: '"}',
      declared: true,
    },
  });
  expect([huge.status, JSON.parse(huge.text).code]).toEqual([413, 'TOO_LARGE']);

  // revoked through hub a (the CLI): refused there from the next request, by every way in
  const revoked = await a.cli(['token', 'revoke', one.tokenId, '--json']);
  expect(revoked.code, revoked.stderr).toBe(0);
  const at = Date.now();
  for (const [method, path] of [
    ['GET', '/v1/agents'],
    ['GET', '/v1/events'],
    ['POST', '/v1/messages'],
    ['POST', `/v1/messages/${id}/ack`],
    ['POST', '/v1/acks'],
  ] as const)
    expect((await a.api(method, path, alice, method === 'POST' ? {} : undefined)).body.code, path).toBe(
      'UNAUTHORIZED',
    );
  // hub b heard nothing (SQLite: no hint between processes) and may have taken the key on its word
  // until the bound; past it, the row is read again
  await new Promise((r) => setTimeout(r, Math.max(0, at + KEY_CACHE_MS + 50 - Date.now())));
  for (const [method, path] of [
    ['GET', '/v1/agents'],
    ['POST', '/v1/messages'],
  ] as const)
    expect((await b.api(method, path, alice, method === 'POST' ? {} : undefined)).body.code, path).toBe(
      'UNAUTHORIZED',
    );
});
