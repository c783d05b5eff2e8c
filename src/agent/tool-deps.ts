/**
 * What a session gives the tool factories it runs: the services' `ToolDeps` (src/tools/types.ts), and
 * what only agent/ knows, for agent/'s own tools (subagents): the runtime, who the session asks, and its
 * node in the tree's spending counter. A services' factory takes the narrower deps, so either kind fits.
 */
import type { Tool, ToolDeps } from '../tools/types.js';
import type { Approver } from './approvals.js';
import type { Spend } from './budgets.js';
import type { SessionEvent } from './events.js';
import type { Runtime } from './runtime.js';

export interface SessionToolDeps extends ToolDeps {
  /** The runtime the session runs in (its store and audit chain); a subagent runs in its parent's. */
  runtime: Runtime;
  /** Who the session asks (a subagent asks the same person, its question naming it). */
  approve?: Approver;
  /** The session's node in its tree's spending counter: a subagent's is made under it. */
  spend?: Spend;
  /** A subagent's events as they are stored, by the line of agents ("a", a grandchild "a/b"): a face shows its progress. */
  onAgentEvent?: AgentEventListener;
}

/** Hears a subagent's events: the agent's name (its line: "a/b"), its session and the event. */
export type AgentEventListener = (agent: string, sessionId: string, event: SessionEvent) => void;

/** Makes a session's tools; a services' `ToolFactory` is one too. */
export type SessionToolFactory = (deps: SessionToolDeps) => Tool[] | Promise<Tool[]>;
