/**
 * The hot routes straight from node:http, ahead of hono: `POST /v1/messages`, `POST /v1/messages/ID/ack`,
 * `POST /v1/messages/ID/reply`, `POST /v1/acks` and `GET /v1/events`. Every message cycle takes them,
 * and hono over @hono/node-server builds a web Request, Headers and Response for each request (a third of
 * the hub's time went to HTTP). The handlers are hono's own (app.ts `HotRoutes`): the same key check,
 * rate, validation, answers and audited refusals. Anything unusual about a request (a query string, an
 * id that is not plain, a body without a Content-Length, chunked) goes to hono, which serves the same
 * routes.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { MAX_REQUEST_BYTES } from './api.js';
import { type Answer, type HotRoutes, internal, readIncoming } from './app.js';
import { type Caller, HubError } from './hub-store.js';

type Hot = { kind: 'send' | 'acks' | 'events' } | { kind: 'ack' | 'reply'; id: string };

/** A message id as the hub makes them (and nothing hono would decode differently). */
const ON_MESSAGE = /^\/v1\/messages\/([A-Za-z0-9_-]{1,100})\/(ack|reply)$/;

function hotRoute(method: string | undefined, url: string): Hot | undefined {
  if (method === 'POST') {
    if (url === '/v1/messages') return { kind: 'send' };
    if (url === '/v1/acks') return { kind: 'acks' };
    const m = ON_MESSAGE.exec(url);
    if (m) return { kind: m[2] as 'ack' | 'reply', id: m[1] as string };
  } else if (method === 'GET' && url === '/v1/events') return { kind: 'events' };
  return undefined;
}

/** A listener step: true when it took the request, false to hand it to hono. */
export function fastPath(hot: HotRoutes): (req: IncomingMessage, res: ServerResponse) => boolean {
  return (req, res) => {
    const route = hotRoute(req.method, req.url ?? '');
    if (!route) return false;
    let length = 0;
    if (route.kind !== 'events') {
      const declared = req.headers['content-length'];
      if (declared === undefined || !/^\d+$/.test(declared) || req.headers['transfer-encoding'] !== undefined)
        return false;
      length = Number(declared);
    }
    void serve(hot, route, req, res, length);
    return true;
  };
}

async function serve(
  hot: HotRoutes,
  route: Hot,
  req: IncomingMessage,
  res: ServerResponse,
  length: number,
): Promise<void> {
  const method = req.method as string;
  const path = req.url as string;
  let caller: Caller | undefined;
  try {
    caller = await hot.agent(req.headers.authorization);
    hot.admit(caller);
    if (route.kind === 'events') return await events(hot, caller, req, res);
    if (length > MAX_REQUEST_BYTES) {
      // as hono's body check: refused before reading, audited as a caller without a key, and the
      // connection closed rather than the body read
      res.setHeader('connection', 'close');
      const err = new HubError(413, 'TOO_LARGE', `request bodies are limited to ${MAX_REQUEST_BYTES} bytes`);
      return answer(res, await hot.refuse(method, path, err));
    }
    switch (route.kind) {
      case 'send':
        return answer(res, await hot.send(caller, await readIncoming(req)));
      case 'acks':
        return answer(res, await hot.acks(caller, await readIncoming(req)));
      case 'ack':
        return answer(res, await hot.ack(caller, route.id));
      case 'reply':
        return answer(res, await hot.reply(caller, route.id, await readIncoming(req)));
    }
  } catch (err) {
    if (err instanceof HubError) answer(res, await hot.refuse(method, path, err, caller ?? {}));
    else answer(res, internal(err));
  }
}

function answer(res: ServerResponse, a: Answer): void {
  if (res.headersSent || res.destroyed) return;
  const body = JSON.stringify(a.body);
  res.writeHead(a.status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
  });
  res.end(body);
}

async function events(
  hot: HotRoutes,
  caller: Caller,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  res.writeHead(200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
  });
  res.flushHeaders();
  const lastEventId = req.headers['last-event-id'];
  try {
    await hot.events(caller, typeof lastEventId === 'string' ? lastEventId : undefined, {
      write: async (text) => {
        if (res.destroyed || res.writableEnded) return;
        if (res.write(text)) return;
        // the client reads slower than the hub writes: wait for it (or for it to go away)
        await new Promise<void>((resolve) => {
          const done = () => {
            res.off('drain', done);
            res.off('close', done);
            resolve();
          };
          res.once('drain', done);
          res.once('close', done);
        });
      },
      onAbort: (fn) => {
        if (res.destroyed) fn();
        else res.once('close', fn);
      },
    });
  } finally {
    // the stream ended (the client went away) or failed after its head was sent: no answer but the end
    if (!res.writableEnded) res.end();
  }
}
