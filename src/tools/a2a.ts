/**
 * `a2a__<name>`: a remote Agent2Agent agent from `[[a2a_agents]]` as a tool. A call fetches the
 * agent's card, sends the model's message with the SDK's client, waits for the task to end and
 * returns the agent's text. Effect `exec`: it hands the session's words to another program, so the
 * gate treats it like a command (ask mode does not offer it; hooks and approvals apply).
 */
import { randomUUID } from 'node:crypto';
import type { Task } from '@a2a-js/sdk';
import * as z from 'zod';
import type { Config } from '../config/schema.js';
import { type Tool, type ToolDeps, ToolError, type ToolFactory } from './types.js';

type AgentConfig = Config['a2a_agents'][number];

const schema = z.object({
  message: z.string().min(1).describe('what to ask the agent, complete in itself: it sees nothing else'),
});

// TaskState from the SDK's generated enum, by number, so this file needs no runtime import at startup
const STATE = {
  SUBMITTED: 1,
  WORKING: 2,
  COMPLETED: 3,
  FAILED: 4,
  CANCELED: 5,
  INPUT_REQUIRED: 6,
  REJECTED: 7,
  AUTH_REQUIRED: 8,
} as const;
const STATE_NAMES: Record<number, string> = {
  1: 'submitted',
  2: 'working',
  3: 'completed',
  4: 'failed',
  5: 'canceled',
  6: 'input-required',
  7: 'rejected',
  8: 'auth-required',
};
const POLL_MS = 500;

/** The a2a__<name> tools of a session, one per configured agent. */
export const a2aTools: ToolFactory = (deps: ToolDeps): Tool[] =>
  deps.loaded.config.a2a_agents.map((agent) => a2aTool(agent, deps));

function a2aTool(agent: AgentConfig, deps: ToolDeps): Tool<typeof schema> {
  return {
    name: `a2a__${agent.name}`,
    description: `Delegate a task to the remote A2A agent "${agent.name}" and get its answer as text.`,
    effect: 'exec',
    schema,
    async execute(args, ctx) {
      const where = `a2a agent ${agent.name} (${agent.card_url})`;
      const timeout = AbortSignal.timeout(agent.timeout_s * 1000);
      const signal = AbortSignal.any([ctx.signal, timeout]);
      try {
        return { output: await callAgent(agent, args.message, deps.env, signal) };
      } catch (err) {
        if (ctx.signal.aborted) throw err;
        if (timeout.aborted) throw new ToolError(`${where} gave no answer within ${agent.timeout_s} s`);
        if (err instanceof ToolError) throw new ToolError(`${where}: ${err.message}`);
        throw new ToolError(`${where} failed: ${oneLine(err)}`);
      }
    },
  };
}

async function callAgent(
  agent: AgentConfig,
  text: string,
  env: NodeJS.ProcessEnv,
  signal: AbortSignal,
): Promise<string> {
  const token = agent.token_env === undefined ? undefined : env[agent.token_env];
  if (agent.token_env !== undefined && !token)
    throw new ToolError(`its token variable ${agent.token_env} is not set`);
  const { ClientFactory, DefaultAgentCardResolver, JsonRpcTransportFactory, RestTransportFactory } =
    await import('@a2a-js/sdk/client');
  const { Message } = await import('@a2a-js/sdk');
  // the token goes only to the card's own origin: a card may name any URL for its endpoint
  const origin = new URL(agent.card_url).origin;
  const fetchImpl: typeof fetch = (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    const headers = new Headers(input instanceof Request ? input.headers : init?.headers);
    if (token && url.origin === origin) headers.set('Authorization', `Bearer ${token}`);
    return fetch(input, { ...init, headers, signal });
  };
  let card: Awaited<ReturnType<InstanceType<typeof DefaultAgentCardResolver>['resolve']>>;
  try {
    card = await new DefaultAgentCardResolver({ fetchImpl }).resolve(agent.card_url, '');
  } catch (err) {
    throw new ToolError(`could not read its agent card: ${oneLine(err)}`);
  }
  const client = await new ClientFactory({
    transports: [new JsonRpcTransportFactory({ fetchImpl }), new RestTransportFactory({ fetchImpl })],
  }).createFromAgentCard(card);
  const message = Message.fromJSON({
    messageId: randomUUID(),
    role: 'ROLE_USER',
    parts: [{ text, mediaType: 'text/plain' }],
  });
  const result = await client.sendMessage(
    { tenant: '', message, configuration: undefined, metadata: undefined },
    { signal },
  );
  if (!('status' in result)) return textOf(result.parts) || '(the agent answered with no text)';
  let task: Task = result;
  while (!isFinal(stateOf(task))) {
    await sleep(POLL_MS, signal);
    task = await client.getTask({ tenant: '', id: task.id }, { signal });
  }
  return answerOf(task);
}

function stateOf(task: Task): number {
  return task.status?.state ?? 0;
}

/** States a caller stops waiting at: the terminal ones, and those that need the caller (input, auth). */
function isFinal(state: number): boolean {
  return state !== STATE.SUBMITTED && state !== STATE.WORKING && state !== 0;
}

function answerOf(task: Task): string {
  const state = stateOf(task);
  const said = textOf(task.status?.message?.parts ?? []);
  if (state === STATE.COMPLETED) {
    const artifacts = task.artifacts.map((a) => textOf(a.parts)).filter((t) => t !== '');
    return artifacts.join('\n\n') || said || '(the agent completed with no text)';
  }
  const name = STATE_NAMES[state] ?? `state ${state}`;
  const why = said ? `: ${said}` : '';
  if (state === STATE.INPUT_REQUIRED || state === STATE.AUTH_REQUIRED)
    throw new ToolError(`the task ${task.id} stopped at ${name} (this tool cannot answer it)${why}`);
  throw new ToolError(`the task ${task.id} ended ${name}${why}`);
}

function textOf(parts: ReadonlyArray<{ content?: { $case: string; value: unknown } | undefined }>): string {
  return parts
    .map((p) =>
      p.content?.$case === 'text'
        ? String(p.content.value)
        : p.content?.$case === 'data'
          ? JSON.stringify(p.content.value)
          : '',
    )
    .filter((t) => t !== '')
    .join('\n');
}

function oneLine(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  const cause = err instanceof Error && err.cause instanceof Error ? ` (${err.cause.message})` : '';
  return `${message}${cause}`.replace(/\s+/g, ' ').trim().slice(0, 500);
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
