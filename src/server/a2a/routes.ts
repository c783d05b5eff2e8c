/**
 * keel's A2A endpoint on the serve app: the agent card at /.well-known/agent-card.json and the
 * JSON-RPC binding at POST /a2a (SSE for the streaming methods), with the SDK's request handler.
 * The SDK ships an express adapter; this is the same wiring for hono.
 */

import { timingSafeEqual } from 'node:crypto';
import { realpathSync } from 'node:fs';
import { A2A_VERSION_HEADER, AgentCard } from '@a2a-js/sdk';
import {
  DefaultRequestHandler,
  defaultServerCallContextBuilder,
  JsonRpcTransportHandler,
  type TaskStore,
  validateVersion,
} from '@a2a-js/sdk/server';
import type { Hono } from 'hono';
import { count } from '../../agent/terminal.js';
import type { LoadedConfig } from '../../config/load.js';
import { keelVersion } from '../../config/package-root.js';
import type { FixRuns } from '../fixes.js';
import type { SessionManager } from '../sessions.js';
import { agentCard } from './card.js';
import { KeelExecutor, type StartFixFn, type StartSessionFn } from './executor.js';
import { startFixWith } from './fix-skill.js';
import { startWithManager } from './manager-start.js';
import { SqliteTaskStore } from './task-store.js';

export interface A2aOptions {
  /** The bearer token of the serve API; every JSON-RPC call needs it. */
  token: string;
  /** The server's own origin (http://127.0.0.1:PORT), known once it listens. */
  origin(): string;
  /** keel's version, for the card. */
  version: string;
  start: StartSessionFn;
  fix: StartFixFn;
  /** Where tasks are kept (keel's database for `keel serve`, so they outlive a restart). */
  store: TaskStore;
}

/** Mount the agent card and the JSON-RPC endpoint on `app`. */
export function mountA2a(app: Hono, opts: A2aOptions): void {
  const executor = new KeelExecutor(opts.start, opts.fix, opts.store);
  let handler: DefaultRequestHandler | undefined;
  let transport: JsonRpcTransportHandler | undefined;
  // the card names the server's own URL, which is known only once it listens (port 0 picks one)
  const ready = () => {
    if (!handler || !transport) {
      handler = new DefaultRequestHandler(
        agentCard(`${opts.origin()}/a2a`, opts.version),
        opts.store,
        executor,
      );
      transport = new JsonRpcTransportHandler(handler);
    }
    return { handler, transport };
  };

  app.get('/.well-known/agent-card.json', async (c) => {
    const card = await ready().handler.getAgentCard();
    return c.json(AgentCard.toJSON(card) as object, 200, { 'Cache-Control': 'no-cache' });
  });

  app.post('/a2a', async (c) => {
    if (!bearerOk(c.req.header('authorization'), opts.token))
      return c.json(rpcError(null, -32001, 'a bearer token is required: Authorization: Bearer TOKEN'), 401, {
        'WWW-Authenticate': 'Bearer',
      });
    let body: unknown;
    try {
      body = await c.req.json();
    } catch {
      return c.json(rpcError(null, -32700, 'the body is not JSON'), 400);
    }
    const id = idOf(body);
    const { handler, transport } = ready();
    const headers: Record<string, string> = {};
    c.req.raw.headers.forEach((value, key) => {
      headers[key] = value;
    });
    const requestedVersion = c.req.header(A2A_VERSION_HEADER) ?? undefined;
    const context = defaultServerCallContextBuilder({
      extensions: undefined,
      user: undefined,
      headers,
      ...(requestedVersion ? { requestedVersion } : {}),
    });
    let result: Awaited<ReturnType<JsonRpcTransportHandler['handle']>>;
    try {
      validateVersion(context.requestedVersion, await handler.getAgentCard(), 'JSONRPC');
      result = await transport.handle(body as Record<string, unknown>, context);
    } catch (err) {
      return c.json({ jsonrpc: '2.0', id, error: JsonRpcTransportHandler.mapToJSONRPCError(err) }, 200);
    }
    if (!isStream(result)) return c.json(result, 200);
    const iterator = result[Symbol.asyncIterator]();
    const encoder = new TextEncoder();
    const stream = new ReadableStream<Uint8Array>({
      async pull(controller) {
        try {
          const next = await iterator.next();
          if (next.done) return controller.close();
          controller.enqueue(encoder.encode(`data: ${JSON.stringify(next.value)}\n\n`));
        } catch (err) {
          const error = { jsonrpc: '2.0', id, error: JsonRpcTransportHandler.mapToJSONRPCError(err) };
          controller.enqueue(encoder.encode(`event: error\ndata: ${JSON.stringify(error)}\n\n`));
          controller.close();
        }
      },
      async cancel() {
        await iterator.return?.(undefined);
      },
    });
    return new Response(stream, {
      status: 200,
      headers: {
        'Content-Type': 'text/event-stream',
        'Cache-Control': 'no-cache',
        Connection: 'keep-alive',
        'X-Accel-Buffering': 'no',
      },
    });
  });
}

function bearerOk(header: string | undefined, token: string): boolean {
  const given = Buffer.from(header?.replace(/^Bearer\s+/i, '') ?? '');
  const wanted = Buffer.from(token);
  return given.length === wanted.length && timingSafeEqual(given, wanted);
}

function idOf(body: unknown): string | number | null {
  const id = (body as { id?: unknown } | null)?.id;
  return typeof id === 'string' || typeof id === 'number' ? id : null;
}

function rpcError(id: string | number | null, code: number, message: string) {
  return { jsonrpc: '2.0', id, error: { code, message } };
}

function isStream<T>(value: T | AsyncGenerator<T>): value is AsyncGenerator<T> {
  return typeof (value as { [Symbol.asyncIterator]?: unknown })[Symbol.asyncIterator] === 'function';
}

/**
 * The serve app's A2A endpoint: tasks run as sessions of its manager and fix runs of its FixRuns,
 * behind its token, kept in keel's database. Tasks a stopped server left unfinished fail now.
 */
export function mountServeA2a(
  app: Hono,
  deps: {
    manager: SessionManager;
    fixes: FixRuns;
    project: string;
    token: string;
    port(): number;
    configFor(): LoadedConfig;
  },
): void {
  const store = new SqliteTaskStore(deps.manager.db, realpathSync(deps.project));
  const failed = store.recover();
  if (failed)
    process.stderr.write(
      `keel serve: ${count(failed, 'A2A task')} left unfinished by a stopped server ${failed === 1 ? 'is' : 'are'} marked failed\n`,
    );
  mountA2a(app, {
    token: deps.token,
    origin: () => `http://127.0.0.1:${deps.port()}`,
    version: keelVersion(),
    start: startWithManager(deps.manager, deps.configFor),
    fix: startFixWith(deps.fixes, deps.configFor),
    store,
  });
}
