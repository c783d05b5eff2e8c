/**
 * The workspace root for a folder, found the way git finds a repository: walk up to the nearest folder
 * holding `.git` (a folder, or a file as in a linked worktree or a submodule). Outside any repository
 * the folder itself is the workspace. Only the filesystem is read: no git runs, so nothing a
 * repository configures can take part.
 *
 * The walk never widens the workspace into what someone else controls. It stops at the first `.git`,
 * whatever it points to; a `.git` (or the folder holding it) owned by another user is not adopted (git
 * calls that dubious ownership) unless the user's own git config lists it in `safe.directory`, so the
 * folder itself stays the workspace; it does not climb into
 * $HOME or above it from below (a dotfiles repository at ~ must not make every folder in $HOME one
 * workspace), nor into a folder named by GIT_CEILING_DIRECTORIES, nor across a filesystem boundary
 * unless GIT_DISCOVERY_ACROSS_FILESYSTEM is set, as git does.
 */
import { lstatSync, realpathSync, type Stats, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { userConfig } from '../policy/git-runner.js';
import { isInside } from '../policy/scope.js';
import { inertLine } from './inert.js';

export interface RootOptions {
  env?: NodeJS.ProcessEnv;
  /** The user whose folders may be adopted (default: this process's). */
  uid?: number;
}

/** The workspace root for `start`: the nearest enclosing repository's top, else `start` (canonical when it exists). */
export function findWorkspaceRoot(start: string, opts: RootOptions = {}): string {
  const env = opts.env ?? process.env;
  let dir: string;
  let stats: Stats;
  try {
    dir = realpathSync.native(start);
    stats = statSync(dir);
  } catch {
    // not there: the caller says so with its own error, naming what the user typed
    return resolve(start);
  }
  if (!stats.isDirectory()) return dir;
  const uid = opts.uid ?? process.getuid?.();
  const ceilings = ceilingDirs(env);
  const acrossFs = truthy(env.GIT_DISCOVERY_ACROSS_FILESYSTEM);
  for (let current = dir; ; ) {
    const marker = lstatSync(join(current, '.git'), { throwIfNoEntry: false });
    if (marker) return current === dir || ownedBy(current, marker, uid) || gitSafe(current) ? current : dir;
    const parent = dirname(current);
    if (parent === current || ceilings.has(parent)) return dir;
    const up = statSync(parent, { throwIfNoEntry: false });
    if (!up || (!acrossFs && up.dev !== stats.dev)) return dir;
    current = parent;
  }
}

/** Folders the walk does not climb into: $HOME, and GIT_CEILING_DIRECTORIES (absolute entries, as git reads them). */
function ceilingDirs(env: NodeJS.ProcessEnv): Set<string> {
  const dirs = new Set<string>();
  const add = (path: string) => {
    if (!isAbsolute(path)) return;
    dirs.add(resolve(path));
    try {
      dirs.add(realpathSync.native(path));
    } catch {
      // a ceiling that does not exist stops nothing
    }
  };
  add(env.HOME || homedir());
  for (const entry of (env.GIT_CEILING_DIRECTORIES ?? '').split(':')) if (entry) add(entry);
  return dirs;
}

/** Whether the user owns both the folder and its `.git`: a stranger's repository above us is not ours to widen into. */
function ownedBy(folder: string, marker: Stats, uid: number | undefined): boolean {
  if (uid === undefined) return true; // no owners to compare (Windows)
  const top = statSync(folder, { throwIfNoEntry: false });
  return top !== undefined && top.uid === uid && marker.uid === uid;
}

/** Whether the user's global git config vouches for a repository top (`safe.directory`: the path, `path/*` or `*`). */
function gitSafe(top: string): boolean {
  // read only here, for a stranger's repository: the common case starts no git at all
  return (userConfig().get('safe.directory') ?? []).some((entry) => {
    if (entry === '*') return true;
    if (entry.endsWith('/*')) return isInside(top, resolve(entry.slice(0, -2)));
    return isAbsolute(entry) && resolve(entry) === top;
  });
}

function truthy(value: string | undefined): boolean {
  return value !== undefined && /^(1|true|yes|on)$/i.test(value.trim());
}

/**
 * A path the user typed (resolved from where they stand, `from`), as the model names it: relative to
 * the workspace root. undefined when it lies outside the root. For `@path` mentions and the like.
 */
export function userPath(root: string, typed: string, from: string = process.cwd()): string | undefined {
  const absolute = resolve(from, typed);
  if (!isInside(absolute, root)) return undefined;
  return relative(root, absolute) || '.';
}

/** Project config files between `start` and the root it found (the root's own excluded): keel does not read them. */
export function skippedConfigs(start: string, root: string): string[] {
  const found: string[] = [];
  let dir: string;
  try {
    dir = realpathSync.native(start);
  } catch {
    return found;
  }
  for (; dir !== root && isInside(dir, root); dir = dirname(dir))
    for (const name of ['keel.toml', join('.keel', 'config.toml')])
      if (lstatSync(join(dir, name), { throwIfNoEntry: false })) found.push(join(dir, name));
  return found;
}

/**
 * The workspace: the top of the git repository holding -C/--cwd (else the current folder), or that
 * folder itself outside any repository (findWorkspaceRoot above says where the walk stops). The process keeps
 * its own working folder, so paths the user types still resolve from where they stand.
 */
export function workspace(flags: { cwd?: string }): string {
  const start = resolve(flags.cwd ?? process.cwd());
  const root = findWorkspaceRoot(start);
  // a subfolder's keel.toml used to apply from that folder: say once that the root's is the one read
  if (root !== start && !warnedSkipped) {
    const skipped = skippedConfigs(start, root);
    if (skipped.length) {
      warnedSkipped = true;
      process.stderr.write(
        `keel: warning: not reading ${skipped.map(inertLine).join(', ')}: the workspace is the repository root ${inertLine(root)}, and its project config is the one keel reads\n`,
      );
    }
  }
  return root;
}

let warnedSkipped = false;
