/**
 * The HTTP API of `keel serve` (see the contract in the README): security checks first (token, Host,
 * Origin, body cap), then the routes. Request bodies are zod schemas; /v1/openapi.json is built from them.
 */

import type { Context } from 'hono';
import { Hono } from 'hono';
import { streamSSE } from 'hono/streaming';
import { z } from 'zod';
import { type Frame, type SessionManager, UnknownSession } from './sessions.js';
import { mountStatic } from './static.js';

export const MAX_BODY = 1024 * 1024;

export const schemas = {
  startSession: z.object({
    prompt: z.string().min(1),
    mode: z.enum(['ask', 'plan', 'edit', 'auto']).optional(),
    scope: z.string().optional(),
    model: z.string().optional(),
    profile: z.string().optional(),
    parent: z.string().optional(),
  }),
  message: z.object({ text: z.string().min(1) }),
  approval: z.object({ decision: z.enum(['allow', 'deny']), reason: z.string().optional() }),
  fork: z.object({ prompt: z.string().optional() }),
  fix: z.object({ task: z.string().min(1), test_command: z.string().optional() }),
  memoryAdd: z.object({ text: z.string().min(1), tags: z.array(z.string()).optional() }),
} as const;

export interface AppDeps {
  manager: SessionManager;
  token: string;
  /** The port actually bound (Host and Origin checks); read when a request comes. */
  port(): number;
  /** Whether every request needs the token (listening off loopback). */
  tokenForAll: boolean;
  /** The web workspace folder (`<package root>/dist/web`); none: no static files. */
  webRoot?: string;
  /** More routes (A2A), mounted before the static catch-all. */
  mount?(app: Hono): void;
}

export type ApiError = { code: string; error: string };

export function fail(c: Context, status: number, code: string, error: string) {
  return c.json({ code, error } satisfies ApiError, status as 400);
}

async function body<T extends z.ZodType>(
  c: Context,
  schema: T,
): Promise<{ ok: true; value: z.infer<T> } | { ok: false; res: Response }> {
  let raw: unknown;
  try {
    const text = await c.req.text();
    raw = text.trim() === '' ? {} : JSON.parse(text);
  } catch {
    return { ok: false, res: fail(c, 400, 'BAD_REQUEST', 'the body is not JSON') };
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue?.path.join('.') || 'body';
    return { ok: false, res: fail(c, 400, 'BAD_REQUEST', `${where}: ${issue?.message ?? 'invalid'}`) };
  }
  return { ok: true, value: parsed.data };
}

/** Process-wide counters for /metrics (tool calls by gate decision, request durations). */
export const metrics = {
  toolCalls: {} as Record<string, number>,
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  counts: new Array<number>(12).fill(0),
  sum: 0,
  n: 0,
};

export function countToolCall(decision: string): void {
  metrics.toolCalls[decision] = (metrics.toolCalls[decision] ?? 0) + 1;
}

function observe(seconds: number): void {
  const i = metrics.buckets.findIndex((b) => seconds <= b);
  const at = i < 0 ? metrics.buckets.length : i;
  metrics.counts[at] = (metrics.counts[at] ?? 0) + 1;
  metrics.sum += seconds;
  metrics.n++;
}

function histogram(): string[] {
  let acc = 0;
  const out = metrics.buckets.map((b, i) => {
    acc += metrics.counts[i] ?? 0;
    return `keel_http_request_duration_seconds_bucket{le="${b}"} ${acc}`;
  });
  out.push(`keel_http_request_duration_seconds_bucket{le="+Inf"} ${metrics.n}`);
  out.push(`keel_http_request_duration_seconds_sum ${metrics.sum}`);
  out.push(`keel_http_request_duration_seconds_count ${metrics.n}`);
  return out;
}

export function createApp(deps: AppDeps): Hono {
  const app = new Hono();
  const { manager } = deps;

  app.onError((err, c) => {
    if (err instanceof UnknownSession) return fail(c, 404, 'NOT_FOUND', err.message);
    return fail(c, 500, 'INTERNAL_ERROR', err.message.split('\n')[0] ?? 'internal error');
  });
  app.notFound((c) => fail(c, 404, 'NOT_FOUND', `no route ${c.req.method} ${c.req.path}`));

  app.use('*', async (_c, next) => {
    const t0 = performance.now();
    await next();
    observe((performance.now() - t0) / 1000);
  });

  // security: Host, Origin, token, body cap, in that order
  app.use('*', async (c, next) => {
    const port = deps.port();
    const host = c.req.header('host') ?? '';
    const hosts = [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`];
    if (!hosts.includes(host.toLowerCase()))
      return fail(c, 421, 'BAD_HOST', `Host ${host.slice(0, 100)} is not this server`);
    const origin = c.req.header('origin');
    if (origin !== undefined && ![`http://127.0.0.1:${port}`, `http://localhost:${port}`].includes(origin))
      return fail(c, 403, 'BAD_ORIGIN', `Origin ${origin.slice(0, 100)} may not call this server`);
    const changes = !['GET', 'HEAD', 'OPTIONS'].includes(c.req.method);
    if (changes || deps.tokenForAll) {
      const auth = c.req.header('authorization') ?? '';
      if (auth !== `Bearer ${deps.token}`)
        return fail(c, 401, 'UNAUTHORIZED', 'missing or wrong token (Authorization: Bearer TOKEN)');
    }
    const length = Number(c.req.header('content-length') ?? '0');
    if (length > MAX_BODY) return fail(c, 413, 'TOO_LARGE', `the body is over ${MAX_BODY} bytes`);
    if (changes && c.req.raw.body) {
      // a chunked body has no length: read it with the cap
      const reader = c.req.raw.body.getReader();
      const chunks: Uint8Array[] = [];
      let size = 0;
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        size += value.byteLength;
        if (size > MAX_BODY) {
          await reader.cancel();
          return fail(c, 413, 'TOO_LARGE', `the body is over ${MAX_BODY} bytes`);
        }
        chunks.push(value);
      }
      const text = Buffer.concat(chunks).toString('utf8');
      c.req.raw = new Request(c.req.raw.url, {
        method: c.req.method,
        headers: c.req.raw.headers,
        body: text,
      });
    }
    await next();
  });

  app.get('/health', (c) => c.json({ ok: true }));
  app.get('/ready', (c) => c.json({ ready: true }));

  app.post('/v1/sessions', async (c) => {
    const b = await body(c, schemas.startSession);
    if (!b.ok) return b.res;
    const started = manager.start({
      prompt: b.value.prompt,
      ...(b.value.mode ? { mode: b.value.mode } : {}),
      ...(b.value.parent ? { parent: b.value.parent } : {}),
    });
    return c.json({ session_id: started.id, mode: started.mode, state: started.state }, 201);
  });

  app.get('/v1/sessions', (c) => {
    const state = c.req.query('state');
    const sessions = manager.list().filter((s) => !state || s.state === state);
    return c.json({ sessions });
  });

  app.get('/v1/sessions/:id', (c) => {
    const s = manager.get(c.req.param('id'));
    if (!s) return fail(c, 404, 'NOT_FOUND', `no session ${c.req.param('id')}`);
    return c.json(s);
  });

  app.get('/v1/sessions/:id/events', (c) => {
    const id = c.req.param('id');
    if (!manager.get(id)) return fail(c, 404, 'NOT_FOUND', `no session ${id}`);
    const from = c.req.header('last-event-id') ?? c.req.query('after') ?? '0';
    const after = Number.parseInt(from, 10) || 0;
    return streamSSE(c, async (stream) => {
      const queue: Frame[] = [];
      let wake: (() => void) | undefined;
      const unsubscribe = manager.subscribe(id, after, (f) => {
        queue.push(f);
        wake?.();
      });
      let closed = false;
      stream.onAbort(() => {
        closed = true;
        unsubscribe();
        wake?.();
      });
      const ping = setInterval(() => {
        void stream.write(': ping\n\n');
      }, 15_000);
      try {
        while (!closed) {
          const f = queue.shift();
          if (!f) {
            await new Promise<void>((r) => {
              wake = r;
            });
            wake = undefined;
            continue;
          }
          if (f.kind === 'event')
            await stream.writeSSE({
              id: String(f.seq),
              event: f.type,
              data: JSON.stringify({ ...f.data, seq: f.seq }),
            });
          else await stream.writeSSE({ event: f.kind, data: JSON.stringify(f.data) });
        }
      } finally {
        clearInterval(ping);
        unsubscribe();
      }
    });
  });

  app.post('/v1/sessions/:id/messages', async (c) => {
    const b = await body(c, schemas.message);
    if (!b.ok) return b.res;
    return c.json({ delivered: manager.message(c.req.param('id'), b.value.text) }, 202);
  });

  app.post('/v1/sessions/:id/approvals/:call', async (c) => {
    const b = await body(c, schemas.approval);
    if (!b.ok) return b.res;
    const ok = manager.approve(c.req.param('id'), c.req.param('call'), b.value.decision, b.value.reason);
    if (!ok) return fail(c, 404, 'NOT_FOUND', `no question ${c.req.param('call')} waits`);
    return c.json({ ok: true });
  });

  app.post('/v1/sessions/:id/cancel', (c) => {
    manager.cancel(c.req.param('id'));
    return c.json({ ok: true }, 202);
  });

  app.post('/v1/sessions/:id/fork', async (c) => {
    const b = await body(c, schemas.fork);
    if (!b.ok) return b.res;
    const id = c.req.param('id');
    const source = manager.get(id);
    if (!source) return fail(c, 404, 'NOT_FOUND', `no session ${id}`);
    if (source.state === 'running' || source.state === 'waiting')
      return fail(c, 409, 'BUSY', `session ${id} is running; fork it when it ends`);
    const { forkStored } = await import('../cli/sessions-command.js');
    const row = forkStored(id);
    if (typeof row === 'string') return fail(c, 409, 'CANNOT_FORK', row);
    const started = manager.start({
      resume: row.id,
      prompt: b.value.prompt ?? '',
      mode: source.mode,
      parent: id,
    });
    return c.json({ session_id: started.id }, 201);
  });

  app.get('/metrics', (c) => {
    const t = manager.totals();
    const lines = [
      '# HELP keel_sessions Sessions of this server by state.',
      '# TYPE keel_sessions gauge',
      ...Object.entries(t.states).map(([k, v]) => `keel_sessions{state="${k}"} ${v}`),
      '# TYPE keel_tokens_total counter',
      `keel_tokens_total ${t.tokens}`,
      '# TYPE keel_cost_usd_total counter',
      `keel_cost_usd_total ${t.costUsd}`,
      '# TYPE keel_tool_calls_total counter',
      ...Object.entries(metrics.toolCalls).map(([k, v]) => `keel_tool_calls_total{decision="${k}"} ${v}`),
      '# TYPE keel_http_request_duration_seconds histogram',
      ...histogram(),
    ];
    return c.text(`${lines.join('\n')}\n`, 200, { 'content-type': 'text/plain; version=0.0.4' });
  });

  app.get('/v1/openapi.json', (c) => c.json(openapi(app)));

  deps.mount?.(app);
  if (deps.webRoot) mountStatic(app, deps.webRoot);
  return app;
}

/** The OpenAPI 3.1 document: every registered route, with the zod request schema where it has one. */
export function openapi(app: Hono): Record<string, unknown> {
  const bodies: Record<string, z.ZodType> = {
    'POST /v1/sessions': schemas.startSession,
    'POST /v1/sessions/{id}/messages': schemas.message,
    'POST /v1/sessions/{id}/approvals/{call}': schemas.approval,
    'POST /v1/sessions/{id}/fork': schemas.fork,
    'POST /v1/fix': schemas.fix,
    'POST /v1/memory': schemas.memoryAdd,
  };
  const paths: Record<string, Record<string, unknown>> = {};
  for (const r of app.routes) {
    if (r.method === 'ALL' || r.path.includes('*')) continue;
    const path = r.path.replace(/:([A-Za-z_]+)/g, '{$1}');
    const method = r.method.toLowerCase();
    const params = [...path.matchAll(/\{([A-Za-z_]+)\}/g)].map((m) => ({
      name: m[1],
      in: 'path',
      required: true,
      schema: { type: 'string' },
    }));
    const schema = bodies[`${r.method} ${path}`];
    paths[path] ??= {};
    (paths[path] as Record<string, unknown>)[method] = {
      ...(params.length ? { parameters: params } : {}),
      ...(schema
        ? {
            requestBody: {
              required: true,
              content: { 'application/json': { schema: z.toJSONSchema(schema, { target: 'draft-7' }) } },
            },
          }
        : {}),
      responses: { default: { description: 'JSON, or {code, error} on a 4xx/5xx' } },
    };
  }
  return { openapi: '3.1.0', info: { title: 'keel serve', version: '1' }, paths };
}
