/**
 * The hub tools, one catalog for every face: a keel session offers them (hubTools), `keel mcp` serves
 * them (mcp/hub-tools.ts), and each names the `keel hub` verb and flags that do the same from a shell.
 * They exist only when the caller's environment names a hub: KEEL_HUB_URL, KEEL_HUB_TOKEN and
 * KEEL_AGENT_NAME (no config key: a project's config must never point a session at a hub). Sending and
 * replying hand the session's words to another agent, so they are `exec` (like a2a: not in read-only
 * modes, asked for in attended ones); reading the inbox, the peers and awaiting a reply are `read`.
 */
import { createHash, randomUUID } from 'node:crypto';
import * as z from 'zod';
import { keelPaths } from '../config/paths.js';
import type { Effect } from '../policy/effects.js';
import { agentKey, HubCallError, hubFetch } from './hub-client.js';
import { type Tool, type ToolDeps, ToolError, type ToolFactory } from './types.js';

/** Who this process is on which hub. */
export interface HubCaller {
  url: string;
  projectToken: string;
  name: string;
  stateDir: string;
}

/** The hub the environment names, or null unless all three variables are set. */
export function hubCaller(env: NodeJS.ProcessEnv): HubCaller | null {
  const url = env.KEEL_HUB_URL?.trim();
  const projectToken = env.KEEL_HUB_TOKEN?.trim();
  const name = env.KEEL_AGENT_NAME?.trim();
  if (!url || !projectToken || !name) return null;
  return { url: url.replace(/\/+$/, ''), projectToken, name, stateDir: keelPaths(env).stateDir };
}

/** The longest wait one call may hold (the hub's own long-poll bound). */
export const MAX_WAIT_S = 60;

const id = z.string().min(1).max(200).describe('message id');
const text = z
  .string()
  .min(1)
  .max(256 * 1024);

export interface HubToolSpec<S extends z.ZodObject = z.ZodObject> {
  name: string;
  description: string;
  effect: Effect;
  schema: S;
  /** The `keel hub` verb doing the same, and the flag (or `<positional>`) for each argument. */
  cli: { verb: string; args: Record<keyof z.infer<S> & string, string> };
  /**
   * Running it twice with the same arguments gives the first run's result back: hub_send with its
   * idempotency key (a session derives one from its id and the call's when the model gives none),
   * hub_reply (the hub keys a reply by the message it answers). A resumed session runs it again.
   */
  idempotent?: true;
  run(args: z.infer<S>, caller: HubCaller, signal?: AbortSignal): Promise<Record<string, unknown>>;
}

/** One registration per caller and process: concurrent first calls share it. */
const keys = new WeakMap<HubCaller, Promise<string>>();

async function call(caller: HubCaller, method: string, path: string, body?: unknown) {
  let pending = keys.get(caller);
  if (!pending) {
    pending = agentKey(caller);
    keys.set(caller, pending);
    pending.catch(() => keys.delete(caller));
  }
  const key = await pending;
  return (await hubFetch(caller.url, key, method, path, body)).json;
}

/** Wait up to `seconds` for the reply to message `id`; a reply found is acked (it is in hand). */
async function awaitReply(caller: HubCaller, id: string, seconds: number): Promise<Record<string, unknown>> {
  const until = Date.now() + Math.min(seconds, MAX_WAIT_S) * 1000;
  for (;;) {
    const left = Math.max(0, Math.ceil((until - Date.now()) / 1000));
    const found = await call(caller, 'GET', `/v1/messages/${encodeURIComponent(id)}?wait=${left}`);
    if (found.reply) {
      await call(caller, 'POST', `/v1/messages/${encodeURIComponent(found.reply.id)}/ack`);
      return {
        id,
        state: found.message.state,
        reply: { id: found.reply.id, from: found.reply.from, text: found.reply.body },
      };
    }
    const open = ['queued', 'delivered', 'acked'].includes(found.message.state);
    if (!open || Date.now() >= until)
      return { id, state: found.message.state, reply: null, ...(open ? { timed_out: true } : {}) };
  }
}

const peers: HubToolSpec = {
  name: 'hub_peers',
  description: 'List the agents on the hub (name, role, online).',
  effect: 'read',
  schema: z.object({}),
  cli: { verb: 'peers', args: {} },
  async run(_args, caller) {
    const json = await call(caller, 'GET', '/v1/agents');
    return { agents: json.agents };
  },
};

const sendSchema = z.object({
  to: z.string().min(1).max(200).describe('agent name'),
  text: text.describe('the request, complete in itself'),
  idempotency_key: z.string().min(1).max(200).optional().describe('same key: same message, never a second'),
  wait_s: z.number().int().min(0).max(MAX_WAIT_S).optional().describe('wait this long for the reply'),
});
const send: HubToolSpec<typeof sendSchema> = {
  name: 'hub_send',
  description: 'Send a request to another agent on the hub; returns its id (and the reply if wait_s).',
  effect: 'exec',
  schema: sendSchema,
  idempotent: true,
  cli: {
    verb: 'send',
    args: { to: '--to', text: '<text...>', idempotency_key: '--idempotency-key', wait_s: '--wait' },
  },
  async run(args, caller) {
    const json = await call(caller, 'POST', '/v1/messages', {
      to: args.to,
      body: args.text,
      idempotency_key: args.idempotency_key ?? randomUUID(),
    });
    const sent = { id: json.message.id as string, to: args.to, created: json.created as boolean };
    if (!args.wait_s) return sent;
    return { ...sent, ...(await awaitReply(caller, sent.id, args.wait_s)) };
  },
};

const inbox: HubToolSpec = {
  name: 'hub_inbox',
  description: 'Messages sent to you that are not answered yet.',
  effect: 'read',
  schema: z.object({}),
  cli: { verb: 'inbox', args: {} },
  async run(_args, caller) {
    const json = await call(caller, 'GET', '/v1/inbox');
    return {
      messages: (json.messages as Array<Record<string, unknown>>).map((m) => ({
        id: m.id,
        from: m.from,
        text: m.body,
        ...(m.reply_to ? { reply_to: m.reply_to } : {}),
      })),
    };
  },
};

const replySchema = z.object({ id, text: text.describe('your answer') });
const reply: HubToolSpec<typeof replySchema> = {
  name: 'hub_reply',
  description: 'Answer a message from your inbox.',
  effect: 'exec',
  schema: replySchema,
  idempotent: true,
  cli: { verb: 'reply', args: { id: '<id>', text: '<text...>' } },
  async run(args, caller) {
    const json = await call(caller, 'POST', `/v1/messages/${encodeURIComponent(args.id)}/reply`, {
      body: args.text,
    });
    return { id: json.message.id, reply_to: args.id };
  },
};

const awaitSchema = z.object({
  id: id.describe('id of a message you sent'),
  timeout_s: z.number().int().min(0).max(MAX_WAIT_S).optional().describe(`at most ${MAX_WAIT_S} (default)`),
});
const awaitTool: HubToolSpec<typeof awaitSchema> = {
  name: 'hub_await',
  description: 'Wait for the reply to a message you sent.',
  effect: 'read',
  schema: awaitSchema,
  cli: { verb: 'await', args: { id: '<id>', timeout_s: '--timeout' } },
  run: (args, caller) => awaitReply(caller, args.id, args.timeout_s ?? MAX_WAIT_S),
};

/** Every hub tool, in the order they are offered. */
export const HUB_TOOLS = [peers, send, inbox, reply, awaitTool] as unknown as HubToolSpec[];

/** A hub refusal or failure as one line for the model or an MCP client. */
export function hubErrorText(err: unknown): string {
  if (err instanceof HubCallError) return `the hub refused (${err.code}): ${err.message}`;
  return (err as Error).message;
}

/**
 * hub_send without an idempotency key, in a session: the key is derived from the session id and keel's
 * id of the call, so a resumed session that runs the call again gets the original message back instead
 * of sending it twice (the same key and request: the hub answers with the first).
 */
export function sessionKey(sessionId: string, callId: string): string {
  return `keel-call-${createHash('sha256').update(`${sessionId}\0${callId}`).digest('hex').slice(0, 40)}`;
}

function withSessionKey(
  spec: HubToolSpec,
  args: unknown,
  sessionId: string,
  callId: string | undefined,
): never {
  const a = args as Record<string, unknown>;
  if (spec.name !== 'hub_send' || !callId || a.idempotency_key !== undefined) return args as never;
  return { ...a, idempotency_key: sessionKey(sessionId, callId) } as never;
}

/** The session's hub tools: none unless the environment names a hub. */
export const hubTools: ToolFactory = (deps: ToolDeps): Tool[] => {
  const caller = hubCaller(deps.env);
  if (!caller) return [];
  return HUB_TOOLS.map(
    (spec): Tool => ({
      name: spec.name,
      description: spec.description,
      effect: spec.effect,
      schema: spec.schema,
      // a send leaves the machine: asked about in attended sessions, as a command outside the sandbox is
      ...(spec.effect === 'exec' ? { remote: true } : {}),
      ...(spec.idempotent ? { resume: 'idempotent' as const } : {}),
      async execute(args, ctx) {
        try {
          return {
            output: JSON.stringify(
              await spec.run(withSessionKey(spec, args, deps.sessionId, ctx.callId), caller),
            ),
          };
        } catch (err) {
          throw new ToolError(hubErrorText(err));
        }
      },
    }),
  );
};
