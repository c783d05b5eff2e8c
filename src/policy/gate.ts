/** The gate: every tool call is decided here, in order: mode, scope, hooks, sandbox. */
import type { Mode } from '../config/schema.js';
import type { Tool } from '../tools/types.js';
import { type HookPayload, type HookSpec, matchingHooks, runHooks } from './hooks.js';
import { modeAllows } from './modes.js';
import { type Scope, ScopeError } from './scope.js';

/** Which check denied a call. */
export type DenyKind = 'mode' | 'scope' | 'hook' | 'shell';

export type Decision =
  | {
      kind: 'allow';
      /** Canonical paths the call may touch. */
      paths: string[];
      /** For exec: run inside the sandbox (false only when a hook or allow_shell permits running without one). */
      sandboxed: boolean;
    }
  | { kind: 'deny'; deny: DenyKind; reason: string }
  | { kind: 'ask'; question: string; hook: string };

export interface GateContext {
  mode: Mode;
  scope: Scope;
  allowShell: boolean;
  /** Whether a working sandbox is set up for this session. */
  sandbox: boolean;
  hooks: HookSpec[];
  /** What every hook payload carries besides the tool and its arguments. */
  hookBase: Omit<HookPayload, 'event' | 'tool' | 'args'>;
  signal?: AbortSignal;
}

/** Decide whether a parsed tool call may run. */
export async function decide(tool: Tool, args: unknown, ctx: GateContext): Promise<Decision> {
  if (!modeAllows(ctx.mode, tool.effect)) {
    const does =
      tool.effect === 'write' ? 'writes files' : tool.effect === 'exec' ? 'runs commands' : tool.effect;
    return {
      kind: 'deny',
      deny: 'mode',
      reason: `${tool.name} is not allowed in ${ctx.mode} mode (it ${does}); this session is read-only`,
    };
  }
  const paths: string[] = [];
  for (const access of tool.paths?.(args) ?? []) {
    try {
      paths.push(ctx.scope.resolve(access.path, access.access));
    } catch (err) {
      if (err instanceof ScopeError) return { kind: 'deny', deny: 'scope', reason: err.message };
      throw err;
    }
  }
  const hooks = matchingHooks(ctx.hooks, 'PreToolUse', tool.name);
  if (hooks.length) {
    const verdict = await runHooks(
      hooks,
      { ...ctx.hookBase, event: 'PreToolUse', tool: tool.name, args },
      { cwd: ctx.scope.root, ...(ctx.signal ? { signal: ctx.signal } : {}) },
    );
    if (verdict.decision === 'deny') return { kind: 'deny', deny: 'hook', reason: verdict.reason };
    if (verdict.decision === 'ask') return { kind: 'ask', question: verdict.reason, hook: verdict.hook };
  }
  if (tool.effect !== 'exec') return { kind: 'allow', paths, sandboxed: false };
  if (ctx.sandbox) return { kind: 'allow', paths, sandboxed: true };
  // no sandbox: only the user's explicit word (allow_shell, or a hook that looked at this call) lets it run
  if (ctx.allowShell || hooks.length) return { kind: 'allow', paths, sandboxed: false };
  return {
    kind: 'deny',
    deny: 'shell',
    reason:
      'shell is disabled: no sandbox is available (install bubblewrap), and neither allow_shell = true nor a PreToolUse hook for shell is configured',
  };
}
