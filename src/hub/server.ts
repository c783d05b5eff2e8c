/**
 * A running hub: the store's writes grouped into shared transactions, the streams' wake-ups, the
 * expiry sweep, and the HTTP listener. Nothing that matters lives only in this process: due times
 * and expiries are columns, so another hub process (or this one restarted) carries on from the rows.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { getRequestListener } from '@hono/node-server';
import type { Hono } from 'hono';
import type { Store } from '../store/engine.js';
import { createHub, type HubEnv } from './app.js';
import { mountApprovalRoute } from './approval-route.js';
import { fastPath } from './fast-path.js';
import { GroupCommit } from './group-commit.js';
import { HubError, HubStore, REVOKED_CHANNEL } from './hub-store.js';
import { projectAgents } from './outbox.js';
import { RateLimit } from './rate-limit.js';
import { ForeignAuditKey } from './runs-chain.js';
import { RunsStore, recordReplyIn } from './runs-store.js';
import { startTimerLoop } from './timers.js';
import { Wakeups } from './wakeups.js';
import { mountWorkflowRoutes } from './webhook-routes.js';
import { loadWorkflow } from './workflow-file.js';

export interface HubOptions {
  store: Store;
  host: string;
  port: number;
  adminToken: string;
  version: string;
  /** Requests a second per agent (bursts of twice that). */
  ratePerS?: number;
  /** Serve the trusted workflows of a project folder to one hub project (webhooks, signals, timers). */
  workflows?: HubWorkflows;
}

export interface HubWorkflows {
  /** The folder whose `.keel/workflows/NAME.yaml` the webhooks name. */
  root: string;
  /** keel's trust file: a workflow runs only as it was trusted. */
  trustFile: string;
  /** The hub project the runs belong to: their agents are this project's, their requests its messages. */
  project: string;
  /** The audit key that seals the runs' events. */
  key: Buffer;
  /** Where the secrets the workflows name are read. */
  env: NodeJS.ProcessEnv;
}

/** Audit rows a second for refused webhooks and signals (their senders hold no key; bursts of twice that). */
const WEBHOOK_AUDITS_PER_S = 50;

export interface RunningHub {
  url: string;
  port: number;
  /** Every route the app serves (method, Hono path): the OpenAPI document must list each one. */
  routes: { method: string; path: string }[];
  close(): Promise<void>;
}

/** Is `host` a loopback address (the hub listens elsewhere only with a configured admin token)? */
export function isLoopback(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '');
  return h === 'localhost' || h === '::1' || /^127\.\d+\.\d+\.\d+$/.test(h);
}

/** Start the hub; a string says why it could not listen. */
export async function startHub(opts: HubOptions): Promise<RunningHub | string> {
  const { store } = opts;
  let commits = 0;
  let committedOps = 0;
  const group = new GroupCommit(store, {
    // one batch at a time: two batches in flight lock stream and message rows in no common order and
    // deadlock (PostgreSQL retries those, but a batch retried is a batch late)
    parallel: 1,
    onCommit: (n) => {
      commits++;
      committedOps += n;
    },
  });
  const wakeups = new Wakeups(store);
  const flow = opts.workflows;
  const runs = flow && new RunsStore(store, { key: flow.key, agents: projectAgents(flow.project) });
  const hub = new HubStore(store, {
    write: (op) => group.run(op),
    onQueued: (recipient) => wakeups.notify([recipient]),
    // a reply to one of the hub's stage requests counts for its run, in the reply's own transaction
    // (a run sealed with another audit key is refused whole: the reply is not taken either)
    ...(flow
      ? {
          onReply: (tx, reply) =>
            recordReplyIn(tx, { key: flow.key, now: Date.now() }, reply).catch((err) => {
              if (err instanceof ForeignAuditKey) throw new HubError(409, err.code, err.message);
              throw err;
            }),
        }
      : {}),
  });
  await wakeups.start((agentIds) => hub.queuedAmong(agentIds));
  // a token revoked by another hub process: the keys this one checked are read again (without the hint,
  // within KEY_CACHE_MS)
  const stopRevocations = await store.listen(REVOKED_CHANNEL, () => hub.forgetKeys());
  const audits = new RateLimit(WEBHOOK_AUDITS_PER_S);
  // the requests a step wrote are new messages: wake their recipients' streams now
  const onRunMoved = (runId: string) =>
    void store
      .query<{ agent_id: string }>('SELECT DISTINCT agent_id FROM hub_stage_requests WHERE run_id = $1', [
        runId,
      ])
      .then((rows) => wakeups.notify(rows.map((r) => r.agent_id)))
      .catch(() => undefined);
  const mount =
    flow && runs
      ? (app: Hono<HubEnv>) => {
          // webhooks and signals carry no hub token: each is authenticated by its signature
          mountWorkflowRoutes(app as unknown as Hono, {
            runs,
            workflow: (name) => loadWorkflow(flow.root, name, flow.trustFile),
            env: flow.env,
            onRunMoved,
            onRefusal: (r) => {
              if (!audits.take('')) return;
              void hub
                .audit({ code: r.code, detail: `${r.type} ${r.target}: HTTP ${r.status} ${r.code}` })
                .catch(() => undefined);
            },
          });
          // an approval stage is a person's: the project token or the admin token, never an agent key
          mountApprovalRoute(app as unknown as Hono, {
            runs,
            hub,
            adminToken: opts.adminToken,
            onRunMoved,
            onRefusal: (r) => {
              // rate-limited like the webhooks': no route of the hub's own limits an agent's key here
              if (!audits.take('')) return;
              void hub
                .audit({
                  ...(r.projectId ? { projectId: r.projectId } : {}),
                  ...(r.agentId ? { agentId: r.agentId } : {}),
                  code: r.code,
                  detail: `hub_approval_refused ${r.run}: HTTP ${r.status} ${r.code}`,
                })
                .catch(() => undefined);
            },
          });
        }
      : undefined;
  const { app, hot } = createHub({
    version: opts.version,
    hub,
    adminToken: opts.adminToken,
    rate: new RateLimit(opts.ratePerS ?? 1000),
    wakeups,
    ...(mount ? { mount } : {}),
    metrics: () =>
      [
        '# HELP keel_hub_commits_total Transactions the hub committed (each carries the writes of several requests).',
        '# TYPE keel_hub_commits_total counter',
        `keel_hub_commits_total ${commits}`,
        '# HELP keel_hub_committed_ops_total Writes those transactions carried.',
        '# TYPE keel_hub_committed_ops_total counter',
        `keel_hub_committed_ops_total ${committedOps}`,
        '',
      ].join('\n'),
  });
  // the hot routes of every message cycle straight from node:http, the rest (and anything unusual) through hono
  const viaHono = getRequestListener(app.fetch, { hostname: opts.host });
  const viaFast = fastPath(hot);
  const server = createServer((req, res) => {
    if (!viaFast(req, res)) void viaHono(req, res);
  });
  server.listen(opts.port, opts.host);
  const failed = await new Promise<string | undefined>((resolve) => {
    server.once('listening', () => resolve(undefined));
    server.once('error', (err: NodeJS.ErrnoException) =>
      resolve(
        err.code === 'EADDRINUSE'
          ? `${opts.host}:${opts.port} is in use: choose another with --listen HOST:PORT`
          : `cannot listen on ${opts.host}:${opts.port}: ${err.message}`,
      ),
    );
  });
  if (failed) {
    await stopRevocations();
    await wakeups.close();
    return failed;
  }
  // a stage's timeout is a row; this loop only looks at the clock
  const stopTimers = flow ? startTimerLoop(store, flow.key) : async () => undefined;
  // marking expired rows is bookkeeping: every read already treats a message past its TTL as expired
  const sweep = setInterval(() => void hub.expire().catch(() => undefined), 1000);
  sweep.unref();
  const port = (server.address() as AddressInfo).port;
  const host = opts.host.includes(':') ? `[${opts.host}]` : opts.host;
  return {
    url: `http://${host}:${port}`,
    port,
    // middleware is mounted for every method ('ALL'); a route answers one
    routes: app.routes.filter((r) => r.method !== 'ALL').map((r) => ({ method: r.method, path: r.path })),
    async close() {
      clearInterval(sweep);
      await stopTimers();
      server.close();
      // open event streams never end by themselves
      if ('closeAllConnections' in server) server.closeAllConnections();
      await group.drain();
      await stopRevocations();
      await wakeups.close();
    },
  };
}
