/**
 * `keel serve`: the sessions of this project over HTTP (src/server/), on loopback unless a token is
 * configured. Prints where it listens and the token; stops cleanly (every turn's log complete) on
 * Ctrl+C or SIGTERM.
 */
import { randomBytes } from 'node:crypto';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import { serve } from '@hono/node-server';
import { openRuntime } from '../agent/runtime.js';
import { ConfigError, loadConfig } from '../config/load.js';
import { packageRoot } from '../config/package-root.js';
import { keelPaths } from '../config/paths.js';
import { graphTools } from '../graph/tools.js';
import { memoryTools } from '../memory/tools.js';
import { LedgerStoreError, openRunLedger, PER_SESSION, type RunLedger } from '../model/open-ledger.js';
import { mountServeA2a } from '../server/a2a/routes.js';
import { createApp } from '../server/app.js';
import { TeamStore } from '../server/batches.js';
import { FixRuns } from '../server/fixes.js';
import { Metrics } from '../server/metrics.js';
import { isLoopback } from '../server/security.js';
import { SessionManager } from '../server/sessions.js';
import { storeTarget } from '../store/engine.js';
import { EXIT } from '../term/exit-codes.js';
import { inertLine } from '../term/inert.js';
import { type CommonFlags, existingWorkspace, flagLayer } from '../term/options.js';
import { a2aTools } from '../tools/a2a.js';
import { mcpTools } from '../tools/mcp.js';
import { reportError } from './errors.js';
import { hubAuditKey } from './hub-audit-key.js';

export interface ServeFlags extends CommonFlags {
  listen?: string;
  approvalTimeout?: number;
}

/** `HOST:PORT` (IPv6 in brackets), or an error naming what is wrong. */
export function parseListen(value: string): { host: string; port: number } | string {
  const m = /^(\[[0-9a-fA-F:]+\]|[^:[\]]+):(\d{1,5})$/.exec(value);
  if (!m) return `--listen ${JSON.stringify(value)}: give HOST:PORT, e.g. 127.0.0.1:7430`;
  const port = Number(m[2]);
  if (port > 65535) return `--listen ${value}: port ${port} is past 65535`;
  return { host: (m[1] as string).replace(/^\[|\]$/g, ''), port };
}

export async function runServe(flags: ServeFlags, version: string): Promise<number> {
  const listen = parseListen(flags.listen ?? '127.0.0.1:7430');
  if (typeof listen === 'string') return reportError(flags.json, 'CONFIG_ERROR', listen);
  const env = process.env;
  const loopback = isLoopback(listen.host);
  const configured = env.KEEL_SERVE_TOKEN?.trim();
  if (!loopback && !configured)
    return reportError(
      flags.json,
      'CONFIG_ERROR',
      `--listen ${listen.host} is not a loopback address: set KEEL_SERVE_TOKEN first (every request carries the token, and off loopback it must be one you set)`,
    );
  const token = configured || randomBytes(24).toString('base64url');
  let project: string;
  let loaded: ReturnType<typeof loadConfig>;
  try {
    project = existingWorkspace(flags);
    // the config is read now so that a mistake is reported before the server listens
    loaded = loadConfig({ cwd: project, flags: flagLayer(flags) });
  } catch (err) {
    if (err instanceof ConfigError) return reportError(flags.json, 'CONFIG_ERROR', err.message);
    throw err;
  }
  // every model call of the server's sessions and fix runs in the team store's ledger: opened before it listens
  let runLedger: RunLedger;
  try {
    runLedger = await openRunLedger(loaded.config, PER_SESSION, { env });
  } catch (err) {
    if (err instanceof LedgerStoreError) return reportError(flags.json, 'ENVIRONMENT_ERROR', err.message);
    throw err;
  }
  const metrics = new Metrics();
  // one runtime for the server's life: every session, fix run and A2A task runs in it
  const runtime = openRuntime(env, { calls: runLedger.calls });
  const manager = new SessionManager({
    cwd: project,
    runtime,
    approvalTimeoutS: flags.approvalTimeout ?? 600,
    tools: [
      graphTools,
      memoryTools,
      mcpTools((line) => process.stderr.write(`keel serve: warning: ${inertLine(line)}\n`)),
      a2aTools,
    ],
    onEvent: (event) => metrics.event(event),
    configFor: () => loadConfig({ cwd: project, flags: flagLayer(flags) }),
    // a build's fix run works in its tests' worktree: its log streams here as a fix run's does
    ours: (id) => fixes.builds.get(id) !== undefined,
  });
  const fixes = new FixRuns({
    project,
    runtime,
    approvalTimeoutS: flags.approvalTimeout ?? 600,
    onEvent: (event) => metrics.event(event),
  });
  // batch runs are read from the team store the user's config names (a project's config may not name one)
  let teamStore: TeamStore | undefined;
  // the hub project the page shows: named by the user's own config (a project's config may not)
  const hubProject = loaded.config.hub_project;
  try {
    teamStore = new TeamStore(
      storeTarget(loadConfig({ cwd: project, flags: flagLayer(flags) }).config.store, keelPaths(env).db),
    );
  } catch (err) {
    process.stderr.write(
      `keel serve: warning: no batch runs on the page: ${inertLine((err as Error).message)}\n`,
    );
  }
  let port = listen.port;
  const app = createApp({
    version,
    project,
    env,
    token,
    listenHost: listen.host,
    port: () => port,
    configFor: (request) => loadConfig({ cwd: project, flags: flagLayer({ ...flags, ...request }) }),
    manager,
    fixes,
    metrics,
    ...(teamStore ? { teamStore } : {}),
    ...(hubProject ? { hubProject } : {}),
    hubPage: {
      auditKey: () => hubAuditKey(env, loaded.config.hub_audit_key_file).key,
      person: `user ${userInfo().username}`,
    },
    webDir: join(packageRoot(), 'dist', 'web'),
    // the A2A endpoint: tasks are sessions of the same manager, behind the same token
    mount: (app) =>
      mountServeA2a(app, {
        manager,
        fixes,
        project,
        token,
        port: () => port,
        configFor: () => loadConfig({ cwd: project, flags: flagLayer(flags) }),
      }),
  });
  const server = serve({ fetch: app.fetch, hostname: listen.host, port: listen.port });
  const ready = await new Promise<string | undefined>((resolve) => {
    server.once('listening', () => resolve(undefined));
    server.once('error', (err: NodeJS.ErrnoException) =>
      resolve(
        err.code === 'EADDRINUSE'
          ? `${listen.host}:${listen.port} is in use: choose another with --listen HOST:PORT`
          : `cannot listen on ${listen.host}:${listen.port}: ${err.message}`,
      ),
    );
  });
  if (ready) {
    await manager.close();
    runtime.close();
    await runLedger.close();
    return reportError(flags.json, 'ENVIRONMENT_ERROR', ready);
  }
  const address = server.address();
  if (address && typeof address === 'object') port = address.port;
  const host = listen.host.includes(':') ? `[${listen.host}]` : listen.host;
  const url = `http://${host}:${port}/`;
  if (flags.json) process.stdout.write(`${JSON.stringify({ url, port, token })}\n`);
  process.stderr.write(`keel serve: listening on ${url}#token=${token}\n`);
  await new Promise<void>((resolve) => {
    const stop = () => resolve();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  process.stderr.write('keel serve: stopping (cancelling running turns)\n');
  server.close();
  await Promise.all([manager.close(), fixes.close()]);
  // an open event stream (a browser tab) never ends by itself: end it, or the process never exits
  if ('closeAllConnections' in server) server.closeAllConnections();
  await teamStore?.close();
  runtime.close();
  await runLedger.close();
  return EXIT.ok;
}
