/** The web workspace: files under `<package root>/dist/web/`, never outside it. */
import { readFileSync, realpathSync, statSync } from 'node:fs';
import { extname, join, sep } from 'node:path';
import type { Hono } from 'hono';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.map': 'application/json',
  '.txt': 'text/plain; charset=utf-8',
};

const SECURITY = {
  'content-security-policy': "default-src 'self'",
  'x-content-type-options': 'nosniff',
};

/** The real path of a file inside `root` for a URL path, or undefined (missing, a folder, or outside). */
export function resolveStatic(root: string, urlPath: string): string | undefined {
  let decoded: string;
  try {
    decoded = decodeURIComponent(urlPath);
  } catch {
    return undefined;
  }
  if (decoded.includes('\0')) return undefined;
  const rel = decoded === '/' || decoded === '' ? 'index.html' : decoded.replace(/^\/+/, '');
  let real: string;
  let base: string;
  try {
    base = realpathSync(root);
    real = realpathSync(join(base, rel));
  } catch {
    return undefined;
  }
  if (real !== base && !real.startsWith(base + sep)) return undefined;
  return statSync(real).isFile() ? real : undefined;
}

export function mountStatic(app: Hono, root: string): void {
  app.get('*', (c) => {
    const path = c.req.path;
    if (path.startsWith('/v1/') || path.startsWith('/a2a')) return c.notFound();
    if (!statSync(join(root, 'index.html'), { throwIfNoEntry: false })?.isFile())
      return c.html(
        '<!doctype html><title>keel</title><p>web workspace not built (run npm run build:web)</p>',
        404,
        SECURITY,
      );
    const file = resolveStatic(root, path);
    if (!file) return c.text('not found', 404, SECURITY);
    const type = TYPES[extname(file).toLowerCase()] ?? 'application/octet-stream';
    return c.body(readFileSync(file), 200, { 'content-type': type, ...SECURITY });
  });
}
