/** Project trust: keys a repository's own config could use to widen what keel may do take effect only once the user trusts that file. */
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, isAbsolute, relative, resolve } from 'node:path';
import type { Raw } from './load.js';

/** Keys that widen trust. A project file's values for these are ignored until `keel trust`. */
export const TRUST_KEYS = [
  'hooks', // run programs
  'allow_shell', // unsandboxed shell
  'sandbox', // could turn the sandbox off
  'sandbox_network',
  'sandbox_limits',
  'base_url', // could send the code (and the API key) to another host
  'api_key_env',
  'fallback_models',
  'roles', // a review model could send the diff to another host
  'permission', // the mode `keel -m` runs in
  'scope', // only entries outside the repository need trust; see gatedKeys
] as const;

function hashText(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** sha256 of a file's bytes. */
export function fileHash(path: string): string {
  return hashText(readFileSync(path, 'utf8'));
}

type TrustStore = Record<string, string>;

function readStore(storePath: string): TrustStore {
  try {
    return JSON.parse(readFileSync(storePath, 'utf8')) as TrustStore;
  } catch {
    return {};
  }
}

/** Record that the user trusts `file` as it is now. */
export function trustFile(file: string, storePath: string): string {
  const store = readStore(storePath);
  const hash = fileHash(file);
  store[resolve(file)] = hash;
  mkdirSync(dirname(storePath), { recursive: true });
  const tmp = `${storePath}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(store, null, 2)}\n`, { mode: 0o600 });
  renameSync(tmp, storePath);
  return hash;
}

export type TrustState = 'trusted' | 'untrusted' | 'changed';

/** Whether the user trusts `file` as it is now ('changed' when it was trusted with other contents). */
export function trustState(file: string, storePath: string): TrustState {
  const recorded = readStore(storePath)[resolve(file)];
  if (!recorded) return 'untrusted';
  return recorded === fileHash(file) ? 'trusted' : 'changed';
}

function scopeLeavesRoot(entry: unknown, root: string): boolean {
  if (typeof entry !== 'string') return true;
  const rel = relative(root, resolve(root, entry));
  return rel === '..' || rel.startsWith('../') || isAbsolute(rel);
}

/** The trust-gated keys a project layer sets (scope only when an entry leaves the repository). */
export function gatedKeys(values: Raw, root: string): string[] {
  return TRUST_KEYS.filter((key) => {
    if (!(key in values)) return false;
    if (key === 'scope')
      return Array.isArray(values.scope) ? values.scope.some((e) => scopeLeavesRoot(e, root)) : true;
    return true;
  });
}

/** A project layer without its trust-gated keys, and the keys that were dropped. */
export function withoutGatedKeys(values: Raw, root: string): { values: Raw; dropped: string[] } {
  const dropped = gatedKeys(values, root);
  const kept: Raw = {};
  for (const [k, v] of Object.entries(values)) if (!dropped.includes(k)) kept[k] = v;
  return { values: kept, dropped };
}

export interface PermissionChange {
  key: string;
  kind: 'expansion' | 'narrowing';
  detail: string;
}

const SANDBOX_STRENGTH: Record<string, number> = { none: 0, docker: 2, bwrap: 2, auto: 2 };
const MODE_RANK: Record<string, number> = { ask: 0, plan: 0, edit: 1, auto: 2 };

const show = (v: unknown) => (v === undefined ? '(unset)' : JSON.stringify(v));

/** Every permission a config change widens or narrows, key by key. */
export function permissionChanges(before: Raw, after: Raw): PermissionChange[] {
  const changes: PermissionChange[] = [];
  const push = (key: string, widened: boolean, detail: string) =>
    changes.push({ key, kind: widened ? 'expansion' : 'narrowing', detail });

  const bool = (key: string) => {
    const a = before[key] === true;
    const b = after[key] === true;
    if (a !== b) push(key, b, `${key}: ${show(before[key])} -> ${show(after[key])}`);
  };
  bool('allow_shell');
  bool('sandbox_network');

  const sa = SANDBOX_STRENGTH[String(before.sandbox ?? 'auto')] ?? 2;
  const sb = SANDBOX_STRENGTH[String(after.sandbox ?? 'auto')] ?? 2;
  if (sa !== sb) push('sandbox', sb < sa, `sandbox: ${show(before.sandbox)} -> ${show(after.sandbox)}`);

  const ma = MODE_RANK[String(before.permission ?? 'ask')] ?? 0;
  const mb = MODE_RANK[String(after.permission ?? 'ask')] ?? 0;
  if (ma !== mb)
    push('permission', mb > ma, `permission: ${show(before.permission)} -> ${show(after.permission)}`);

  for (const key of ['base_url', 'api_key_env'] as const) {
    if (after[key] !== before[key] && after[key] !== undefined)
      push(key, true, `${key}: ${show(before[key])} -> ${show(after[key])}`);
  }

  setDiff('hooks', before.hooks, after.hooks, push);
  setDiff('scope', before.scope ?? ['.'], after.scope ?? ['.'], push);
  setDiff('fallback_models', before.fallback_models, after.fallback_models, push);

  const ba = (before.budgets ?? {}) as Raw;
  const bb = (after.budgets ?? {}) as Raw;
  for (const key of new Set([...Object.keys(ba), ...Object.keys(bb)])) {
    const a = typeof ba[key] === 'number' ? (ba[key] as number) : Number.POSITIVE_INFINITY;
    const b = typeof bb[key] === 'number' ? (bb[key] as number) : Number.POSITIVE_INFINITY;
    if (a !== b) push(`budgets.${key}`, b > a, `budgets.${key}: ${show(ba[key])} -> ${show(bb[key])}`);
  }
  return changes;
}

function setDiff(
  key: string,
  before: unknown,
  after: unknown,
  push: (key: string, widened: boolean, detail: string) => void,
): void {
  const list = (v: unknown) => (Array.isArray(v) ? v.map((x) => JSON.stringify(x)) : []);
  const a = new Set(list(before));
  const b = new Set(list(after));
  for (const item of b) if (!a.has(item)) push(key, true, `${key}: added ${item}`);
  for (const item of a) if (!b.has(item)) push(key, false, `${key}: removed ${item}`);
}
