/** The gate: every tool call is decided here, in order: mode, scope, shell policy. */
import type { Mode } from '../config/schema.js';
import type { Tool } from '../tools/types.js';
import { modeAllows } from './modes.js';
import { type Scope, ScopeError } from './scope.js';

/** Why a call was denied; `scope` denials end the run as SCOPE_VIOLATION when configured to. */
export type DenyKind = 'mode' | 'scope' | 'shell' | 'hook';

export type Decision =
  | { kind: 'allow'; paths: string[] }
  | { kind: 'deny'; deny: DenyKind; reason: string }
  | { kind: 'ask'; question: string };

export interface GateContext {
  mode: Mode;
  scope: Scope;
  allowShell: boolean;
}

/** Decide whether a parsed tool call may run. Pure apart from resolving paths on disk. */
export function decide(tool: Tool, args: unknown, ctx: GateContext): Decision {
  if (!modeAllows(ctx.mode, tool.effect)) {
    return {
      kind: 'deny',
      deny: 'mode',
      reason: `${tool.name} is not allowed in ${ctx.mode} mode (it ${effectVerb(tool.effect)}); this session is read-only`,
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
  if (tool.effect === 'exec' && !ctx.allowShell) {
    return {
      kind: 'deny',
      deny: 'shell',
      reason:
        'shell is disabled: no sandbox is configured. The user can enable it with allow_shell = true in keel.toml or --allow-shell',
    };
  }
  return { kind: 'allow', paths };
}

function effectVerb(effect: Tool['effect']): string {
  return effect === 'write' ? 'writes files' : effect === 'exec' ? 'runs commands' : `has effect ${effect}`;
}
