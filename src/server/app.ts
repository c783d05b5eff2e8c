/**
 * The HTTP face of keel: the app, its middleware (metrics, the token guard, the body limit) and its
 * errors in the API's shape. Each served project has an app of its own with the route groups mounted
 * on it: sessions (session-routes.ts), fix runs (run-routes.ts), memory (memory-routes.ts), files
 * (files.ts), batch runs and the hub view; the server's app picks one per request by `?project=`
 * (projects.ts) and serves the list of projects, the probes and the browser workspace (static.ts). The
 * routes and their body schemas are in api.ts, the OpenAPI document generated from them.
 */
import { Hono, type MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import type { SessionEvent } from '../agent/events.js';
import { ConfigError, type LoadedConfig } from '../config/load.js';
import { isPublic, MAX_BODY_BYTES, openApiDocument } from './api.js';
import { mountBatches, type TeamStore } from './batches.js';
import { mountFiles } from './files.js';
import type { FixRuns } from './fixes.js';
import { fail } from './http.js';
import { type HubPageOptions, mountHub } from './hub.js';
import { mountMemory } from './memory-routes.js';
import type { Metrics } from './metrics.js';
import { mountProjects, type ServedProject } from './projects.js';
import { mountRuns } from './run-routes.js';
import { guard } from './security.js';
import { mountSessions } from './session-routes.js';
import { mountSessionSettings } from './session-settings.js';
import { Conflict, NotFound, type SessionManager } from './sessions.js';
import { mountWorkspace } from './static.js';

export { isPublic, MAX_BODY_BYTES, openApiDocument, ROUTES } from './api.js';
export { scopeInside } from './session-routes.js';

/** What every route group of one project reads: the server's shared parts and that project's own. */
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
  /** Fix runs of this project (`POST /v1/fix`, the A2A fix skill). */
  fixes: FixRuns;
  metrics: Metrics;
  webDir: string;
  /** The team store batch runs are read from (`store` in the config); without it, no batch is listed. */
  teamStore?: TeamStore;
  /** The hub project in that store the page shows (`hub_project` in the user's config). */
  hubProject?: string;
  /** How the page's approvals of workflow stages are sealed and signed (server/hub.ts). */
  hubPage?: HubPageOptions;
}

/** The server: its shared parts, the projects it serves (the first is the default) and more routes. */
export type ServerOptions = Omit<AppOptions, 'project' | 'configFor' | 'manager' | 'fixes'> & {
  projects: ServedProject[];
  /** More routes (the A2A endpoint, the default project's) mounted on the same guarded app. */
  mount?(app: Hono): void;
};

/** Count each request under the route that answered it (a project's route: in the project's app). */
function timed(metrics: Metrics, skip?: string): MiddlewareHandler {
  return async (c, next) => {
    const started = process.hrtime.bigint();
    await next();
    const route = c.req.routePath || 'unmatched';
    if (route === skip) return;
    metrics.request(route, c.res.status, Number(process.hrtime.bigint() - started) / 1e9);
  };
}

/** Errors in the API's shape: an unknown id is a 404, a conflict a 409, a bad model or profile a 400. */
function answerErrors(app: Hono): void {
  // an unknown route answers in the API's own shape, whatever the method (GETs fall to the workspace)
  app.notFound((c) => fail(c, 404, 'NOT_FOUND', `no route ${c.req.method} ${new URL(c.req.url).pathname}`));
  app.onError((err, c) => {
    if (err instanceof NotFound) return fail(c, 404, 'NOT_FOUND', err.message);
    if (err instanceof Conflict) return fail(c, 409, 'CONFLICT', err.message);
    if (err instanceof ConfigError) return fail(c, 400, 'CONFIG_ERROR', err.message);
    const message = (err instanceof Error ? err.message : String(err)).split('\n')[0] ?? 'error';
    return c.json({ code: 'INTERNAL', error: message }, 500);
  });
}

/**
 * One project's API: its sessions, runs, memory, files, batch runs and the hub view. It is reached only
 * through the server's app (createApp), which has checked the token, the body's size and the project's name.
 */
function projectApp(opts: AppOptions): Hono {
  const app = new Hono();
  app.use('*', timed(opts.metrics));
  answerErrors(app);
  mountSessions(app, opts);
  mountRuns(app, opts);
  mountMemory(app, opts);
  if (opts.teamStore) mountBatches(app, opts.teamStore, opts.manager.root);
  else app.get('/v1/batches', (c) => c.json({ batches: [] }));
  mountHub(app, opts.teamStore, opts.hubProject, opts.hubPage);
  mountFiles(app, opts.project);
  mountSessionSettings(app, opts);
  return app;
}

export function createApp(opts: ServerOptions): Hono {
  const { metrics, projects } = opts;
  const app = new Hono();
  // a project's routes are counted by the project's app (projectApp), not as the dispatch
  app.use('*', timed(metrics, '/v1/*'));
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
  answerErrors(app);

  const apps = new Map(projects.map((p) => [p.name, projectApp({ ...opts, ...p })]));
  mountProjects(app, projects, apps);
  app.get('/v1/openapi.json', (c) => c.json(openApiDocument(opts.version)));
  app.get('/health', (c) => c.json({ ok: true }));
  app.get('/ready', (c) => {
    projects[0]?.manager.log.lastSeq('');
    return c.json({ ready: true });
  });
  app.get('/metrics', (c) => {
    const counts = { running: 0, waiting: 0 };
    for (const p of projects) {
      const n = p.manager.counts();
      counts.running += n.running;
      counts.waiting += n.waiting;
    }
    return c.text(metrics.render(counts), 200, { 'content-type': 'text/plain; version=0.0.4' });
  });
  opts.mount?.(app);

  // the browser workspace: static files from dist/web, never a path outside it
  mountWorkspace(app, opts.webDir);
  return app;
}

export type { SessionEvent };
