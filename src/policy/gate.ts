/** The gate: every tool call is decided here, in order: mode, scope, hooks, sandbox. */
import type { Mode } from '../config/schema.js';
import type { Tool } from '../tools/types.js';
import { approversOf } from './approvers.js';
import { type HookPayload, type HookSpec, matchingHooks, runHook } from './hooks.js';
import { modeAllows } from './modes.js';
import { type Scope, ScopeError } from './scope.js';

/** Which check denied a call. */
export type DenyKind = 'mode' | 'scope' | 'hook' | 'shell';

export interface Allow {
  kind: 'allow';
  /** Canonical paths the call may touch (the safety net saves them before a write). */
  paths: string[];
  /** For exec: run inside the sandbox (false only when allow_shell or an approver hook permits running without one). */
  sandboxed: boolean;
}

export interface Deny {
  kind: 'deny';
  deny: DenyKind;
  reason: string;
}

export interface Ask {
  kind: 'ask';
  question: string;
  hook: string;
  /** What a yes allows: every other check has already run, so a confirmed ask keeps its paths and sandbox. */
  ifConfirmed: Allow;
}

export type Decision = Allow | Deny | Ask;

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

/**
 * Decide whether a parsed tool call may run. A hook that asks does not stop the chain: the
 * hooks after it and the sandbox check still run, so the person is asked only about a call
 * that would otherwise be allowed, and a yes allows exactly that.
 */
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
  const asks: Array<{ question: string; hook: string }> = [];
  const payload: HookPayload = { ...ctx.hookBase, event: 'PreToolUse', tool: tool.name, args };
  const hookOpts = { cwd: ctx.scope.root, ...(ctx.signal ? { signal: ctx.signal } : {}) };
  for (const hook of matchingHooks(ctx.hooks, 'PreToolUse', tool.name)) {
    const verdict = await runHook(hook, payload, hookOpts);
    if (verdict.decision === 'deny') return { kind: 'deny', deny: 'hook', reason: verdict.reason };
    if (verdict.decision === 'ask') asks.push({ question: verdict.reason, hook: verdict.hook });
  }
  const run = execution(tool, paths, ctx);
  if (run.kind === 'deny' || !asks.length) return run;
  return {
    kind: 'ask',
    question: asks.map((a) => a.question).join('; '),
    hook: asks.map((a) => a.hook).join(', '),
    ifConfirmed: run,
  };
}

/** The last check: how the call runs. Exec needs the sandbox, or the user's explicit word to run without one. */
function execution(tool: Tool, paths: string[], ctx: GateContext): Allow | Deny {
  if (tool.effect !== 'exec') return { kind: 'allow', paths, sandboxed: false };
  if (ctx.sandbox) return { kind: 'allow', paths, sandboxed: true };
  // a hook that merely matches (a logger, `.*`) is no decision about commands; every approver has allowed by now
  if (ctx.allowShell || approversOf(ctx.hooks, tool.name).length)
    return { kind: 'allow', paths, sandboxed: false };
  return {
    kind: 'deny',
    deny: 'shell',
    reason: `${tool.name} is disabled: no sandbox is in use (sandbox = "none", or bubblewrap is not installed). To run it without one, set allow_shell = true (--allow-shell), or add a PreToolUse hook with approver = true whose matcher names ${tool.name}`,
  };
}
