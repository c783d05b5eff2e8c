/**
 * Narrowing: every config key classified by whether a change widens or narrows what keel may do.
 * The loader ignores an untrusted project's widening values and `keel trust diff` reports the same
 * changes, so both read this one table.
 */
import { lstatSync, realpathSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { APPROVALS, type Approvals, asksAtLeast } from './approvals.js';
import type { Raw } from './load.js';
import { type Config, configSchema } from './schema.js';

export interface PermissionChange {
  /** Dotted key, for people: `budgets.max_rounds`, `pricing.m.input_per_mtok`. */
  key: string;
  kind: 'expansion' | 'narrowing';
  detail: string;
}

/** A change together with the exact path of the key, so the loader can drop it (model names hold dots). */
export interface KeyChange extends PermissionChange {
  path: string[];
}

type Push = (path: string[], widened: boolean, detail: string) => void;
interface RuleContext {
  /** The repository root, realpath'd: scope entries are compared as the OS will resolve them. */
  root: string;
}
/** Compare one key of two configs (missing values mean what the rule says) and push what changed. */
type Rule = (before: Raw, after: Raw, push: Push, ctx: RuleContext) => void;

const show = (v: unknown) => (v === undefined ? '(unset)' : JSON.stringify(v));

function isRaw(v: unknown): v is Raw {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Date);
}

function at(values: Raw, path: string[]): unknown {
  let v: unknown = values;
  for (const p of path) v = isRaw(v) && Object.hasOwn(v, p) ? v[p] : undefined;
  return v;
}

/** A limit: a lower number narrows, a higher one (or none at all) widens. */
function limit(...path: string[]): Rule {
  return (before, after, push) => {
    const a = at(before, path);
    const b = at(after, path);
    // a value of the wrong type is left for validation to name
    if ((a !== undefined && typeof a !== 'number') || (b !== undefined && typeof b !== 'number')) return;
    const na = a ?? Number.POSITIVE_INFINITY;
    const nb = b ?? Number.POSITIVE_INFINITY;
    if (na !== nb) push(path, nb > na, `${path.join('.')}: ${show(a)} -> ${show(b)}`);
  };
}

function limits<T extends object>(key: string, subkeys: Record<keyof T, true>): Rule {
  const rules = Object.keys(subkeys).map((sub) => limit(key, sub));
  return (before, after, push, ctx) => {
    for (const rule of rules) rule(before, after, push, ctx);
  };
}

/** A switch whose `wide` value lets keel do more. */
function flag(key: string, wide: boolean): Rule {
  return (before, after, push) => {
    const a = before[key] === true;
    const b = after[key] === true;
    if (a !== b) push([key], b === wide, `${key}: ${show(before[key])} -> ${show(after[key])}`);
  };
}

/** A value any new setting of which widens (another endpoint, another key); unsetting it narrows. */
function anyChange(key: string): Rule {
  return (before, after, push) => {
    const a = before[key];
    const b = after[key];
    if (JSON.stringify(a) === JSON.stringify(b)) return;
    push([key], b !== undefined, `${key}: ${show(a)} -> ${show(b)}`);
  };
}

/** A list of names: a new name widens (a variable could hand a secret to a command the model wrote). */
function names(key: string): Rule {
  return (before, after, push) => {
    const list = (v: unknown) => (Array.isArray(v) ? v.map(String) : []);
    const a = list(before[key]);
    const b = list(after[key]);
    const added = b.filter((name) => !a.includes(name));
    if (added.length > 0) push([key], true, `${key}: adds ${added.join(', ')}`);
    else if (a.some((name) => !b.includes(name)))
      push([key], false, `${key}: ${show(before[key])} -> ${show(after[key])}`);
  };
}

/**
 * Command rules: a new allowed command widens (fewer questions), a new denied one narrows; removing
 * one does the opposite. Each rule is its own change, so `keel trust diff` names it.
 */
function commandRules(key: string, addingWidens: boolean): Rule {
  return (before, after, push) => {
    const list = (v: unknown) => (Array.isArray(v) ? v.map(String) : []);
    const a = list(before[key]);
    const b = list(after[key]);
    for (const rule of b) if (!a.includes(rule)) push([key], addingWidens, `${key}: adds ${show(rule)}`);
    // deny_commands joins across layers (config/load.ts): a layer above cannot remove a "never" rule below it
    if (addingWidens)
      for (const rule of a) if (!b.includes(rule)) push([key], false, `${key}: removes ${show(rule)}`);
  };
}

/** A key that changes neither what keel may do nor what it may spend. */
const free: Rule = () => {};

const MODE_RANK: Record<string, number> = { ask: 0, plan: 0, edit: 1, auto: 2 };

const permission: Rule = (before, after, push) => {
  const a = MODE_RANK[String(before.permission ?? 'ask')] ?? 0;
  const b = MODE_RANK[String(after.permission ?? 'ask')] ?? 0;
  if (a !== b)
    push(['permission'], b > a, `permission: ${show(before.permission)} -> ${show(after.permission)}`);
};

/** Where a sandbox setting may move without trust: towards a sandbox that is required, never away. */
const STRICTER_SANDBOX: Record<string, string[]> = {
  none: ['auto', 'bwrap', 'docker'],
  auto: ['bwrap'],
  bwrap: [],
  docker: [],
};

const sandbox: Rule = (before, after, push) => {
  const a = String(before.sandbox ?? 'auto');
  const b = String(after.sandbox ?? 'auto');
  if (a === b) return;
  const stricter = STRICTER_SANDBOX[a]?.includes(b) ?? false;
  push(['sandbox'], !stricter, `sandbox: ${show(before.sandbox)} -> ${show(after.sandbox)}`);
};

/** Asking a person less often widens: a setting that drops a question another asked. */
const approvals: Rule = (before, after, push) => {
  const valid = (v: unknown): v is Approvals =>
    v === undefined || (APPROVALS as readonly unknown[]).includes(v);
  const a = before.approvals;
  const b = after.approvals;
  if (a === b || !valid(a) || !valid(b)) return;
  push(['approvals'], !asksAtLeast(b, a), `approvals: ${show(a)} -> ${show(b)}`);
};

/** Hooks run programs and removing one drops a check, so every change widens. */
const hooks: Rule = (before, after, push) => {
  const list = (v: unknown) => (Array.isArray(v) ? v.map((x) => JSON.stringify(x)) : []);
  const a = list(before.hooks);
  const b = list(after.hooks);
  for (const item of b) if (!a.includes(item)) push(['hooks'], true, `hooks: added ${item}`);
  for (const item of a) if (!b.includes(item)) push(['hooks'], true, `hooks: removed ${item}`);
};

/** MCP servers run programs or reach hosts, so a new or changed server widens; one removed narrows. */
const mcpServers: Rule = (before, after, push) => {
  const list = (v: unknown) => (Array.isArray(v) ? v.map((x) => JSON.stringify(x)) : []);
  const a = list(before.mcp_servers);
  const b = list(after.mcp_servers);
  for (const item of b) if (!a.includes(item)) push(['mcp_servers'], true, `mcp_servers: added ${item}`);
  for (const item of a) if (!b.includes(item)) push(['mcp_servers'], false, `mcp_servers: removed ${item}`);
};

/** Another A2A agent (or one changed) sends the session's words to another host; fewer narrow. */
const a2aAgents: Rule = (before, after, push) => {
  const list = (v: unknown) => (Array.isArray(v) ? v.map((x) => JSON.stringify(x)) : []);
  const a = list(before.a2a_agents);
  const b = list(after.a2a_agents);
  for (const item of b) if (!a.includes(item)) push(['a2a_agents'], true, `a2a_agents: added ${item}`);
  for (const item of a) if (!b.includes(item)) push(['a2a_agents'], false, `a2a_agents: removed ${item}`);
};

/** More fallback models send the session to more endpoints; fewer narrow. */
const fallbackModels: Rule = (before, after, push) => {
  const list = (v: unknown) => (Array.isArray(v) ? v.map((x) => JSON.stringify(x)) : []);
  const a = list(before.fallback_models);
  const b = list(after.fallback_models);
  for (const item of b)
    if (!a.includes(item)) push(['fallback_models'], true, `fallback_models: added ${item}`);
  for (const item of a)
    if (!b.includes(item)) push(['fallback_models'], false, `fallback_models: removed ${item}`);
};

/** A lower price makes max_cost_usd trip later; a price for a model that had none is no wider (unknown stays unbudgeted). */
const pricing: Rule = (before, after, push) => {
  const pa = isRaw(before.pricing) ? before.pricing : {};
  const pb = isRaw(after.pricing) ? after.pricing : {};
  for (const model of new Set([...Object.keys(pa), ...Object.keys(pb)])) {
    const a = pa[model];
    const b = pb[model];
    if (!isRaw(a)) continue;
    if (!isRaw(b)) {
      push(['pricing', model], true, `pricing.${model}: ${show(a)} -> (unset)`);
      continue;
    }
    for (const field of ['input_per_mtok', 'output_per_mtok', 'gpu_second']) {
      const x = a[field];
      const y = b[field];
      if (typeof x !== 'number' || typeof y !== 'number' || x === y) continue;
      push(['pricing', model, field], y < x, `pricing.${model}.${field}: ${x} -> ${y}`);
    }
  }
};

function priced(values: Raw, model: unknown): boolean {
  return typeof model === 'string' && isRaw(values.pricing) && isRaw(values.pricing[model]);
}

/** Switching to a model with no price while a cost budget is in force would switch the budget off. */
const model: Rule = (before, after, push) => {
  if (before.model === after.model) return;
  const costCapped = typeof at(after, ['budgets', 'max_cost_usd']) === 'number';
  // the price must be one that was already in force: a price the same layer adds could be zero
  const dodges = costCapped && priced(before, before.model) && !priced(before, after.model);
  if (dodges)
    push(
      ['model'],
      true,
      `model: ${show(before.model)} -> ${show(after.model)}, which has no price, so max_cost_usd could not stop it`,
    );
};

/**
 * Where a scope entry really leads: symlinks resolved in the part that exists, the rest appended.
 * undefined for a dangling or looping link, whose target a write could not be checked against.
 */
export function realScopeEntry(entry: string, root: string): string | undefined {
  if (entry.includes('\0')) return undefined;
  const pending: string[] = [];
  let current = resolve(root, entry);
  for (;;) {
    try {
      const real = realpathSync.native(current);
      return join(real, ...pending.reverse());
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT' && code !== 'ENOTDIR') return undefined;
      if (isSymlink(current)) return undefined;
      const parent = dirname(current);
      if (parent === current) return undefined;
      pending.push(basename(current));
      current = parent;
    }
  }
}

function isSymlink(path: string): boolean {
  try {
    return lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
}

/** True when `child` is `parent` or inside it (both real paths). */
export function inside(child: string, parent: string): boolean {
  const rel = relative(parent, child);
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel));
}

function entries(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((e): e is string => typeof e === 'string') : ['.'];
}

/** Each entry is compared where it really leads: it must lie inside an entry that was already writable. */
const scope: Rule = (before, after, push, ctx) => {
  const a = entries(before.scope);
  const b = entries(after.scope);
  const allowed = a.map((e) => realScopeEntry(e, ctx.root)).filter((e): e is string => e !== undefined);
  let widened = false;
  for (const entry of b) {
    const real = realScopeEntry(entry, ctx.root);
    if (real === undefined) {
      widened = true;
      push(['scope'], true, `scope: ${show(entry)} is a dangling or looping link`);
    } else if (!allowed.some((dir) => inside(real, dir))) {
      widened = true;
      const where = inside(real, ctx.root) ? real : `${real}, outside the repository`;
      push(['scope'], true, `scope: ${show(entry)} resolves to ${where}`);
    }
  }
  if (!widened && JSON.stringify(a) !== JSON.stringify(b))
    push(['scope'], false, `scope: ${show(before.scope ?? ['.'])} -> ${show(after.scope)}`);
};

/**
 * Choosing another profile (or none) may put wider values in force, often ones written in a file
 * the project does not control, so every change widens. The loader compares a project's choice
 * with the user's own profiles itself, since only it sees them.
 */
const profile: Rule = (before, after, push) => {
  if (before.profile !== after.profile)
    push(
      ['profile'],
      true,
      `profile: ${show(before.profile)} -> ${show(after.profile)} chooses another profile`,
    );
};

/** Every key of the schema with its rule: a new key does not compile until someone decides. */
const RULES: Record<keyof Config, Rule> = {
  profile,
  provider: free, // the wire format to the same endpoint
  model: model,
  base_url: anyChange('base_url'), // could send the code (and the key) to another host
  api_key_env: anyChange('api_key_env'), // could hand another secret to the endpoint
  context_window: free, // describes the model; spending is bounded by the budgets
  permission,
  scope,
  test_command: free, // the repository's tests are the repository's code anyway, and run gated
  allow_shell: flag('allow_shell', true),
  allow_commands: commandRules('allow_commands', true),
  deny_commands: commandRules('deny_commands', false),
  approvals,
  hooks,
  mcp_servers: mcpServers,
  a2a_agents: a2aAgents,
  sandbox,
  sandbox_network: flag('sandbox_network', true),
  sandbox_env: names('sandbox_env'),
  sandbox_limits: limits<Config['sandbox_limits']>('sandbox_limits', {
    cpu_s: true,
    memory_mb: true,
    processes: true,
    file_size_mb: true,
    output_kb: true,
  }),
  auto_commit: flag('auto_commit', true), // keel would write to the user's branch
  stop_on_violation: flag('stop_on_violation', false),
  script: free, // the scripted provider's script: a model the gate treats as hostile anyway
  budgets: limits<Config['budgets']>('budgets', {
    max_rounds: true,
    max_tokens: true,
    max_cost_usd: true,
    max_wall_s: true,
    max_diff_lines: true,
  }),
  loop_threshold: limit('loop_threshold'),
  agents: limits<Config['agents']>('agents', { max_running: true, max_depth: true }),
  graph: free, // the repo map is context from files the read tools show anyway; budgets bound its cost
  compaction: free, // when older turns are summarized: context only, spending is bounded by the budgets
  fallback_models: fallbackModels,
  roles: anyChange('roles'), // a review model could send the diff to another host
  timeouts: limits<Config['timeouts']>('timeouts', { connect_s: true, first_token_s: true, idle_s: true }),
  retries: limit('retries', 'max'), // delays and cooldown only pace requests
  pricing,
  // a tier names an endpoint and a key variable, as base_url and api_key_env do; its prices are budgets' inputs
  routing: anyChange('routing'),
  // more injected memory is more of the user's stored notes in every request; the embedding model is on the same endpoint
  memory: limit('memory', 'inject_tokens'),
  max_output_tokens: free, // the size of one answer; budgets bound the total
  store: anyChange('store'), // would send runs and the ledger elsewhere; a project may not set it at all (load.ts)
  hub_project: anyChange('hub_project'), // which hub project the page shows; a project may not set it at all (load.ts)
  hub_audit_key_file: anyChange('hub_audit_key_file'), // the key runs are sealed with; a project may not set it at all (load.ts)
  temperature: free,
};

/** Every change from `before` to `after`, key by key, each an expansion or a narrowing. */
export function classifyChanges(before: Raw, after: Raw, root: string): KeyChange[] {
  const changes: KeyChange[] = [];
  const push: Push = (path, widened, detail) =>
    changes.push({ key: path.join('.'), path, kind: widened ? 'expansion' : 'narrowing', detail });
  const ctx = { root: realRoot(root) };
  for (const rule of Object.values(RULES)) rule(before, after, push, ctx);
  return changes;
}

/** The root as the OS resolves it (as given when it does not exist). */
export function realRoot(root: string): string {
  try {
    return realpathSync.native(root);
  } catch {
    return resolve(root);
  }
}

/** The defaults as a raw layer: what every comparison starts from. */
export function defaultValues(): Raw {
  return configSchema.parse({}) as unknown as Raw;
}

/** Deep-merge `over` onto a copy of `base`; arrays replace, as the config layers do. */
export function mergeValues(base: Raw, over: Raw): Raw {
  const out: Raw = structuredClone(base);
  for (const [key, value] of Object.entries(over)) {
    const current = out[key];
    out[key] = isRaw(value) && isRaw(current) ? mergeValues(current, value) : structuredClone(value);
  }
  return out;
}

/** A copy of `values` without the keys at `paths`. */
export function withoutPaths(values: Raw, paths: string[][]): Raw {
  const out: Raw = structuredClone(values);
  for (const path of paths) {
    let parent: unknown = out;
    for (const p of path.slice(0, -1)) parent = isRaw(parent) ? parent[p] : undefined;
    const last = path[path.length - 1];
    if (isRaw(parent) && last !== undefined) delete parent[last];
  }
  return out;
}

/** The path of every value in `values` that is no table (arrays are values): what merging it replaces. */
export function leafPaths(values: Raw, prefix: string[] = []): string[][] {
  // an empty table replaces nothing: it merges into what is there
  return Object.entries(values).flatMap(([key, value]) =>
    isRaw(value) ? leafPaths(value, [...prefix, key]) : [[...prefix, key]],
  );
}

/** Whether `values` sets the key at `path` itself (not through its prototype). */
export function hasPath(values: Raw, path: string[]): boolean {
  let v: unknown = values;
  for (const p of path) {
    if (!isRaw(v) || !Object.hasOwn(v, p)) return false;
    v = v[p];
  }
  return true;
}
