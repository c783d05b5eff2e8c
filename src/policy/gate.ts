/**
 * The gate: every tool call is decided here against the session's policy, in order: mode, scope,
 * a child's policy (spawn_agent), hooks, sandbox. It returns the decision together with how the
 * call runs (sandboxed or not), so the loop only records and executes.
 */
import { approvalFor } from './approvals.js';
import { approversOf } from './approvers.js';
import { allowedBy, commandLine, deniedBy } from './command-rules.js';
import type { Effect, PathAccess } from './effects.js';
import { type HookPayload, matchingHooks, runHook } from './hooks.js';
import { modeAllows } from './modes.js';
import { type ChildRequest, narrow, type Policy } from './policy.js';
import { ScopeError } from './scope.js';

/** What the gate reads off a tool (src/tools/types.ts `Tool` is one): its name, effect, paths and child. */
export interface Gated {
  name: string;
  effect: Effect;
  /** Paths the call touches, so the gate can check scope before it runs. */
  paths?(args: unknown): PathAccess[];
  /** For a tool that starts a child session (spawn_agent): what the child asks for, narrowed by the gate. */
  child?(args: unknown): ChildRequest;
  /**
   * An exec call that runs nothing here but hands the session's words to another agent (hub_send): no
   * sandbox contains it, so it is gated as a command outside the sandbox is asked about (approvals).
   */
  remote?: boolean;
}

/** Which check denied a call. */
/** `user`: the person asked said no. */
export type DenyKind = 'mode' | 'scope' | 'hook' | 'shell' | 'policy' | 'user';

export interface Allow {
  kind: 'allow';
  /** Canonical paths the call may touch (the safety net saves them before a write). */
  paths: string[];
  /** For exec: run inside the sandbox (false only when allow_shell or an approver hook permits running without one). */
  sandboxed: boolean;
  /** For spawn_agent: the child's policy, narrowed from the session's. */
  child?: Policy;
}

export interface Deny {
  kind: 'deny';
  deny: DenyKind;
  reason: string;
}

export interface Ask {
  kind: 'ask';
  question: string;
  /** The hooks that asked (comma-separated); empty when only keel's `approvals` setting asks. */
  hook: string;
  /** Set when keel's `approvals` setting asks (a write, or a command): an unattended run goes on without the question. */
  approval?: 'write' | 'shell';
  /** What a yes allows: every other check has already run, so a confirmed ask keeps its paths and sandbox. */
  ifConfirmed: Allow;
}

export type Decision = Allow | Deny | Ask;

export interface GateContext {
  policy: Policy;
  /** What every hook payload carries besides the tool and its arguments. */
  hookBase: Omit<HookPayload, 'event' | 'tool' | 'args'>;
  signal?: AbortSignal;
}

/**
 * Decide whether a parsed tool call may run. A hook that asks does not stop the chain: the
 * hooks after it and the sandbox check still run, so the person is asked only about a call
 * that would otherwise be allowed, and a yes allows exactly that.
 */
export async function decide(tool: Gated, args: unknown, ctx: GateContext): Promise<Decision> {
  const { policy } = ctx;
  if (!modeAllows(policy.mode, tool.effect)) {
    const does =
      tool.effect === 'write' ? 'writes files' : tool.effect === 'exec' ? 'runs commands' : tool.effect;
    return {
      kind: 'deny',
      deny: 'mode',
      reason: `${tool.name} is not allowed in ${policy.mode} mode (it ${does}); this session is read-only`,
    };
  }
  const line = tool.effect === 'exec' ? commandLine(args) : undefined;
  const denied = line === undefined ? undefined : deniedBy(line, policy.denyCommands);
  if (denied !== undefined)
    return {
      kind: 'deny',
      deny: 'policy',
      reason: `the command holds "${denied}", which deny_commands says never to run; do without it`,
    };
  const paths: string[] = [];
  for (const access of tool.paths?.(args) ?? []) {
    try {
      paths.push(policy.scope.resolve(access.path, access.access));
    } catch (err) {
      if (err instanceof ScopeError) return { kind: 'deny', deny: 'scope', reason: err.message };
      throw err;
    }
  }
  let child: Policy | undefined;
  if (tool.child) {
    const narrowed = narrow(policy, tool.child(args));
    if (!narrowed.ok) return { kind: 'deny', deny: 'policy', reason: narrowed.reason };
    child = narrowed.policy;
  }
  const asks: Array<{ question: string; hook: string }> = [];
  const payload: HookPayload = { ...ctx.hookBase, event: 'PreToolUse', tool: tool.name, args };
  const hookOpts = { cwd: policy.scope.root, ...(ctx.signal ? { signal: ctx.signal } : {}) };
  for (const hook of matchingHooks([...policy.hooks], 'PreToolUse', tool.name)) {
    const verdict = await runHook(hook, payload, hookOpts);
    if (verdict.decision === 'deny') return { kind: 'deny', deny: 'hook', reason: verdict.reason };
    if (verdict.decision === 'ask') asks.push({ question: verdict.reason, hook: verdict.hook });
  }
  const executed = execution(tool, paths, policy);
  const run = child && executed.kind === 'allow' ? { ...executed, child } : executed;
  if (run.kind === 'deny') return run;
  // an approver hook that let a command run unsandboxed has reviewed it: that is the user's word already
  const reviewed = run.sandboxed || approversOf([...policy.hooks], tool.name).length > 0;
  // an allowed command skips keel's own question about a sandboxed command, never the sandbox or a hook's
  const allowed = run.sandboxed && line !== undefined && allowedBy(line, policy.allowCommands) !== undefined;
  const approval = allowed ? undefined : approvalFor(policy.approvals, tool.effect, reviewed);
  if (!asks.length && !approval) return run;
  const own =
    approval === 'write'
      ? `approvals = "${policy.approvals}" asks before every write`
      : approval === 'shell'
        ? run.sandboxed
          ? `approvals = "${policy.approvals}" asks before every command`
          : tool.remote
            ? `${tool.name} sends the session's words to another agent`
            : 'this command would run outside the sandbox'
        : undefined;
  return {
    kind: 'ask',
    question: [...asks.map((a) => a.question), ...(own ? [own] : [])].join('; '),
    hook: asks.map((a) => a.hook).join(', '),
    ...(approval ? { approval } : {}),
    ifConfirmed: run,
  };
}

/** The last check: how the call runs. Exec needs the sandbox, or the user's explicit word to run without one. */
function execution(tool: Gated, paths: string[], policy: Policy): Allow | Deny {
  if (tool.effect !== 'exec') return { kind: 'allow', paths, sandboxed: false };
  // nothing of it runs on this machine, so nothing needs allow_shell; the approvals ask as for an unsandboxed command
  if (tool.remote) return { kind: 'allow', paths, sandboxed: false };
  if (policy.sandbox) return { kind: 'allow', paths, sandboxed: true };
  // a hook that merely matches (a logger, `.*`) is no decision about commands; every approver has allowed by now
  if (policy.allowShell || approversOf([...policy.hooks], tool.name).length)
    return { kind: 'allow', paths, sandboxed: false };
  return {
    kind: 'deny',
    deny: 'shell',
    // the user who chose sandbox = "none" needs to hear how to allow shell, not to install bubblewrap
    reason:
      policy.sandboxSetting === 'none'
        ? `${tool.name} is disabled: the config says sandbox = "none", so it would run unsandboxed, and nothing allows that. To allow it, set allow_shell = true (--allow-shell), or add a PreToolUse hook with approver = true whose matcher names ${tool.name}`
        : `${tool.name} is disabled: no sandbox could start here (install bubblewrap: apt install bubblewrap). To run it without one, set allow_shell = true (--allow-shell), or add a PreToolUse hook with approver = true whose matcher names ${tool.name}`,
  };
}
