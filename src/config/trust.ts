/** Project trust: values a repository's own config could use to widen what keel may do take effect only once the user trusts that file. */
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { ConfigFile, Raw } from './load.js';
import {
  classifyChanges,
  defaultValues,
  hasPath,
  inside,
  type KeyChange,
  leafPaths,
  mergeValues,
  type PermissionChange,
  realRoot,
  realScopeEntry,
  withoutPaths,
} from './narrowing.js';
import type { Program } from './programs.js';

function hashText(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** sha256 of a file's bytes. */
export function fileHash(path: string): string {
  return hashText(readFileSync(path, 'utf8'));
}

/** What `keel trust` recorded for a config file: its hash, and the programs it runs with theirs (null: absent). */
interface TrustRecord {
  sha256: string;
  programs: Record<string, string | null>;
}

// a record written before programs were part of trust is a bare hash: it vouches for no program
type TrustStore = Record<string, string | TrustRecord>;

function readStore(storePath: string): TrustStore {
  try {
    return JSON.parse(readFileSync(storePath, 'utf8')) as TrustStore;
  } catch {
    return {};
  }
}

function recordOf(entry: string | TrustRecord | undefined): TrustRecord | undefined {
  if (entry === undefined) return undefined;
  return typeof entry === 'string'
    ? { sha256: entry, programs: {} }
    : { ...entry, programs: entry.programs ?? {} };
}

/** Record that the user trusts `file` as it is now, and the programs it runs (`programs`, hashed by the caller). */
export function trustFile(file: string, storePath: string, programs: readonly Program[] = []): string {
  const store = readStore(storePath);
  const hash = fileHash(file);
  store[resolve(file)] = {
    sha256: hash,
    programs: Object.fromEntries(programs.map((p) => [p.path, p.sha256])),
  };
  mkdirSync(dirname(storePath), { recursive: true });
  const tmp = `${storePath}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(store, null, 2)}\n`, { mode: 0o600 });
  renameSync(tmp, storePath);
  return hash;
}

/** The sha256 `keel trust` recorded for a file (a workflow, a skill's SKILL.md), if any: a caller that hashes the text it read compares against it. */
export function trustedHash(file: string, storePath: string): string | undefined {
  return recordOf(readStore(storePath)[resolve(file)])?.sha256;
}

export type TrustState = 'trusted' | 'untrusted' | 'changed';

export interface TrustCheck {
  state: TrustState;
  /** Programs the file runs that are not as trusted (changed, created, removed, or never recorded). */
  changed: Program[];
}

/**
 * Whether the user trusts `file` as it is now, and the programs it runs as they are now: 'changed' when
 * the file was trusted with other contents, or one of its programs differs from the one trusted with it.
 */
export function trustCheck(file: string, storePath: string, programs: readonly Program[] = []): TrustCheck {
  const record = recordOf(readStore(storePath)[resolve(file)]);
  if (!record) return { state: 'untrusted', changed: [] };
  if (record.sha256 !== fileHash(file)) return { state: 'changed', changed: [] };
  const changed = programs.filter(
    (p) => !(p.path in record.programs) || record.programs[p.path] !== p.sha256,
  );
  return { state: changed.length ? 'changed' : 'trusted', changed };
}

/**
 * What an untrusted project layer may not do: every value that widens the config below it
 * (`base`: defaults and the user's file), key by key, its `[profiles.NAME]` entries as
 * `profiles.NAME.key`. Narrowing values are not listed.
 */
export function gatedKeys(values: Raw, root: string, base: Raw = defaultValues()): string[] {
  const { top, profiles } = splitRaw(values);
  const keys = widening(top, root, base).map((c) => c.key);
  for (const [name, body] of profiles)
    keys.push(...widening(body, root, base).map((c) => `profiles.${name}.${c.key}`));
  return [...new Set(keys)];
}

/** A raw file's top level and its well-formed `[profiles.NAME]` tables (the loader names malformed ones). */
function splitRaw(values: Raw): { top: Raw; profiles: Map<string, Raw> } {
  const { profiles, ...top } = values;
  const tables = new Map<string, Raw>();
  if (isTable(profiles))
    for (const [name, body] of Object.entries(profiles)) if (isTable(body)) tables.set(name, body);
  return { top, profiles: tables };
}

function isTable(v: unknown): v is Raw {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Date);
}

function widening(values: Raw, root: string, base: Raw) {
  return classifyChanges(base, mergeValues(base, values), root).filter((c) => c.kind === 'expansion');
}

export type { PermissionChange };

/**
 * Every permission a project config change widens or narrows, key by key, as the loader would
 * gate it. Scope entries are compared where they really lead; an entry of `before` that leads out
 * of the repository is not taken as granted, since the link may be new.
 */
export function permissionChanges(before: Raw, after: Raw, root: string): PermissionChange[] {
  const b = splitRaw(before);
  const a = splitRaw(after);
  const changes = compareLayers(b.top, a.top, root);
  // each profile against its own earlier text: what it sets, where unset keys mean their defaults
  for (const name of new Set([...b.profiles.keys(), ...a.profiles.keys()]))
    for (const c of compareLayers(b.profiles.get(name) ?? {}, a.profiles.get(name) ?? {}, root))
      changes.push({ ...c, key: `profiles.${name}.${c.key}`, detail: `profiles.${name}.${c.detail}` });
  return changes;
}

function compareLayers(before: Raw, after: Raw, root: string): PermissionChange[] {
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

/** What an untrusted project may contribute once everything that would widen the user's own config is dropped. */
export interface GatedProject {
  /** Its top-level values that apply. */
  values: Raw;
  /** The profile in force: the project's choice when that widens nothing, else the user's. */
  profile?: string;
  /** The project's entries for that profile that apply. */
  profileValues: Raw;
  /** Dotted keys ignored: `profile` for its choice, `profiles.NAME.key` for its profile's entries. */
  dropped: string[];
}

type FileParts = Pick<ConfigFile, 'values' | 'profile' | 'profiles'>;

/**
 * Gate an untrusted project, profiles included, with the rule its top level always had: it may
 * narrow the user's own config (defaults, user file, the user's entries for the profile in force),
 * never widen it. Its choice of profile is taken only when the outcome is no wider than the
 * profile the user chose (`named` by flag or env, else the user file's); `named` always wins.
 */
export function gateUntrustedProject(
  project: FileParts,
  user: FileParts | undefined,
  named: string | undefined,
  root: string,
): GatedProject {
  const userBase = mergeValues(defaultValues(), user?.values ?? {});
  const entries = (file: FileParts | undefined, name: string | undefined) =>
    (name !== undefined && file?.profiles.get(name)) || {};
  const attempt = (name: string | undefined) => {
    const mine = entries(user, name);
    const kept = narrowOnly(
      project.values,
      entries(project, name),
      mine,
      mergeValues(userBase, mine),
      root,
      name,
    );
    const result = mergeValues(mergeValues(mergeValues(userBase, kept.values), mine), kept.profileValues);
    return { ...kept, profile: name, result };
  };
  const own = named ?? user?.profile;
  const theirs = named === undefined ? project.profile : undefined;
  if (theirs === undefined || theirs === own) return withoutResult(attempt(own));
  const taken = attempt(theirs);
  const wider = classifyChanges(mergeValues(userBase, entries(user, own)), taken.result, root).some(
    (c) => c.kind === 'expansion',
  );
  if (!wider) return withoutResult(taken);
  const kept = attempt(own);
  return withoutResult({ ...kept, dropped: ['profile', ...kept.dropped] });
}

function withoutResult({ result: _, ...gated }: GatedProject & { result: Raw }): GatedProject {
  return gated;
}

/**
 * Drop from a project's top level (`values`) and its profile entries (`profile`) every value that
 * widens `base`, judged together as they apply: the profile over the top level, and the top level
 * only where the user's profile entries (`shadow`) leave it in force. Dropping a profile entry can
 * bring the top-level value beneath it back into force, so this repeats until nothing widens.
 */
function narrowOnly(
  values: Raw,
  profile: Raw,
  shadow: Raw,
  base: Raw,
  root: string,
  name: string | undefined,
): { values: Raw; profileValues: Raw; dropped: string[] } {
  const shadowed = leafPaths(shadow);
  const dropped: string[] = [];
  let top = values;
  let entries = profile;
  for (;;) {
    const applied = mergeValues(withoutPaths(top, shadowed), entries);
    const widened: KeyChange[] = widening(applied, root, base);
    if (!widened.length) return { values: top, profileValues: entries, dropped: [...new Set(dropped)] };
    const inProfile = (c: KeyChange) => hasPath(entries, c.path);
    dropped.push(...widened.map((c) => (inProfile(c) ? `profiles.${name}.${c.key}` : c.key)));
    // scope and hooks are lists: a list is taken whole or not at all
    const nextEntries = withoutPaths(
      entries,
      widened.filter(inProfile).map((c) => c.path),
    );
    const nextTop = withoutPaths(
      top,
      widened.filter((c) => !inProfile(c)).map((c) => c.path),
    );
    // a widening that no value of the project's explains (not expected): take none of them
    if (JSON.stringify([nextTop, nextEntries]) === JSON.stringify([top, entries]))
      return { values: {}, profileValues: {}, dropped: [...new Set(dropped)] };
    top = nextTop;
    entries = nextEntries;
  }
}

/** Record that the user trusts these files with these contents (hashed by the caller, as keel read them). */
export function trustHashes(
  entries: ReadonlyArray<{ path: string; sha256: string }>,
  storePath: string,
): void {
  if (!entries.length) return;
  const store = readStore(storePath);
  for (const e of entries) store[resolve(e.path)] = { sha256: e.sha256, programs: {} };
  mkdirSync(dirname(storePath), { recursive: true });
  const tmp = `${storePath}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(store, null, 2)}\n`, { mode: 0o600 });
  renameSync(tmp, storePath);
}
