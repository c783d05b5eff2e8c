/**
 * `keel serve`: the sessions of this project (or of the projects `--project` names, one at a time per
 * request) over HTTP (src/server/), on loopback unless a token is configured. Prints where it listens and the token; stops cleanly (every turn's log complete) on
 * Ctrl+C or SIGTERM.
 */
import { randomBytes } from 'node:crypto';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import { serve } from '@hono/node-server';
import { openRuntime } from '../agent/runtime.js';
import { sessionTools } from '../agent/session-tools.js';
import { ConfigError, loadConfig } from '../config/load.js';
import { packageRoot } from '../config/package-root.js';
import { keelPaths } from '../config/paths.js';
import { LedgerStoreError, openRunLedger, PER_SESSION, type RunLedger } from '../model/open-ledger.js';
import { mountServeA2a } from '../server/a2a/routes.js';
import { createApp } from '../server/app.js';
import { TeamStore } from '../server/batches.js';
import { FixRuns } from '../server/fixes.js';
import { Metrics } from '../server/metrics.js';
import { projectNames, type ServedProject } from '../server/projects.js';
import { isLoopback } from '../server/security.js';
import { SessionManager } from '../server/sessions.js';
import { storeTarget } from '../store/engine.js';
import { EXIT } from '../term/exit-codes.js';
import { inertLine } from '../term/inert.js';
import { type CommonFlags, flagLayer } from '../term/options.js';
import { reportError } from './errors.js';
import { hubAuditKey } from './hub-audit-key.js';
import { servedFolders } from './serve-projects.js';

export interface ServeFlags extends CommonFlags {
  listen?: string;
  approvalTimeout?: number;
  /** `--project DIR`, repeatable: the projects served (the first is the default); none: the workspace. */
  project?: string[];
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
  let folders: string[];
  let configs: Array<ReturnType<typeof loadConfig>>;
  try {
    folders = servedFolders(flags);
    // each project's config is read now so that a mistake is reported before the server listens
    configs = folders.map((cwd) => loadConfig({ cwd, flags: flagLayer(flags) }));
  } catch (err) {
    if (err instanceof ConfigError) return reportError(flags.json, 'CONFIG_ERROR', err.message);
    throw err;
  }
  const project = folders[0] as string;
  const loaded = configs[0] as ReturnType<typeof loadConfig>;
  // every model call of the server's sessions and fix runs in the team store's ledger: opened before it listens
  let runLedger: RunLedger;
  try {
    runLedger = await openRunLedger(loaded.config, PER_SESSION, { env });
  } catch (err) {
    if (err instanceof LedgerStoreError) return reportError(flags.json, 'ENVIRONMENT_ERROR', err.message);
    throw err;
  }
  const metrics = new Metrics();
  // one runtime for the server's life: every session, fix run and A2A task of every project runs in it
  const runtime = openRuntime(env, { calls: runLedger.calls });
  const names = projectNames(folders);
  // every session (and A2A task) gets what a one-shot session of its mode and config gets: subagents, the
  // code graph, memory, MCP servers, A2A agents and the hub, each loaded only when configured or named
  const tools = await sessionTools((line) =>
    process.stderr.write(`keel serve: warning: ${inertLine(line)}\n`),
  );
  // each project its own sessions and fix runs: one project's ids are unknown to another's
  const projects: ServedProject[] = folders.map((cwd, i) => {
    const configFor = (request: { model?: string; profile?: string } = {}) =>
      loadConfig({ cwd, flags: flagLayer({ ...flags, ...request }) });
    const fixes = new FixRuns({
      project: cwd,
      runtime,
      approvalTimeoutS: flags.approvalTimeout ?? 600,
      onEvent: (event) => metrics.event(event),
    });
    const manager = new SessionManager({
      cwd,
      runtime,
      approvalTimeoutS: flags.approvalTimeout ?? 600,
      tools,
      onEvent: (event) => metrics.event(event),
      configFor: () => configFor(),
      // a build's fix run works in its tests' worktree: its log streams here as a fix run's does
      ours: (id) => fixes.builds.get(id) !== undefined,
    });
    return { name: names[i] as string, project: cwd, manager, fixes, configFor };
  });
  const { manager, fixes } = projects[0] as ServedProject;
  // batch runs are read from the team store the user's config names (a project's config may not name one)
  let teamStore: TeamStore | undefined;
  // the hub project the page shows: named by the user's own config (a project's config may not)
  const hubProject = loaded.config.hub_project;
  try {
    teamStore = new TeamStore(storeTarget(loaded.config.store, keelPaths(env).db));
  } catch (err) {
    process.stderr.write(
      `keel serve: warning: no batch runs on the page: ${inertLine((err as Error).message)}\n`,
    );
  }
  let port = listen.port;
  const app = createApp({
    version,
    projects,
    env,
    token,
    listenHost: listen.host,
    port: () => port,
    metrics,
    ...(teamStore ? { teamStore } : {}),
    ...(hubProject ? { hubProject } : {}),
    hubPage: {
      auditKey: () => hubAuditKey(env, loaded.config.hub_audit_key_file).key,
      person: `user ${userInfo().username}`,
    },
    webDir: join(packageRoot(), 'dist', 'web'),
    // the A2A endpoint: tasks are sessions of the default project's manager, behind the same token
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
    await Promise.all(projects.map((p) => p.manager.close()));
    runtime.close();
    await runLedger.close();
    return reportError(flags.json, 'ENVIRONMENT_ERROR', ready);
  }
  const address = server.address();
  if (address && typeof address === 'object') port = address.port;
  const host = listen.host.includes(':') ? `[${listen.host}]` : listen.host;
  const url = `http://${host}:${port}/`;
  if (flags.json) {
    const served = projects.map((p, i) => ({ name: p.name, path: p.project, default: i === 0 }));
    process.stdout.write(`${JSON.stringify({ url, port, token, projects: served })}\n`);
  }
  if (projects.length > 1)
    for (const [i, p] of projects.entries())
      process.stderr.write(
        `keel serve: project ${inertLine(p.name)}: ${inertLine(p.project)}${i === 0 ? ' (the default)' : ''}\n`,
      );
  process.stderr.write(`keel serve: listening on ${url}#token=${token}\n`);
  await new Promise<void>((resolve) => {
    const stop = () => resolve();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  process.stderr.write('keel serve: stopping (cancelling running turns)\n');
  server.close();
  await Promise.all(projects.flatMap((p) => [p.manager.close(), p.fixes.close()]));
  // an open event stream (a browser tab) never ends by itself: end it, or the process never exits
  if ('closeAllConnections' in server) server.closeAllConnections();
  await teamStore?.close();
  runtime.close();
  await runLedger.close();
  return EXIT.ok;
}
