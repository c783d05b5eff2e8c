/**
 * A session's policy: everything the gate decides with (mode, scope, shell permission, sandbox,
 * network, hooks, budgets), built once per session. A subagent's policy can only come from
 * `narrow(parent, request)`, which refuses anything wider than the parent: the one place a
 * child's powers are decided, so a child can never be handed more than its parent has.
 */

import { type Approvals, asksAtLeast } from '../config/approvals.js';
import { type Program, programsOf } from '../config/programs.js';
import type { Config, Mode } from '../config/schema.js';
import type { HookSpec } from './hooks.js';
import { MODE_EFFECTS } from './modes.js';
import { isInside, type Scope, ScopeError } from './scope.js';

export type Budgets = Config['budgets'];

export interface Policy {
  readonly mode: Mode;
  readonly scope: Scope;
  /** When keel asks a person before a call it would allow (approvals.ts); a child keeps its parent's. */
  readonly approvals: Approvals;
  /** Run commands without a sandbox when none can run (the user's explicit word). */
  readonly allowShell: boolean;
  /** Commands run without the approvals question (still sandboxed), and commands always denied (command-rules.ts). */
  readonly allowCommands: readonly string[];
  readonly denyCommands: readonly string[];
  /** Whether a working sandbox is set up: commands run inside it. */
  readonly sandbox: boolean;
  /** The `sandbox` setting asked for, so a denial can say why there is none (the user chose "none", or none could start). */
  readonly sandboxSetting?: Config['sandbox'];
  /** Whether sandboxed commands may reach the network. */
  readonly network: boolean;
  readonly hooks: readonly HookSpec[];
  readonly budgets: Budgets;
  /** 0 for a session a person started; a subagent is one deeper than its parent. */
  readonly depth: number;
  /** How many subagents may run at once, and how deep they may nest. */
  readonly agents: { readonly maxRunning: number; readonly maxDepth: number };
}

export interface PolicyInput {
  mode: Mode;
  scope: Scope;
  config: Config;
  sandbox: boolean;
  /** The programs in the workspace the config runs (LoadedConfig.programs): each hook runs only while its own are unchanged. */
  programs?: readonly Program[];
}

/** The policy of a session a person started, from its config. */
export function policyFor(input: PolicyInput): Policy {
  const { config } = input;
  return Object.freeze({
    mode: input.mode,
    scope: input.scope,
    approvals: config.approvals,
    allowShell: config.allow_shell,
    allowCommands: Object.freeze([...config.allow_commands]),
    denyCommands: Object.freeze([...config.deny_commands]),
    sandbox: input.sandbox,
    sandboxSetting: config.sandbox,
    network: config.sandbox_network,
    hooks: Object.freeze(
      config.hooks.map((h) => Object.freeze({ ...h, programs: programsOf(h.command, input.programs ?? []) })),
    ),
    budgets: Object.freeze({ ...config.budgets }),
    depth: 0,
    agents: Object.freeze({ maxRunning: config.agents.max_running, maxDepth: config.agents.max_depth }),
  });
}

/** What a child asks for; anything left out is the parent's. */
export interface ChildRequest {
  mode?: Mode;
  /** Writable paths, relative to the workspace. */
  scope?: string[];
  network?: boolean;
  budgets?: Partial<Budgets>;
}

export type Narrowed = { ok: true; policy: Policy } | { ok: false; reason: string };

/** Read-only < edit < auto (unattended): a rank no child may pass. */
const MODE_RANK: Record<Mode, number> = { ask: 0, plan: 0, edit: 1, auto: 2 };

/**
 * The policy for a child of `parent`: equal to it or narrower in every dimension, or the reason
 * the request is wider. Hooks are always the parent's (a child cannot shed an approver).
 */
export function narrow(parent: Policy, request: ChildRequest): Narrowed {
  if (parent.depth + 1 > parent.agents.maxDepth)
    return {
      ok: false,
      reason: `subagents may nest ${parent.agents.maxDepth} deep; this session is already at depth ${parent.depth}`,
    };
  const mode = request.mode ?? parent.mode;
  const effects = MODE_EFFECTS[mode];
  const wider = [...effects].filter((e) => !MODE_EFFECTS[parent.mode].has(e));
  if (wider.length || MODE_RANK[mode] > MODE_RANK[parent.mode])
    return { ok: false, reason: `mode ${mode} is wider than this session's mode ${parent.mode}` };
  let scope = parent.scope;
  if (request.scope !== undefined) {
    let child: Scope;
    try {
      child = parent.scope.withWritable(request.scope);
    } catch (err) {
      if (err instanceof ScopeError) return { ok: false, reason: `scope: ${err.message}` };
      throw err;
    }
    // compared canonical: a symlink inside the parent's scope cannot point the child outside it
    for (const [i, path] of child.writable.entries())
      if (!parent.scope.writable.some((dir) => isInside(path, dir)))
        return {
          ok: false,
          reason: `scope ${request.scope[i]} (${child.display(path)}) is outside this session's writable scope (${parent.scope.writable.map((p) => parent.scope.display(p)).join(', ')})`,
        };
    scope = child;
  }
  const network = request.network ?? parent.network;
  if (network && !parent.network)
    return { ok: false, reason: 'network access is wider than this session has (sandbox_network is off)' };
  const budgets: Budgets = { ...parent.budgets };
  for (const [key, value] of Object.entries(request.budgets ?? {}) as Array<
    [keyof Budgets, number | undefined]
  >) {
    if (value === undefined) continue;
    const limit = parent.budgets[key];
    if (limit !== undefined && value > limit)
      return { ok: false, reason: `budget ${key} = ${value} is more than this session's ${limit}` };
    budgets[key] = value as never;
  }
  return {
    ok: true,
    policy: Object.freeze({
      ...parent,
      mode,
      scope,
      network,
      budgets: Object.freeze(budgets),
      depth: parent.depth + 1,
    }),
  };
}

/** Whether `child` is equal to or narrower than `parent` in every dimension (a check, for the child's own start). */
export function isWithin(child: Policy, parent: Policy): boolean {
  if (MODE_RANK[child.mode] > MODE_RANK[parent.mode]) return false;
  if (child.scope.root !== parent.scope.root) return false;
  if (!child.scope.writable.every((p) => parent.scope.writable.some((dir) => isInside(p, dir)))) return false;
  if (child.network && !parent.network) return false;
  if (child.allowShell && !parent.allowShell) return false;
  if (child.allowCommands.some((c) => !parent.allowCommands.includes(c))) return false;
  if (parent.denyCommands.some((c) => !child.denyCommands.includes(c))) return false;
  if (!asksAtLeast(child.approvals, parent.approvals)) return false;
  if (child.sandbox !== parent.sandbox && !child.sandbox) return false;
  if (parent.hooks.some((h) => !child.hooks.includes(h))) return false;
  for (const key of Object.keys(parent.budgets) as Array<keyof Budgets>) {
    const limit = parent.budgets[key];
    const own = child.budgets[key];
    if (limit !== undefined && (own === undefined || own > limit)) return false;
  }
  return child.depth > parent.depth;
}
