/** Project trust: values a repository's own config could use to widen what keel may do take effect only once the user trusts that file. */
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { Raw } from './load.js';
import {
  classifyChanges,
  defaultValues,
  inside,
  mergeValues,
  type PermissionChange,
  realRoot,
  realScopeEntry,
  withoutPaths,
} from './narrowing.js';

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

/**
 * What an untrusted project layer may not do: every value that widens the config below it
 * (`base`: defaults and the user's file), key by key. Narrowing values are not listed.
 */
export function gatedKeys(values: Raw, root: string, base: Raw = defaultValues()): string[] {
  return [...new Set(widening(values, root, base).map((c) => c.key))];
}

function widening(values: Raw, root: string, base: Raw) {
  return classifyChanges(base, mergeValues(base, values), root).filter((c) => c.kind === 'expansion');
}

/** A project layer without its widening values (narrowing ones stay), and the keys that were dropped. */
export function withoutGatedKeys(
  values: Raw,
  root: string,
  base: Raw = defaultValues(),
): { values: Raw; dropped: string[] } {
  const widened = widening(values, root, base);
  // scope and hooks are lists: a list is taken whole or not at all
  return {
    values: withoutPaths(
      values,
      widened.map((c) => c.path),
    ),
    dropped: [...new Set(widened.map((c) => c.key))],
  };
}

export type { PermissionChange };

/**
 * Every permission a project config change widens or narrows, key by key, as the loader would
 * gate it. Scope entries are compared where they really lead; an entry of `before` that leads out
 * of the repository is not taken as granted, since the link may be new.
 */
export function permissionChanges(before: Raw, after: Raw, root: string): PermissionChange[] {
  const real = realRoot(root);
  const granted = Array.isArray(before.scope)
    ? before.scope.filter((e) => {
        if (typeof e !== 'string') return false;
        const where = realScopeEntry(e, real);
        return where !== undefined && inside(where, real);
      })
    : undefined;
  const clipped = granted === undefined ? before : { ...before, scope: granted };
  return classifyChanges(clipped, after, root).map(({ key, kind, detail }) => ({ key, kind, detail }));
}
