/** The browser workspace's files from dist/web, never a path outside it; any other GET gets index.html. */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { extname, join, resolve, sep } from 'node:path';
import type { Hono } from 'hono';
import { fail } from './http.js';

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json',
  '.map': 'application/json',
  '.woff2': 'font/woff2',
};

export function mountWorkspace(app: Hono, webDir: string): void {
  app.get('*', (c) => {
    const raw = new URL(c.req.url).pathname;
    let path: string;
    try {
      path = decodeURIComponent(raw);
    } catch {
      // a malformed escape (`/%E0%A4%A`) is the client's mistake, not the server's
      return fail(c, 400, 'BAD_REQUEST', 'the path has a malformed %-escape');
    }
    if (path.startsWith('/v1/')) return fail(c, 404, 'NOT_FOUND', `no route GET ${path}`);
    const index = join(webDir, 'index.html');
    if (!existsSync(index))
      return c.text('web workspace not built: run npm run build in the keel package', 404);
    let file = resolve(webDir, `.${path}`);
    if (file !== webDir && !file.startsWith(webDir + sep)) return fail(c, 404, 'NOT_FOUND', 'no such file');
    if (!existsSync(file) || !statSync(file).isFile()) file = index;
    const type = CONTENT_TYPES[extname(file)] ?? 'application/octet-stream';
    return c.body(readFileSync(file), 200, {
      'content-type': type,
      'content-security-policy': "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'",
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'no-referrer',
      'cache-control': file === index ? 'no-cache' : 'public, max-age=3600',
    });
  });
}
