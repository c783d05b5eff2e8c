/**
 * The HTTP face of keel: sessions, their live streams, approvals, fix runs and memory, as JSON over
 * HTTP with SSE streams, plus the browser workspace's static files. Every request body is validated
 * by the zod schema the OpenAPI document is generated from, so the two cannot drift.
 */
import { existsSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { extname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { type Context, Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { streamSSE } from 'hono/streaming';
import { z } from 'zod';
import type { SessionEvent } from '../agent/events.js';
import { ConfigError, type LoadedConfig } from '../config/load.js';
import { keelPaths } from '../config/paths.js';
import { MODES } from '../config/schema.js';
import { readRuns, recordedIn, runReport, summarizeRun } from '../fix/runs.js';
import { openMemory } from '../memory/open.js';
import { mountFiles } from './files.js';
import type { FixRuns } from './fixes.js';
import type { Metrics } from './metrics.js';
import { guard } from './security.js';
import { mountSessionSettings, SETTINGS_ROUTE } from './session-settings.js';
import { Conflict, type Frame, NotFound, type SessionManager, type SessionState } from './sessions.js';

export const MAX_BODY_BYTES = 1024 * 1024;

const StartBody = z
  .object({
    prompt: z.string().min(1).max(200_000),
    mode: z.enum(MODES).default('ask'),
    scope: z.string().min(1).optional(),
    model: z.string().min(1).optional(),
    profile: z.string().min(1).optional(),
    parent: z.string().min(1).optional(),
  })
  .strict();
const MessageBody = z.object({ text: z.string().min(1).max(200_000) }).strict();
const ApprovalBody = z
  .object({ decision: z.enum(['allow', 'deny']), reason: z.string().max(2000).optional() })
  .strict();
const ForkBody = z
  .object({ prompt: z.string().min(1).optional(), at: z.number().int().positive().optional() })
  .strict();
const FixBody = z
  .object({ task: z.string().min(1).max(200_000), test_command: z.string().min(1).optional() })
  .strict();
const MemoryAddBody = z
  .object({
    text: z.string().min(1).max(20_000),
    tags: z.array(z.string().min(1).max(64)).max(20).optional(),
  })
  .strict();

interface Route {
  method: 'get' | 'post';
  path: string;
  summary: string;
  body?: z.ZodType;
  query?: Record<string, string>;
  stream?: boolean;
}

/**
 * What answers without the token: the process is up, the A2A agent card (discovery is public; it names
 * keel and its skills, nothing of the project) and the page's own files (keel's, not the project's; the
 * page reads the API with the token its address carries).
 */
export function isPublic(method: string, path: string): boolean {
  if (method !== 'GET' && method !== 'HEAD') return false;
  return (
    path === '/health' ||
    path === '/.well-known/agent-card.json' ||
    path === '/' ||
    path === '/index.html' ||
    /^\/assets\/[\w-][\w.-]*$/.test(path)
  );
}

/** Every route the server answers, for the OpenAPI document (a test checks it against the app's own). */
export const ROUTES: Route[] = [
  { method: 'post', path: '/v1/sessions', summary: 'start a session', body: StartBody },
  {
    method: 'get',
    path: '/v1/sessions',
    summary: "this project's sessions",
    query: {
      state: 'running|waiting|completed|failed|cancelled',
      project: 'this project only (another folder is a 400)',
    },
  },
  { method: 'get', path: '/v1/sessions/:id', summary: 'one session' },
  {
    method: 'get',
    path: '/v1/sessions/:id/events',
    summary: 'the session as a stream (SSE): stored events from Last-Event-ID or ?after=, then live',
    query: { after: 'a seq' },
    stream: true,
  },
  { method: 'get', path: '/v1/sessions/:id/diff', summary: 'unified diffs of the files the session changed' },
  {
    method: 'post',
    path: '/v1/sessions/:id/messages',
    summary: 'steer a running turn, or start the next one',
    body: MessageBody,
  },
  {
    method: 'post',
    path: '/v1/sessions/:id/approvals/:question',
    summary:
      "answer a question the session waits on, named by its id (pending_approvals[].id, not the model's call_id)",
    body: ApprovalBody,
  },
  { method: 'post', path: '/v1/sessions/:id/cancel', summary: 'cancel the running turn' },
  {
    method: 'post',
    path: '/v1/sessions/:id/fork',
    summary: 'branch the session (and go on in the branch with prompt)',
    body: ForkBody,
  },
  SETTINGS_ROUTE,
  { method: 'post', path: '/v1/fix', summary: 'start a fix run', body: FixBody },
  {
    method: 'get',
    path: '/v1/runs',
    summary: "this project's fix and loop runs",
    query: { project: 'this project only (another folder is a 400)' },
  },
  { method: 'get', path: '/v1/runs/:id', summary: 'one run: verdict, attempts, rationale, PR text, diff' },
  {
    method: 'get',
    path: '/v1/memory/search',
    summary: "search the project's memory",
    query: { q: 'the query', k: 'how many' },
  },
  { method: 'post', path: '/v1/memory', summary: 'add a note to memory', body: MemoryAddBody },
  {
    method: 'get',
    path: '/v1/files',
    summary: 'one folder of the project, read-only (no .git, no credential files, no links out)',
    query: { dir: 'a folder relative to the project (the top when absent)' },
  },
  {
    method: 'get',
    path: '/v1/files/content',
    summary:
      'one text file of the project, read-only (refused: outside, .git, credentials, binary, over 1 MiB)',
    query: { path: 'a file relative to the project' },
  },
  { method: 'get', path: '/v1/openapi.json', summary: 'this document' },
  { method: 'get', path: '/health', summary: 'the process is up' },
  { method: 'get', path: '/ready', summary: 'the store answers' },
  { method: 'get', path: '/metrics', summary: 'Prometheus text' },
];

export function openApiDocument(version: string): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const r of ROUTES) {
    const path = r.path.replace(/:([a-z]+)/g, '{$1}');
    const params = [...r.path.matchAll(/:([a-z]+)/g)].map((m) => ({
      name: m[1],
      in: 'path',
      required: true,
      schema: { type: 'string' },
    }));
    const query = Object.entries(r.query ?? {}).map(([name, description]) => ({
      name,
      in: 'query',
      required: false,
      description,
      schema: { type: 'string' },
    }));
    paths[path] ??= {};
    (paths[path] as Record<string, unknown>)[r.method] = {
      summary: r.summary,
      ...(params.length || query.length ? { parameters: [...params, ...query] } : {}),
      ...(r.body
        ? {
            requestBody: {
              required: true,
              content: {
                'application/json': {
                  schema: z.toJSONSchema(r.body, { io: 'input', target: 'draft-2020-12' }),
                },
              },
            },
          }
        : {}),
      responses: {
        [r.method === 'post' && !r.path.includes('/approvals/') ? '2XX' : '200']: {
          description: r.stream ? 'text/event-stream' : 'application/json',
        },
        '4XX': { description: '{code, error}' },
      },
      ...(isPublic(r.method.toUpperCase(), r.path) ? {} : { security: [{ bearer: [] }] }),
    };
  }
  return {
    openapi: '3.1.0',
    info: { title: 'keel serve', version },
    components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
    paths,
  };
}

export interface AppOptions {
  version: string;
  project: string;
  env: NodeJS.ProcessEnv;
  token: string;
  listenHost: string;
  port: () => number;
  /** The config for a request's model and profile (ConfigError when they are wrong). */
  configFor(flags: { model?: string; profile?: string }): LoadedConfig;
  manager: SessionManager;
  /** Fix runs of this server (`POST /v1/fix`, the A2A fix skill). */
  fixes: FixRuns;
  metrics: Metrics;
  webDir: string;
  /** More routes (the A2A endpoint) mounted on the same guarded app. */
  mount?(app: Hono): void;
}

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

function fail(c: Context, status: 400 | 404 | 409 | 413, code: string, error: string) {
  return c.json({ code, error }, status);
}

async function body<T extends z.ZodType>(c: Context, schema: T): Promise<z.infer<T> | string> {
  let raw: unknown;
  const text = await c.req.text();
  try {
    raw = text.trim() ? JSON.parse(text) : {};
  } catch {
    return 'the request body is not JSON';
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return `${issue?.path.join('.') || 'body'}: ${issue?.message ?? 'invalid'}`;
  }
  return parsed.data;
}

export function createApp(opts: AppOptions): Hono {
  const { manager, metrics } = opts;
  const app = new Hono();
  app.use('*', async (c, next) => {
    const started = process.hrtime.bigint();
    await next();
    metrics.request(
      c.req.routePath || 'unmatched',
      c.res.status,
      Number(process.hrtime.bigint() - started) / 1e9,
    );
  });
  app.use('*', guard({ ...opts, isPublic }));
  app.use(
    '*',
    bodyLimit({
      maxSize: MAX_BODY_BYTES,
      // the rest of the body is never read, so the connection cannot carry another request: say so, or a
      // keep-alive client sends its next request down a socket that is about to close
      onError: (c) => {
        c.header('connection', 'close');
        return fail(c, 413, 'TOO_LARGE', `request bodies are limited to ${MAX_BODY_BYTES} bytes`);
      },
    }),
  );
  // an unknown route answers in the API's own shape, whatever the method (GETs fall to the workspace below)
  app.notFound((c) => fail(c, 404, 'NOT_FOUND', `no route ${c.req.method} ${new URL(c.req.url).pathname}`));
  app.onError((err, c) => {
    if (err instanceof NotFound) return fail(c, 404, 'NOT_FOUND', err.message);
    if (err instanceof Conflict) return fail(c, 409, 'CONFLICT', err.message);
    if (err instanceof ConfigError) return fail(c, 400, 'CONFIG_ERROR', err.message);
    const message = (err instanceof Error ? err.message : String(err)).split('\n')[0] ?? 'error';
    return c.json({ code: 'INTERNAL', error: message }, 500);
  });

  app.post('/v1/sessions', async (c) => {
    const req = await body(c, StartBody);
    if (typeof req === 'string') return fail(c, 400, 'BAD_REQUEST', req);
    const loaded = opts.configFor({
      ...(req.model ? { model: req.model } : {}),
      ...(req.profile ? { profile: req.profile } : {}),
    });
    if (req.scope) {
      const scope = scopeInside(opts.project, req.scope);
      if (scope === undefined)
        return fail(c, 400, 'SCOPE', `scope ${JSON.stringify(req.scope)} is not a folder inside the project`);
      loaded.config = { ...loaded.config, scope: [scope] };
    }
    if (req.parent) manager.view(req.parent);
    const { id } = await manager.start({
      prompt: req.prompt,
      mode: req.mode,
      loaded,
      ...(req.parent ? { parent: req.parent } : {}),
    });
    return c.json({ session_id: id, mode: req.mode, state: manager.view(id).state }, 201);
  });
  // the server serves its own project: `?project=` naming another folder (a nested repository too) is refused
  const otherProject = (c: Context) => {
    const project = c.req.query('project');
    return project !== undefined && !recordedIn(resolve(opts.project, project), manager.root);
  };
  const onlyThisProject = `project: this server serves ${opts.project} only`;
  app.get('/v1/sessions', (c) => {
    const state = c.req.query('state') as SessionState | undefined;
    if (otherProject(c)) return fail(c, 400, 'BAD_REQUEST', onlyThisProject);
    return c.json({ project: opts.project, sessions: manager.list(state ? { state } : {}) });
  });
  app.get('/v1/sessions/:id', (c) => c.json(manager.view(c.req.param('id'))));
  app.get('/v1/sessions/:id/diff', (c) => c.json({ files: manager.diff(c.req.param('id')) }));
  app.get('/v1/sessions/:id/events', (c) => {
    const id = c.req.param('id');
    manager.view(id);
    const from = c.req.header('last-event-id') ?? c.req.query('after') ?? '0';
    const after = /^\d+$/.test(from) ? Number(from) : 0;
    return streamSSE(c, async (stream) => {
      let chain = Promise.resolve();
      const send = (frame: Frame) => {
        chain = chain.then(() =>
          frame.kind === 'event'
            ? stream.writeSSE({
                id: String(frame.seq),
                event: frame.event.type,
                data: JSON.stringify({ ...frame.event, seq: frame.seq }),
              })
            : stream.writeSSE({ event: frame.kind, data: JSON.stringify(frame.data) }),
        );
      };
      const unsubscribe = manager.subscribe(id, after, send);
      const ping = setInterval(() => {
        chain = chain.then(() => stream.write(': ping\n\n')).then(() => {});
      }, 15_000);
      await new Promise<void>((done) => stream.onAbort(done));
      clearInterval(ping);
      unsubscribe();
    });
  });
  app.post('/v1/sessions/:id/messages', async (c) => {
    const req = await body(c, MessageBody);
    if (typeof req === 'string') return fail(c, 400, 'BAD_REQUEST', req);
    const delivered = await manager.message(c.req.param('id'), req.text);
    return c.json({ delivered }, 202);
  });
  app.post('/v1/sessions/:id/approvals/:question', async (c) => {
    const req = await body(c, ApprovalBody);
    if (typeof req === 'string') return fail(c, 400, 'BAD_REQUEST', req);
    const question = c.req.param('question');
    const ok = manager.approve(c.req.param('id'), question, req.decision, req.reason);
    if (!ok)
      return fail(
        c,
        404,
        'NOT_FOUND',
        `no question ${question} waits in this session; an answer names the question id (pending_approvals[].id), not the call id`,
      );
    return c.json({ ok: true });
  });
  app.post('/v1/sessions/:id/cancel', (c) => {
    const cancelled = manager.cancel(c.req.param('id'));
    return c.json({ cancelled }, 202);
  });
  app.post('/v1/sessions/:id/fork', async (c) => {
    const req = await body(c, ForkBody);
    if (typeof req === 'string') return fail(c, 400, 'BAD_REQUEST', req);
    const { id } = manager.fork(c.req.param('id'), req.at);
    if (req.prompt) await manager.message(id, req.prompt);
    return c.json({ session_id: id }, 201);
  });

  // fix runs: in this process (src/server/fixes.ts), shared with the A2A fix skill
  const fixes = opts.fixes;
  app.post('/v1/fix', async (c) => {
    const req = await body(c, FixBody);
    if (typeof req === 'string') return fail(c, 400, 'BAD_REQUEST', req);
    const { runId, done } = fixes.start({
      task: req.task,
      ...(req.test_command ? { testCommand: req.test_command } : {}),
      loaded: opts.configFor({}),
    });
    // the run's own log holds its verdict or the reason it could not start
    done.catch(() => {});
    return c.json({ run_id: runId }, 202);
  });
  const runView = (id: string) => {
    const paths = keelPaths(opts.env);
    const row = manager.log.getSession(id);
    if (!row || !['fix', 'loop'].includes(row.mode) || !recordedIn(row.cwd, manager.root))
      throw new NotFound(`no run ${id}`);
    const run = summarizeRun(manager.log, paths, row);
    const report = runReport(run);
    const running = fixes.isRunning(id) || run.code === 'running';
    const end = manager.log.events(id).findLast((e) => e.type === 'fix_end' || e.type === 'loop_end');
    return {
      run_id: run.id,
      kind: run.kind,
      title: run.title,
      status: running ? 'running' : run.verdict === 'verified' ? 'verified' : 'failed',
      code: running ? null : run.code,
      attempts: run.attempts,
      cost_usd: run.costUsd,
      branch: run.branch,
      rationale: report.rationale,
      pr_description: report.pr,
      diff: report.diff,
      started_at: run.createdAt,
      ended_at: end?.ts ?? null,
    };
  };
  app.get('/v1/runs', (c) => {
    if (otherProject(c)) return fail(c, 400, 'BAD_REQUEST', onlyThisProject);
    const runs = readRuns(manager.log, keelPaths(opts.env), { limit: 50, root: manager.root }).map((r) =>
      runView(r.id),
    );
    return c.json({ runs });
  });
  app.get('/v1/runs/:id', (c) => c.json(runView(c.req.param('id'))));

  const withMemory = async <T>(fn: (m: ReturnType<typeof openMemory>) => Promise<T>): Promise<T> => {
    const m = openMemory({ dir: opts.project, config: opts.configFor({}).config, env: opts.env });
    try {
      return await fn(m);
    } finally {
      m.close();
    }
  };
  app.get('/v1/memory/search', async (c) => {
    const q = c.req.query('q') ?? '';
    if (!q.trim()) return fail(c, 400, 'BAD_REQUEST', 'q: give a query');
    const k = Math.min(50, Math.max(1, Number(c.req.query('k') ?? 10) || 10));
    const hits = await withMemory((m) => m.memory.search(q, k));
    return c.json({ items: hits.map((h) => ({ ...h.item, score: h.score })) });
  });
  app.post('/v1/memory', async (c) => {
    const req = await body(c, MemoryAddBody);
    if (typeof req === 'string') return fail(c, 400, 'BAD_REQUEST', req);
    const added = await withMemory((m) =>
      m.memory.add({ kind: 'note', text: req.text, tags: req.tags ?? [], author: 'user' }),
    );
    return c.json({ item: added.item, folded: added.folded }, 201);
  });

  app.get('/v1/openapi.json', (c) => c.json(openApiDocument(opts.version)));
  app.get('/health', (c) => c.json({ ok: true }));
  app.get('/ready', (c) => {
    manager.log.lastSeq('');
    return c.json({ ready: true });
  });
  app.get('/metrics', (c) => {
    const counts = manager.counts();
    return c.text(metrics.render(counts), 200, { 'content-type': 'text/plain; version=0.0.4' });
  });

  mountFiles(app, opts.project);
  mountSessionSettings(app, opts);
  opts.mount?.(app);

  // the browser workspace: static files from dist/web, never a path outside it
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
    const index = join(opts.webDir, 'index.html');
    if (!existsSync(index))
      return c.text('web workspace not built: run npm run build in the keel package', 404);
    let file = resolve(opts.webDir, `.${path}`);
    if (file !== opts.webDir && !file.startsWith(opts.webDir + sep))
      return fail(c, 404, 'NOT_FOUND', 'no such file');
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
  return app;
}

/** A request's scope as a path relative to the project, or undefined when it leaves the project. */
export function scopeInside(project: string, scope: string): string | undefined {
  if (isAbsolute(scope) && !scope.startsWith(project)) return undefined;
  let real: string;
  try {
    real = realpathSync(resolve(project, scope));
  } catch {
    return undefined;
  }
  const root = realpathSync(project);
  const rel = relative(root, real);
  if (rel.startsWith('..') || isAbsolute(rel) || !statSync(real).isDirectory()) return undefined;
  return rel || '.';
}

export type { SessionEvent };
