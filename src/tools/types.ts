/** What a tool is: a name, a zod schema, an effect class, and an execute function. */
import type { z } from 'zod';
import type { LoadedConfig } from '../config/load.js';
import type { ModelClient } from '../model/chain.js';
import type { Access, Effect, ExecResult, PathAccess } from '../policy/effects.js';
import type { ChildRequest, Policy } from '../policy/policy.js';

export interface ToolContext {
  /** The workspace root (canonical): relative paths resolve against it. */
  cwd: string;
  /** keel's id of the call being run (the same when a resumed run runs it again; unset outside a session). */
  callId?: string;
  signal: AbortSignal;
  /**
   * Canonicalize a path (symlinks resolved) and check it against the scope. Throws a
   * ScopeError when the path is not allowed. Tools call this again right before touching
   * the file, so a symlink swapped after the gate's check is still caught.
   */
  resolve(path: string, access: Access): string;
  /** Run a shell command under the session's policy (sandbox, limits). Only `shell` uses it. */
  exec?(
    command: string,
    opts: {
      timeoutS: number;
      signal: AbortSignal;
      onOutput?: (text: string, stream: 'stdout' | 'stderr') => void;
    },
  ): Promise<ExecResult>;
  /** The call's output as it is produced (a running command's), for faces to show live; the result has it all. */
  onOutput?(text: string, stream: 'stdout' | 'stderr'): void;
  /** For spawn_agent: the child's policy as the gate granted it. */
  granted?: Policy;
  /** Run the project's test command (optionally filtered) and describe the result. Only `run_tests` uses it. */
  runTests?(
    filter: string | undefined,
    signal: AbortSignal,
  ): Promise<{ output: string; failed: boolean; tests?: ToolOutcome['tests'] }>;
}

/** What a call came to, for people: a command's exit code, a test run's counts, a write's lines. */
export interface ToolOutcome {
  exit_code?: number | null;
  timed_out?: boolean;
  tests?: { passed: number; failed: number; skipped: number };
  added?: number;
  removed?: number;
}

export interface ToolResult {
  output: string;
  isError?: boolean;
  /** Workspace-relative paths this call created, changed or deleted. */
  filesChanged?: string[];
  /** Lines added + removed, for the diff budget. */
  diffLines?: number;
  outcome?: ToolOutcome;
  /** The change as a unified diff (write tools), recorded with the result so any face can show it. */
  diff?: string;
  /** Protected names the call created and keel removed again; the loop records them as a violation. */
  violations?: string[];
  /** The tools the session may use from now on (a skill's allowed-tools): the loop records it, and it only narrows. */
  allowTools?: { by: string; rules: string[] };
}

export interface Tool<S extends z.ZodType = z.ZodType> {
  name: string;
  description: string;
  effect: Effect;
  schema: S;
  /** For a tool that starts a child session (spawn_agent): what the child asks for, narrowed by the gate. */
  child?(args: z.infer<S>): ChildRequest;
  /** Paths the call touches, so the gate can check scope before it runs. */
  paths?(args: z.infer<S>): PathAccess[];
  /** An exec tool that runs nothing here but sends to another agent (hub_send): see Gated.remote. */
  remote?: boolean;
  execute(args: z.infer<S>, ctx: ToolContext): Promise<ToolResult>;
  /** A write tool's change worked out without making it: what a person is asked to approve. */
  preview?(args: z.infer<S>, ctx: ToolContext): Promise<{ path: string; diff: string }>;
  /**
   * A write tool's intent, worked out without writing: each target's sha256 now and after the write, and
   * the result the call will return. Recorded before the write, so a run killed mid-call can tell on
   * resume whether the write happened (agent/effect-resume.ts). Throws as execute would for a bad call.
   */
  intend?(args: z.infer<S>, ctx: ToolContext): Promise<WriteIntent>;
  /**
   * `worktree`: the call's effects stay in the workspace's files (shell, run_tests), so a resumed run puts
   * the workspace back to its tree at the call's intent and runs it again. Without it, an `exec` call is
   * one keel cannot check after the fact. `idempotent`: the call runs again as it is, because running it
   * twice (the same session, the same call id) has the first run's effect and no second (hub_send keys
   * its message by the session and the call: the hub gives the original back).
   */
  resume?: 'worktree' | 'idempotent';
}

/** A file a write will change: workspace-relative path, sha256 of its bytes before and after (null: absent). */
export interface FileHashes {
  path: string;
  before: string | null;
  after: string | null;
}

/** What a write tool intends: the files it changes and the result it returns once it has. */
export interface WriteIntent {
  files: FileHashes[];
  result: ToolResult;
}

/** Error thrown by a tool for a bad call; its message goes back to the model. */
export class ToolError extends Error {
  override name = 'ToolError';
}

/**
 * What a tool factory gets: the session it makes tools for, and what that session runs with. A session
 * gives agent/ tools more (its runtime, who it asks, its spending counter: src/agent/tool-deps.ts).
 */
export interface ToolDeps {
  policy: Policy;
  sessionId: string;
  /** The session's model client (a subagent shares its parent's). */
  model: ModelClient;
  signal: AbortSignal;
  env: NodeJS.ProcessEnv;
  loaded: LoadedConfig;
  /** Run this when the session ends, before its sandbox closes (a subagent tool cancels its children). */
  onClose?(fn: () => Promise<void>): void;
}

/**
 * Makes a session's tools from its dependencies: MCP, memory and subagent tools need no field of their own
 * on the context. Async for tools found at session start (an MCP server's list).
 */
export type ToolFactory = (deps: ToolDeps) => Tool[] | Promise<Tool[]>;
