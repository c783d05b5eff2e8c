/**
 * Who may talk to `keel serve`: a bearer token on every request but the few that reveal nothing (the
 * server's liveness, its A2A agent card, the page's own files), and `Host`/`Origin` checks so a web
 * page elsewhere cannot reach the server through DNS rebinding or a cross-site form. Loopback is no
 * boundary: a sandboxed command with network, or another local user, reaches it too. The browser
 * sends the token in a header, never a cookie, so a cross-site request carries nothing that would
 * authorize it.
 */
import { timingSafeEqual } from 'node:crypto';
import { isIP } from 'node:net';
import type { MiddlewareHandler } from 'hono';

/** Loopback addresses keel listens on without a configured token. */
export function isLoopback(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '');
  return h === 'localhost' || h === '::1' || (isIP(h) === 4 && h.startsWith('127.'));
}

export function sameToken(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The hosts a request may name: the loopback names on our port, or the configured listen host. */
function allowedHosts(listenHost: string, port: number): Set<string> {
  const hosts = new Set([`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`]);
  hosts.add(`${listenHost.includes(':') ? `[${listenHost}]` : listenHost}:${port}`);
  return hosts;
}

export function guard(opts: {
  listenHost: string;
  port: () => number;
  token: string;
  /** The requests that need no token: they reveal nothing of the project. */
  isPublic(method: string, path: string): boolean;
}): MiddlewareHandler {
  return async (c, next) => {
    const port = opts.port();
    const hosts = allowedHosts(opts.listenHost, port);
    const host = c.req.header('host') ?? '';
    if (!hosts.has(host.toLowerCase()))
      return c.json({ code: 'BAD_HOST', error: `Host ${JSON.stringify(host)} is not this server` }, 421);
    const origin = c.req.header('origin');
    if (origin !== undefined && !hosts.has(origin.replace(/^https?:\/\//, '').toLowerCase()))
      return c.json(
        { code: 'BAD_ORIGIN', error: `Origin ${JSON.stringify(origin)} may not use this server` },
        403,
      );
    if (!opts.isPublic(c.req.method, new URL(c.req.url).pathname)) {
      const header = c.req.header('authorization') ?? '';
      const given = header.startsWith('Bearer ') ? header.slice(7) : '';
      if (!given || !sameToken(given, opts.token))
        return c.json(
          {
            code: 'UNAUTHORIZED',
            error:
              'every request needs Authorization: Bearer <token> (the token keel serve printed; the address it printed carries it for the page)',
          },
          401,
        );
    }
    await next();
  };
}
