/**
 * The hub's HTTP face: who may call what (api.ts says it per route), the limits, and the routes over
 * the hub store. Every refusal is a JSON error with a code, and a row in the hub's audit table.
 */
import type { IncomingMessage } from 'node:http';
import { type Context, Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { streamSSE } from 'hono/streaming';
import type { z } from 'zod';
import {
  AcksBody,
  accessOf,
  MAX_REQUEST_BYTES,
  openApiDocument,
  RegisterBody,
  ReplyBody,
  SendBody,
} from './api.js';
import { type Caller, HubError, type HubStore, LIMITS, type ProjectAuth, REDELIVER_MS } from './hub-store.js';
import { RateLimit } from './rate-limit.js';
import { bearer, sameSecret } from './tokens.js';
import type { Wakeups } from './wakeups.js';

export interface HubAppOptions {
  version: string;
  hub: HubStore;
  adminToken: string;
  rate: RateLimit;
  wakeups: Wakeups;
  /** Lines of Prometheus text the server adds (commits, batch sizes). */
  metrics(): string;
  /** More routes on the same app, after the hub's own (workflows, webhooks); they do their own access checks. */
  mount?(app: Hono<HubEnv>): void;
}

export type HubEnv = {
  // @hono/node-server passes the Node request along: a body read from it skips building a web Request
  Bindings: { incoming?: IncomingMessage } | undefined;
  Variables: { caller: Caller; project: ProjectAuth; body?: IncomingMessage };
};

/** How often a stream says it is alive, and renews its agent's presence. */
const HEARTBEAT_MS = 15_000;
/** How often an idle stream re-reads its rows anyway (another process's write on SQLite wakes no one). */
const POLL_MS = 5_000;
/** Presence is written at most this often per agent and process. */
const TOUCH_EVERY_MS = 10_000;

/** A request header, from the Node request when there is one (hono's would build a web Headers first). */
function header(c: Context<HubEnv>, name: string): string | undefined {
  const incoming = c.env?.incoming;
  if (!incoming) return c.req.header(name);
  const value = incoming.headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}

/** The request's body as text: straight from the Node request when the size was checked from its header. */
function bodyText(c: Context<HubEnv>): Promise<string> {
  const incoming = c.get('body');
  return incoming ? readIncoming(incoming) : c.req.raw.text();
}

/** A Node request's body whose length was checked from its header; one longer than it said is cut off all the same. */
export function readIncoming(incoming: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    incoming.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_REQUEST_BYTES) {
        incoming.destroy();
        reject(new HubError(413, 'TOO_LARGE', `request bodies are limited to ${MAX_REQUEST_BYTES} bytes`));
      } else chunks.push(chunk);
    });
    incoming.on('end', () =>
      resolve(
        chunks.length === 1 ? (chunks[0] as Buffer).toString('utf8') : Buffer.concat(chunks).toString('utf8'),
      ),
    );
    incoming.on('error', reject);
  });
}

async function readBody<T extends z.ZodType>(c: Context<HubEnv>, schema: T): Promise<z.infer<T>> {
  return parseBody(await bodyText(c), schema);
}

/** A request body's JSON, checked against its route's schema (a 400 naming the first field wrong). */
export function parseBody<T extends z.ZodType>(text: string, schema: T): z.infer<T> {
  let raw: unknown;
  try {
    raw = text.trim() ? JSON.parse(text) : {};
  } catch {
    throw new HubError(400, 'BAD_REQUEST', 'the request body is not JSON');
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new HubError(
      400,
      'BAD_REQUEST',
      `${issue?.path.join('.') || 'body'}: ${issue?.message ?? 'invalid'}`,
    );
  }
  return parsed.data;
}

function checkBody(body: string): void {
  const bytes = Buffer.byteLength(body, 'utf8');
  if (bytes > LIMITS.maxBodyBytes)
    throw new HubError(413, 'BODY_TOO_LARGE', `body: ${bytes} bytes, the limit is ${LIMITS.maxBodyBytes}`);
}

function checkTtl(ttl: number | undefined): void {
  if (ttl === undefined) return;
  if (!Number.isInteger(ttl) || ttl < LIMITS.minTtlS || ttl > LIMITS.maxTtlS)
    throw new HubError(
      400,
      'BAD_TTL',
      `ttl_s: ${ttl} is not a whole number of seconds from ${LIMITS.minTtlS} to ${LIMITS.maxTtlS} (7 days)`,
    );
}

/** Audit rows a second for refusals of callers without a valid key (bursts of twice that). */
const ANONYMOUS_AUDITS_PER_S = 50;

/** An answer as status and JSON, for hono (c.json) and for the fast path (fast-path.ts) alike. */
export interface Answer {
  status: number;
  body: unknown;
}

function errorBody(err: HubError): Record<string, unknown> {
  return { code: err.code, error: err.message, ...err.extra };
}

/** Where a stream's frames go: hono's SSE stream or the Node response. */
export interface EventSink {
  write(text: string): Promise<void>;
  /** Called once when the client goes away. */
  onAbort(fn: () => void): void;
}

/**
 * The agent routes every message cycle takes (send, ack, acks, reply, events), apart from how they are
 * reached: hono serves them, and so does the fast path ahead of it (fast-path.ts), with one behaviour.
 */
export interface HotRoutes {
  /** The caller an agent key opens; a 401 HubError when it opens nothing. */
  agent(authorization: string | undefined): Promise<Caller>;
  /** Take the caller's rate (a 429 HubError past it) and renew its presence now and then. */
  admit(caller: Caller): void;
  send(caller: Caller, text: string): Promise<Answer>;
  ack(caller: Caller, id: string): Promise<Answer>;
  acks(caller: Caller, text: string): Promise<Answer>;
  reply(caller: Caller, id: string, text: string): Promise<Answer>;
  /** Run an agent's event stream until the client goes away. */
  events(caller: Caller, lastEventId: string | undefined, sink: EventSink): Promise<void>;
  /** A refusal: audited (callers without a key up to a rate), as its JSON answer. */
  refuse(method: string, pathname: string, err: HubError, who?: Partial<Caller>): Promise<Answer>;
}

export function createHubApp(opts: HubAppOptions): Hono<HubEnv> {
  return createHub(opts).app;
}

/** The hub's hono app, and the hot routes it serves, for a faster way in to share. */
export function createHub(opts: HubAppOptions): { app: Hono<HubEnv>; hot: HotRoutes } {
  const { hub, wakeups } = opts;
  const app = new Hono<HubEnv>();
  const touched = new Map<string, number>();

  // refusals of callers without a key are audited up to a rate, so a flood of bad tokens cannot fill the store
  const anonymous = new RateLimit(ANONYMOUS_AUDITS_PER_S);
  let unaudited = 0;
  const refuseAnswer = async (
    method: string,
    pathname: string,
    err: HubError,
    who: Partial<Caller> = {},
  ): Promise<Answer> => {
    if (!who.agentId && !anonymous.take('')) {
      unaudited++;
      return { status: err.status, body: errorBody(err) };
    }
    await hub
      .audit({
        ...(who.projectId ? { projectId: who.projectId } : {}),
        ...(who.agentId ? { agentId: who.agentId } : {}),
        code: err.code,
        detail: `${method} ${pathname}: ${err.message}`,
      })
      .catch(() => undefined);
    return { status: err.status, body: errorBody(err) };
  };
  const refuse = async (
    c: { req: { method: string; url: string } },
    err: HubError,
    who: Partial<Caller> = {},
  ): Promise<Response> => {
    const a = await refuseAnswer(c.req.method, new URL(c.req.url).pathname, err, who);
    return new Response(JSON.stringify(a.body), {
      status: a.status,
      headers: { 'content-type': 'application/json' },
    });
  };
  const json = (c: Context<HubEnv>, a: Answer) => c.json(a.body, a.status as 200);

  const agent = async (authorization: string | undefined): Promise<Caller> => {
    const caller = await hub.agentOf(bearer(authorization));
    if (!caller)
      throw new HubError(
        401,
        'UNAUTHORIZED',
        'this route needs Authorization: Bearer <an agent key> (POST /v1/agents with a project token gives one)',
      );
    return caller;
  };
  // the rate and presence after the caller is known (a 429 is audited as the caller's)
  const admit = (caller: Caller): void => {
    if (!opts.rate.take(caller.agentId))
      throw new HubError(429, 'RATE_LIMITED', `agent ${caller.name} is over its rate limit: slow down`);
    const now = hub.now();
    if ((touched.get(caller.agentId) ?? 0) < now - TOUCH_EVERY_MS) {
      touched.set(caller.agentId, now);
      void hub.touch(caller.agentId).catch(() => undefined);
    }
  };

  const hot: HotRoutes = {
    agent,
    admit,
    async send(caller, text) {
      const input = parseBody(text, SendBody);
      checkBody(input.body);
      checkTtl(input.ttl_s);
      const sent = await hub.send(caller, input);
      return { status: sent.created ? 201 : 200, body: sent };
    },
    async ack(caller, id) {
      return { status: 200, body: { message: await hub.ack(caller, id) } };
    },
    async acks(caller, text) {
      const input = parseBody(text, AcksBody);
      return { status: 200, body: await hub.ackMany(caller, input.ids) };
    },
    async reply(caller, id, text) {
      const input = parseBody(text, ReplyBody);
      checkBody(input.body);
      const sent = await hub.reply(caller, id, input);
      return { status: sent.created ? 201 : 200, body: sent };
    },
    events: (caller, lastEventId, sink) => runEvents(hub, wakeups, caller, lastEventId, sink),
    refuse: refuseAnswer,
  };

  app.onError(async (err, c) => {
    if (err instanceof HubError) {
      const caller = c.get('caller') as Caller | undefined;
      const project = c.get('project') as ProjectAuth | undefined;
      return refuse(c, err, caller ?? (project ? { projectId: project.projectId } : {}));
    }
    return c.json(internal(err).body, 500);
  });
  app.notFound((c) =>
    c.json({ code: 'NOT_FOUND', error: `no route ${c.req.method} ${new URL(c.req.url).pathname}` }, 404),
  );

  // who may call: the route's access says which token, and the token must open it
  app.use('*', async (c, next) => {
    const access = accessOf(c.req.method, new URL(c.req.url).pathname);
    // `person` routes (an approval) take the admin or a project token and check it themselves
    if (access === undefined || access === 'public' || access === 'person') return next();
    const token = bearer(header(c, 'authorization'));
    if (access === 'admin') {
      if (!sameSecret(token, opts.adminToken))
        throw new HubError(401, 'UNAUTHORIZED', 'this route needs Authorization: Bearer <the admin token>');
      return next();
    }
    if (access === 'project') {
      const project = await hub.projectOf(token);
      if (!project)
        throw new HubError(
          401,
          'UNAUTHORIZED',
          'this route needs Authorization: Bearer <a live project token>',
        );
      c.set('project', project);
      return next();
    }
    const caller = await agent(header(c, 'authorization'));
    c.set('caller', caller);
    admit(caller);
    return next();
  });
  const tooLarge = (c: Context<HubEnv>) => {
    c.header('connection', 'close');
    return refuse(
      c,
      new HubError(413, 'TOO_LARGE', `request bodies are limited to ${MAX_REQUEST_BYTES} bytes`),
    );
  };
  const limited = bodyLimit({ maxSize: MAX_REQUEST_BYTES, onError: tooLarge });
  app.use('*', async (c, next) => {
    const method = c.req.method;
    if (method === 'GET' || method === 'HEAD') return next();
    // the usual request says its length: checked from the header, its body is read later straight
    // from the Node request (hono's bodyLimit would build a web Request for every one of them)
    const length = header(c, 'content-length');
    const incoming = c.env?.incoming;
    if (incoming && length !== undefined && /^\d+$/.test(length) && !header(c, 'transfer-encoding')) {
      if (Number(length) > MAX_REQUEST_BYTES) return tooLarge(c);
      c.set('body', incoming);
      return next();
    }
    return limited(c, next);
  });

  app.get('/health', (c) => c.json({ ok: true }));
  app.get('/ready', async (c) => {
    await hub.store.query('SELECT 1');
    return c.json({ ready: true });
  });
  app.get('/v1/openapi.json', (c) => c.json(openApiDocument(opts.version)));
  app.get('/metrics', async (c) => {
    const counts = await hub.counts();
    const lines = [
      '# HELP keel_hub_messages Messages in the store, by state.',
      '# TYPE keel_hub_messages gauge',
    ];
    for (const state of ['queued', 'delivered', 'acked', 'replied', 'cancelled', 'expired'])
      lines.push(`keel_hub_messages{state="${state}"} ${counts[state] ?? 0}`);
    lines.push(
      '# HELP keel_hub_unaudited_refusals_total Refusals of callers without a key past the audit rate (counted, not stored).',
      '# TYPE keel_hub_unaudited_refusals_total counter',
      `keel_hub_unaudited_refusals_total ${unaudited}`,
    );
    return c.text(`${lines.join('\n')}\n${opts.metrics()}`, 200, {
      'content-type': 'text/plain; version=0.0.4',
    });
  });

  // ---- the admin's ----
  app.post('/v1/projects/:name/tokens', async (c) => {
    const name = c.req.param('name');
    if (!RegisterBody.shape.name.safeParse(name).success)
      throw new HubError(
        400,
        'BAD_REQUEST',
        `project name ${JSON.stringify(name)}: letters, digits, ".", "_" and "-"`,
      );
    return c.json(await hub.createProjectToken(name), 201);
  });
  app.get('/v1/tokens', async (c) => c.json({ tokens: await hub.tokens() }));
  app.post('/v1/tokens/:id/revoke', async (c) => {
    const revoked = await hub.revokeToken(c.req.param('id'));
    if (!revoked) throw new HubError(404, 'NOT_FOUND', `no token ${c.req.param('id')}`);
    return c.json(revoked);
  });
  app.get('/v1/audit', async (c) => c.json({ refusals: await hub.refusals() }));

  // ---- a project token's ----
  app.post('/v1/agents', async (c) => {
    const input = await readBody(c, RegisterBody);
    return c.json(await hub.registerAgent(c.get('project'), input.name, input.role), 201);
  });

  // ---- an agent's ----
  app.get('/v1/agents', async (c) => c.json({ agents: await hub.peers(c.get('caller').projectId) }));
  app.post('/v1/messages', async (c) => json(c, await hot.send(c.get('caller'), await bodyText(c))));
  app.get('/v1/messages/:id', async (c) => {
    const caller = c.get('caller');
    const id = c.req.param('id');
    const waitS = Math.min(60, Math.max(0, Number(c.req.query('wait') ?? 0) || 0));
    const until = Date.now() + waitS * 1000;
    const waiter = wakeups.subscribe(caller.agentId);
    try {
      for (;;) {
        const found = await hub.message(caller, id);
        const open =
          found.message.state !== 'replied' &&
          found.message.state !== 'cancelled' &&
          found.message.state !== 'expired';
        const left = until - Date.now();
        if (!open || left <= 0 || found.message.from !== caller.name) return c.json(found);
        await waiter.wait(Math.min(left, 1000));
      }
    } finally {
      waiter.close();
    }
  });
  app.post('/v1/messages/:id/ack', async (c) => json(c, await hot.ack(c.get('caller'), c.req.param('id'))));
  app.post('/v1/acks', async (c) => json(c, await hot.acks(c.get('caller'), await bodyText(c))));
  app.post('/v1/messages/:id/reply', async (c) =>
    json(c, await hot.reply(c.get('caller'), c.req.param('id'), await bodyText(c))),
  );
  app.post('/v1/messages/:id/cancel', async (c) =>
    c.json({ message: await hub.cancel(c.get('caller'), c.req.param('id')) }),
  );
  app.get('/v1/inbox', async (c) => {
    const caller = c.get('caller');
    const messages = await hub.inbox(caller);
    // read here is delivered: the 30 s before a redelivery start now
    await hub.markDelivered(
      caller.agentId,
      messages.filter((m) => m.state === 'queued' || m.state === 'delivered').map((m) => m.id),
    );
    return c.json({ messages });
  });
  app.get('/v1/events', (c) => {
    const caller = c.get('caller');
    return streamSSE(c, (stream) =>
      hot.events(caller, c.req.header('last-event-id'), {
        write: async (text) => {
          await stream.write(text);
        },
        onAbort: (fn) => stream.onAbort(fn),
      }),
    );
  });
  opts.mount?.(app);
  return { app, hot };
}

/** The answer to an error no route expected: its first line, as a 500. */
export function internal(err: unknown): Answer {
  const message = (err instanceof Error ? err.message : String(err)).split('\n')[0] ?? 'error';
  return { status: 500, body: { code: 'INTERNAL', error: message } };
}

/**
 * An agent's event stream: on (re)connect every message not acked, then the new ones and those due
 * again, each as `event: message` with the recipient's sequence as its `id:`; a ping and a presence
 * renewal every HEARTBEAT_MS.
 */
async function runEvents(
  hub: HubStore,
  wakeups: Wakeups,
  caller: Caller,
  lastEventId: string | undefined,
  sink: EventSink,
): Promise<void> {
  const last = lastEventId ?? '';
  let cursor = /^\d+$/.test(last) ? Number(last) : 0;
  const waiter = wakeups.subscribe(caller.agentId);
  let open = true;
  sink.onAbort(() => {
    open = false;
    waiter.close();
  });
  let first = true;
  let beat = Date.now();
  // when the earliest delivered message falls due again: read from the rows after a wait that
  // timed out, and between those only brought forward by what this stream delivers (a value
  // too early costs one read more; one too late is bounded by POLL_MS, after which it is read again)
  let next: number | undefined;
  let stale = true;
  try {
    while (open) {
      let until: number;
      try {
        // on (re)connect every message not acked; then the new ones and those due again
        const due = await hub.due(caller.agentId, { all: first, after: cursor });
        first = false;
        // one write for all of them (JSON has no line break, so each is one data line)
        let frames = '';
        for (const m of due) {
          frames += `event: message\ndata: ${JSON.stringify(m)}\nid: ${m.seq}\n\n`;
          cursor = Math.max(cursor, m.seq);
        }
        if (frames) await sink.write(frames);
        await hub.markDelivered(
          caller.agentId,
          due.map((m) => m.id),
        );
        if (due.length >= 500) continue;
        const now = Date.now();
        if (stale) next = await hub.nextRedelivery(caller.agentId);
        else if (due.length) next = Math.min(next ?? Number.POSITIVE_INFINITY, now + REDELIVER_MS);
        if (now - beat >= HEARTBEAT_MS) {
          beat = now;
          await sink.write(': ping\n\n');
          await hub.touch(caller.agentId);
        }
        until = Math.min(next ?? Number.POSITIVE_INFINITY, beat + HEARTBEAT_MS, now + POLL_MS);
      } catch {
        // the store failed for a moment (a deadlock retried out, a lost connection): what was not
        // marked delivered is sent again, and the stream goes on
        until = Date.now() + 250;
      }
      stale = !(await waiter.wait(until - Date.now()));
    }
  } finally {
    waiter.close();
  }
}
