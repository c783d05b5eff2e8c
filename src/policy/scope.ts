/** Scope: canonical paths (symlinks resolved) checked against the workspace and the writable scope. */
import { lstatSync, realpathSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import type { Access } from './effects.js';
import { protectedKind } from './protected-names.js';

/** A path the session may not touch; its message goes back to the model. */
export class ScopeError extends Error {
  override name = 'ScopeError';
  constructor(
    message: string,
    readonly path: string,
    readonly canonical?: string,
  ) {
    super(message);
  }
}

/**
 * Resolve a path the way the OS will when it is opened: relative to `root`, `..` folded,
 * and every symlink in the existing part of the path followed. The part that does not exist
 * yet cannot be a symlink, so it is appended as written.
 */
export function canonicalize(path: string, root: string): string {
  if (path.includes('\0')) throw new ScopeError('path contains a NUL byte', path);
  const absolute = resolve(root, path);
  const pending: string[] = [];
  let current = absolute;
  for (;;) {
    try {
      const real = realpathSync.native(current);
      return pending.length ? join(real, ...pending.reverse()) : real;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ELOOP') throw new ScopeError('path has a symlink loop', path);
      // a dangling symlink: where it points is where a write would land, and we cannot know that safely
      if (code === 'ENOENT' && isSymlink(current)) throw new ScopeError('path is a dangling symlink', path);
      if (code !== 'ENOENT' && code !== 'ENOTDIR') throw err;
      const parent = dirname(current);
      if (parent === current) return absolute;
      pending.push(basename(current));
      current = parent;
    }
  }
}

function canonicalOrSelf(path: string, root: string): string {
  try {
    return canonicalize(path, root);
  } catch {
    return resolve(root, path);
  }
}

function isSymlink(path: string): boolean {
  try {
    return lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
}

/** True when `child` is `parent` or inside it (both canonical). */
export function isInside(child: string, parent: string): boolean {
  const rel = relative(parent, child);
  return rel === '' || (!rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel));
}

export interface ScopeOptions {
  /** The workspace root; reads are allowed inside it. */
  root: string;
  /** Writable paths relative to the root (or absolute). */
  writable: string[];
  /** Extra folders that are never writable (keel's own state, for one). */
  protectedDirs?: string[];
  /** Files that are never writable, with why: the programs keel's config runs on the host. */
  protectedFiles?: ReadonlyArray<{ path: string; why: string }>;
}

/** The canonical workspace and writable scope of a session; the model cannot change it. */
export class Scope {
  readonly root: string;
  readonly writable: string[];
  private readonly protectedDirs: string[];
  private readonly protectedFiles: ReadonlyArray<{ path: string; why: string }>;

  constructor(opts: ScopeOptions) {
    this.root = realpathSync.native(opts.root);
    this.writable = opts.writable.map((p) => canonicalize(p, this.root));
    this.protectedDirs = (opts.protectedDirs ?? []).map((p) => canonicalize(p, this.root));
    // where a write through the name (or a link to it) would land, the name itself when that cannot be known
    this.protectedFiles = (opts.protectedFiles ?? []).map((f) => ({
      ...f,
      path: canonicalOrSelf(f.path, this.root),
    }));
  }

  /** The same workspace and protected paths with other writable paths (a subagent's scope; the caller checks it is narrower). */
  withWritable(writable: string[]): Scope {
    return new Scope({
      root: this.root,
      writable,
      protectedDirs: this.protectedDirs,
      protectedFiles: this.protectedFiles,
    });
  }

  /** Canonicalize and check a path; throws ScopeError when the access is not allowed. */
  resolve(path: string, access: Access): string {
    const canonical = canonicalize(path, this.root);
    const shown = this.display(canonical);
    if (access === 'read') {
      const readable = [this.root, ...this.writable].some((dir) => isInside(canonical, dir));
      if (!readable)
        throw new ScopeError(`${path} resolves to ${canonical}, outside the workspace`, path, canonical);
      return canonical;
    }
    if (!this.writable.some((dir) => isInside(canonical, dir))) {
      throw new ScopeError(`${path} resolves to ${shown}, outside the writable scope`, path, canonical);
    }
    const why = this.protectedReason(canonical);
    if (why) throw new ScopeError(`${path} is protected: ${why}`, path, canonical);
    return canonical;
  }

  /** A workspace-relative path for people and the model (absolute when outside). */
  display(canonical: string): string {
    return isInside(canonical, this.root) ? relative(this.root, canonical) || '.' : canonical;
  }

  private protectedReason(canonical: string): string | undefined {
    for (const dir of this.protectedDirs) if (isInside(canonical, dir)) return "keel's own state";
    for (const file of this.protectedFiles) if (canonical === file.path) return file.why;
    // every spelling a filesystem may fold into `.git` (case, trailing dots, 8.3, NTFS streams), at any depth
    const parts = relative(this.root, canonical).split(sep);
    if (parts.some((p) => protectedKind(p) === 'git')) return 'git internals (.git/)';
    // keel reads its project config from the folder it starts in: the workspace, or a writable folder
    // someone may start keel in later; deeper copies (fixtures, examples) are ordinary files
    for (const top of [this.root, ...this.writable]) {
      if (!isInside(canonical, top) || canonical === top) continue;
      const first = relative(top, canonical).split(sep)[0] ?? '';
      if (protectedKind(first) === 'keel') return "keel's project config (keel.toml, .keel/)";
    }
    return undefined;
  }
}

/** Why a scope entry is no path inside the repository (absolute, `..`, a NUL, a leading `-`), or undefined. */
export function scopeProblem(path: string): string | undefined {
  if (path.includes('\0')) return `${JSON.stringify(path)} holds a NUL byte`;
  if (isAbsolute(path)) return `${path} is absolute: a scope is relative to the repository`;
  if (path.split(/[\\/]+/).includes('..')) return `${path} climbs out with ..`;
  if (path.startsWith('-')) return `${path} starts with -`;
  return undefined;
}
