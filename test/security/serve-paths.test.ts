/**
 * Paths sent to `keel serve` are hostile: the static handler serves dist/web and nothing else, and a path
 * it cannot read is the client's error, never a 500. Requests go raw over HTTP (node:http keeps `..` and
 * escapes exactly as written; fetch would normalize them).
 */
import { describe, expect, it } from 'vitest';
import { keelHome, model, modelFlags } from '../e2e/harness.js';
import { startServe } from '../e2e/serve-harness.js';
import { rawRequest } from '../helpers/raw-http.js';
import { gitRepo } from '../helpers/tmp.js';

const rawGet = (port: number, path: string, token?: string) =>
  rawRequest(port, path, token ? { headers: { authorization: `Bearer ${token}` } } : {}).then((r) => ({
    status: r.status,
    body: r.text,
  }));

describe('keel serve static paths', () => {
  it('refuses a malformed escape with 400 and never serves a file outside dist/web', async () => {
    const server = await model([{ text: 'unused' }]);
    const repo = gitRepo({ 'secret.txt': 'TOP-SECRET-IN-PROJECT\n' });
    const s = await startServe({ cwd: repo, home: keelHome(), args: modelFlags(server) });

    for (const path of ['/%E0%A4%A', '/%', '/assets/%C0', '/%ZZ%']) {
      const res = await rawGet(s.port, path, s.token);
      expect(res.status, path).toBe(400);
      expect(JSON.parse(res.body)).toMatchObject({ code: 'BAD_REQUEST' });
      // without the token such a path is not one of the page's files: it is refused before it is read
      expect((await rawGet(s.port, path)).status, path).toBe(401);
    }
    const escapes = [
      '/../package.json',
      '/../../package.json',
      '/..%2f..%2fpackage.json',
      '/%2e%2e/%2e%2e/package.json',
      '/%252e%252e/%252e%252e/package.json',
      '/assets/..%5c..%5c..%5cpackage.json',
      '/%2e%2e/%2e%2e/%2e%2e/%2e%2e/%2e%2e/%2e%2e/etc/passwd',
      '/..%2f..%2f..%2f..%2f..%2f..%2fetc%2fpasswd',
      `/${'%2e%2e%2f'.repeat(12)}${repo.slice(1)}/secret.txt`,
      '/%00',
      '/index.html%00.js',
    ];
    for (const path of escapes)
      for (const token of [s.token, undefined]) {
        const res = await rawGet(s.port, path, token);
        expect(res.status, path).toBeLessThan(500);
        // the page itself (the workspace's fallback) or a refusal: never the package's manifest, passwd or the project
        expect(res.body, path).not.toMatch(/"name":\s*"keel"|root:x:0:0|TOP-SECRET-IN-PROJECT/);
      }
    const health = await rawGet(s.port, '/health');
    expect(health.status).toBe(200);
  });
});
