/**
 * Subagents: a session hands side tasks to children that run concurrently in the same process.
 * A child is a session of its own (its own log, linked to its parent, in the audit chain) under a
 * policy the gate narrowed from its parent's (never wider), with a share of the parent's budgets; what
 * it spends is charged to the tree's one counter as it spends it (budgets.ts), so no child is needed to
 * be waited for to count, and none starts once the tree's budget is used up. Results come back as tool
 * results; cancelling or ending the parent cancels its children.
 */
import * as z from 'zod';
import { MODES } from '../config/schema.js';
import type { Budgets, Policy } from '../policy/policy.js';
import { fold } from '../tools/family.js';
import type { Tool, ToolResult } from '../tools/types.js';
import { ToolError } from '../tools/types.js';
import type { SessionOutcome } from './session.js';
import type { SessionToolDeps, SessionToolFactory } from './tool-deps.js';

type AgentState = 'running' | 'completed' | 'failed' | 'cancelled';

interface Agent {
  name: string;
  sessionId: string;
  mode: string;
  state: AgentState;
  outcome?: SessionOutcome;
  error?: string;
  /** Its result was handed to the parent (by the wait action). */
  reported: boolean;
  controller: AbortController;
  inbox: string[];
  done: Promise<void>;
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$/;
const WAIT_DEFAULT_S = 120;
const WAIT_MAX_S = 600;

/** A child's share: the parent's token and cost budgets split between the children that may run at once. */
function share(budgets: Budgets, parts: number): Budgets {
  return {
    ...budgets,
    ...(budgets.max_tokens !== undefined
      ? { max_tokens: Math.max(1, Math.floor(budgets.max_tokens / parts)) }
      : {}),
    ...(budgets.max_cost_usd !== undefined ? { max_cost_usd: budgets.max_cost_usd / parts } : {}),
  };
}

function describe(agent: Agent): string {
  if (agent.state === 'running') return `${agent.name}: running (session ${agent.sessionId})`;
  const o = agent.outcome;
  if (!o) return `${agent.name}: ${agent.state}: ${agent.error ?? 'no outcome'}`;
  const files = o.filesChanged.length ? `; changed ${o.filesChanged.join(', ')}` : '';
  return `${agent.name}: ${o.code} after ${o.rounds} rounds (session ${agent.sessionId}${files})\n${o.summary || o.reason}`;
}

/**
 * The subagent tools of one session, folded into one `agent` tool (an action each: spawn, wait, send,
 * list, close); every child it spawns gets the same tool (one level deeper).
 */
export const agentTools: SessionToolFactory = (deps: SessionToolDeps): Tool[] => {
  const { policy } = deps;
  const agents = new Map<string, Agent>();
  const running = () => [...agents.values()].filter((a) => a.state === 'running');
  const find = (name: string): Agent => {
    const agent = agents.get(name);
    if (!agent)
      throw new ToolError(`no agent named "${name}"; agents: ${[...agents.keys()].join(', ') || 'none yet'}`);
    return agent;
  };
  deps.onClose?.(async () => {
    // a parent that ends leaves no child behind: each is cancelled, and its log gets its end
    for (const agent of running()) agent.controller.abort();
    await Promise.all([...agents.values()].map((a) => a.done));
  });

  const spawnSchema = z.object({
    task: z.string().min(1).describe('spawn: the whole task, all it needs to know'),
    name: z.string().optional().describe('the agent (spawn default: agent1, agent2, ...)'),
    mode: z.enum(MODES).optional().describe('spawn: default yours, never wider'),
    scope: z.array(z.string()).optional().describe('spawn: writable paths, default yours'),
    network: z.boolean().optional().describe('spawn: network for its commands'),
  });
  const spawn: Tool<typeof spawnSchema> = {
    name: 'spawn_agent',
    description: 'Start a subagent on a side task.',
    effect: 'agent',
    schema: spawnSchema,
    child: (args) => ({
      ...(args.mode ? { mode: args.mode } : {}),
      ...(args.scope ? { scope: args.scope } : {}),
      ...(args.network !== undefined ? { network: args.network } : {}),
    }),
    async execute(args, ctx): Promise<ToolResult> {
      const granted = ctx.granted;
      if (!granted) throw new ToolError('spawn_agent ran without a policy from the gate');
      const { maxRunning } = policy.agents;
      if (running().length >= maxRunning)
        throw new ToolError(
          `${maxRunning} agents are running already (agents.max_running = ${maxRunning}); wait for one (action wait) or close one (action close)`,
        );
      const name = args.name ?? `agent${agents.size + 1}`;
      if (!NAME.test(name))
        throw new ToolError(`agent name "${name}" must be letters, digits, _ or -, at most 32`);
      if (agents.has(name)) throw new ToolError(`an agent named "${name}" exists already; pick another name`);
      const spent = deps.spend?.exceeded();
      if (spent) throw new ToolError(`no agent can start: ${spent.reason}`);
      const childPolicy: Policy = Object.freeze({
        ...granted,
        budgets: Object.freeze(share(granted.budgets, maxRunning)),
      });
      const { newSessionId } = await import('./session.js');
      const controller = new AbortController();
      const onParentAbort = () => controller.abort();
      if (deps.signal.aborted) controller.abort();
      deps.signal.addEventListener('abort', onParentAbort, { once: true });
      const agent: Agent = {
        name,
        sessionId: newSessionId(),
        mode: childPolicy.mode,
        state: 'running',
        reported: false,
        controller,
        inbox: [],
        done: Promise.resolve(),
      };
      agents.set(name, agent);
      const approve = deps.approve;
      const heard = deps.onAgentEvent;
      // the child runs in its parent's runtime: the same store connection and audit chain
      agent.done = deps.runtime
        .start({
          id: agent.sessionId,
          mode: childPolicy.mode,
          prompt: args.task,
          loaded: deps.loaded,
          cwd: childPolicy.scope.root,
          signal: controller.signal,
          model: deps.model,
          parentId: deps.sessionId,
          policy: childPolicy,
          ...(deps.spend ? { spendParent: deps.spend } : {}),
          tools: [agentTools],
          inbox: () => agent.inbox.splice(0),
          // a face follows the child as it works; a grandchild's events name the whole line: "a/b"
          ...(heard
            ? {
                onEvent: (event) => heard(name, agent.sessionId, event),
                onAgentEvent: (sub, id, event) => heard(`${name}/${sub}`, id, event),
              }
            : {}),
          ...(approve
            ? {
                // a grandchild's question names the whole line of agents: "a/b"
                approve: (req) =>
                  approve({
                    ...req,
                    agent: req.agent ? `${name}/${req.agent}` : name,
                    reason: `subagent ${name}: ${req.reason}`,
                  }),
              }
            : {}),
        })
        .then(
          (outcome) => {
            agent.outcome = outcome;
            agent.state =
              outcome.code === 'COMPLETED'
                ? 'completed'
                : outcome.code === 'CANCELLED'
                  ? 'cancelled'
                  : 'failed';
          },
          (err: unknown) => {
            agent.state = 'failed';
            agent.error = err instanceof Error ? err.message : String(err);
          },
        );
      void agent.done.finally(() => deps.signal.removeEventListener('abort', onParentAbort));
      const scope = childPolicy.scope.writable.map((p) => childPolicy.scope.display(p)).join(', ');
      return {
        output: `spawned agent "${name}" (session ${agent.sessionId}, mode ${childPolicy.mode}, writable ${scope}); it works on its own: call agent with action wait to get its result`,
      };
    },
  };

  const waitSchema = z.object({
    names: z.array(z.string()).optional().describe('wait: default all not yet reported'),
    timeout_s: z.coerce
      .number()
      .positive()
      .optional()
      .describe(`wait: default ${WAIT_DEFAULT_S}, max ${WAIT_MAX_S}`),
  });
  const wait: Tool<typeof waitSchema> = {
    name: 'wait_agent',
    description: 'Wait until agents finish (or the timeout passes) and get their results.',
    effect: 'agent',
    schema: waitSchema,
    async execute(args, ctx): Promise<ToolResult> {
      const targets = args.names ? args.names.map(find) : [...agents.values()].filter((a) => !a.reported);
      if (!targets.length) return { output: 'no agents to wait for' };
      const timeoutS = Math.min(args.timeout_s ?? WAIT_DEFAULT_S, WAIT_MAX_S);
      let timer: NodeJS.Timeout | undefined;
      const aborted = new Promise<void>((resolve) =>
        ctx.signal.addEventListener('abort', () => resolve(), { once: true }),
      );
      await Promise.race([
        Promise.all(targets.map((a) => a.done)),
        new Promise<void>((resolve) => {
          timer = setTimeout(resolve, timeoutS * 1000);
        }),
        aborted,
      ]);
      clearTimeout(timer);
      // what a child spent was charged as it spent it; here its result is handed over
      for (const a of targets) if (a.state !== 'running') a.reported = true;
      const stillRunning = targets.filter((a) => a.state === 'running').length;
      return {
        output: `${targets.map(describe).join('\n\n')}${stillRunning ? `\n\n(${stillRunning} still running after ${timeoutS} s)` : ''}`,
      };
    },
  };

  const sendSchema = z.object({ name: z.string(), text: z.string().min(1).describe('send: the message') });
  const send: Tool<typeof sendSchema> = {
    name: 'send_message',
    description: 'Send a running agent a message; it reads it before its next step.',
    effect: 'agent',
    schema: sendSchema,
    async execute(args): Promise<ToolResult> {
      const agent = find(args.name);
      if (agent.state !== 'running')
        throw new ToolError(`agent "${agent.name}" has finished (${agent.state}); spawn a new one to go on`);
      agent.inbox.push(args.text);
      return { output: `queued for ${agent.name}: it reads it before its next step` };
    },
  };

  const list: Tool<z.ZodObject<Record<string, never>>> = {
    name: 'list_agents',
    description: 'The agents this session started, with their state.',
    effect: 'agent',
    schema: z.object({}),
    async execute(): Promise<ToolResult> {
      if (!agents.size) return { output: 'no agents yet' };
      return {
        output: [...agents.values()]
          .map(
            (a) =>
              `${a.name}  ${a.state}  ${a.mode}  session ${a.sessionId}${a.outcome ? `  ${a.outcome.code}` : ''}`,
          )
          .join('\n'),
      };
    },
  };

  const closeSchema = z.object({ name: z.string() });
  const close: Tool<typeof closeSchema> = {
    name: 'close_agent',
    description: 'Stop a running agent (its log keeps what it did).',
    effect: 'agent',
    schema: closeSchema,
    async execute(args): Promise<ToolResult> {
      const agent = find(args.name);
      if (agent.state === 'running') {
        agent.controller.abort();
        await agent.done;
      }
      return { output: describe(agent) };
    },
  };

  // an agent at the deepest level allowed gets no spawn_agent: it could only be denied
  if (policy.depth >= policy.agents.maxDepth) return [];
  return [
    fold(
      'agent',
      'Subagents: spawn one on a side task (it runs beside you with at most your permissions), wait for results, send a message, list, close.',
      { spawn, wait, send, list, close } as Record<string, Tool>,
    ),
  ];
};
