/**
 * The safety net's snapshot: the work tree (tracked changes, deletions and untracked files, not ignored
 * ones) as a git tree, built path by path in a temporary index. Nested repositories, paths git refuses,
 * special files and huge files are left out and named, so none of them can break or stall a snapshot.
 */
import { accessSync, constants, copyFileSync, lstatSync, type Stats, utimesSync } from 'node:fs';
import { join } from 'node:path';
import { git, nul, readTree, withTempIndex } from './git.js';

/** A path the snapshot left out (repo-relative, a nested repository ends in `/`), and why. */
export interface SkippedPath {
  path: string;
  reason: string;
}

/** How much a snapshot hashes: files over `maxFileBytes`, and files past `maxTotalBytes` in all, are skipped. */
export interface SnapshotLimits {
  maxFileBytes: number;
  maxTotalBytes: number;
}

const MB = 1024 * 1024;

/** 64 MB a file, 256 MB in all: hashing and compressing more would stall the first write for seconds. */
export const DEFAULT_SNAPSHOT_LIMITS: SnapshotLimits = { maxFileBytes: 64 * MB, maxTotalBytes: 256 * MB };

/** What snapshotTree built: the tree, and what it left out. */
export interface Snapshot {
  tree: string;
  skipped: SkippedPath[];
}

// git's verify_path with core.protectNTFS (on by default): `.git` in any case, with trailing dots or
// spaces, an NTFS stream suffix, or its 8.3 name; update-index skips these, so say so
const GIT_REFUSES = /(?:^|\/)(?:\.git|git~1)[. ]*(?::[^/]*)?(?:\/|$)/i;

// seen from the repository's config and attributes: none of these ever runs a program the repository names
// (git.ts neutralizes filters and hooks; fsmonitor is off here as well, since it is consulted on every scan)
const SCAN = ['-c', 'core.fsmonitor=false'];

/**
 * The tree of the work tree as `git add -A` would record it, built in a temporary index that starts as a
 * copy of the user's (its stat data tells git which files are unchanged, so only changed and untracked
 * ones are hashed) or, without one, as HEAD. The user's index, stash and files are never touched.
 */
export function snapshotTree(
  repo: string,
  head: string | null,
  limits: SnapshotLimits = DEFAULT_SNAPSHOT_LIMITS,
): Snapshot {
  return withTempIndex((index) => {
    // --ignore-submodules=all: a submodule stays as the index records it, and git never looks inside it
    let changed: string;
    if (copyUserIndex(repo, index)) {
      changed = git(repo, [...SCAN, 'diff-files', '-z', '--name-only', '--ignore-submodules=all'], { index });
    } else if (head) {
      readTree(repo, index, head);
      changed = git(repo, [...SCAN, 'diff-index', '-z', '--name-only', '--ignore-submodules=all', head]);
    } else changed = git(repo, [...SCAN, 'ls-files', '-z', '--cached']);
    const untracked = git(repo, [...SCAN, 'ls-files', '-z', '--others', '--exclude-standard'], { index });
    const sorted = sortPaths(repo, [...split(changed), ...split(untracked)], limits);
    if (sorted.remove.length) {
      git(repo, ['update-index', '--force-remove', '-z', '--stdin'], { index, input: nul(sorted.remove) });
    }
    if (sorted.add.length) {
      git(repo, ['update-index', '--add', '--remove', '-z', '--stdin'], { index, input: nul(sorted.add) });
    }
    return { tree: git(repo, ['write-tree'], { index }).trim(), skipped: sorted.skipped };
  });
}

/**
 * Copy the user's index (a plain `.git/index` only) to `index`, with its mtime floored to the second:
 * git trusts an entry's stat data only when the entry is older than the index file, so a copy stamped
 * "now" would make a file changed in the same second as the index look clean (racy git; measured: a
 * plain copy missed such a change 5 times in 5, the floored copy none). Returns false when there is none.
 */
function copyUserIndex(repo: string, index: string): boolean {
  const own = join(repo, '.git', 'index');
  const st = lstatOrUndefined(own);
  if (!st?.isFile() || !lstatOrUndefined(join(repo, '.git'))?.isDirectory()) return false;
  try {
    copyFileSync(own, index);
  } catch {
    return false;
  }
  const second = Math.floor(st.mtimeMs / 1000);
  utimesSync(index, second, second);
  return true;
}

function split(out: string): string[] {
  return out.split('\0').filter(Boolean);
}

interface Sorted {
  /** Paths whose work-tree state update-index records (content, mode, link, or absence). */
  add: string[];
  /** Paths that are gone as git sees them: a folder now, or beneath a link or a file. */
  remove: string[];
  skipped: SkippedPath[];
}

/** Decide, per candidate path, how the snapshot records it; each check is an lstat, no content is read. */
function sortPaths(repo: string, paths: string[], limits: SnapshotLimits): Sorted {
  const sorted: Sorted = { add: [], remove: [], skipped: [] };
  const dirs = new Map<string, boolean>();
  let total = 0;
  for (const path of new Set(paths)) {
    // an untracked folder holding its own .git: a nested repository, its owner's to keep
    if (path.endsWith('/')) {
      sorted.skipped.push({ path, reason: 'a nested repository (left to its owner)' });
      continue;
    }
    if (GIT_REFUSES.test(path)) {
      sorted.skipped.push({ path, reason: 'git refuses this path name' });
      continue;
    }
    if (!parentsAreDirs(repo, path, dirs)) {
      sorted.remove.push(path);
      continue;
    }
    const st = lstatOrUndefined(join(repo, path));
    if (!st || st.isDirectory()) sorted.remove.push(path);
    else if (st.isSymbolicLink()) sorted.add.push(path);
    else {
      const reason = whyNot(st, join(repo, path), total, limits);
      if (reason) {
        // out of the snapshot altogether (a tracked one too), so undo can tell it was never saved
        sorted.skipped.push({ path, reason });
        sorted.remove.push(path);
        continue;
      }
      total += st.size;
      sorted.add.push(path);
    }
  }
  return sorted;
}

function whyNot(st: Stats, path: string, total: number, limits: SnapshotLimits): string | undefined {
  if (!st.isFile()) return 'not a regular file';
  if (st.size > limits.maxFileBytes) return `larger than ${size(limits.maxFileBytes)} (${size(st.size)})`;
  if (total + st.size > limits.maxTotalBytes)
    return `past the snapshot's ${size(limits.maxTotalBytes)} total`;
  if (!readable(path)) return 'not readable';
  return undefined;
}

// git refuses a path beneath a symlink ("beyond a symbolic link"); such a path is gone from the work tree
function parentsAreDirs(repo: string, path: string, dirs: Map<string, boolean>): boolean {
  const parts = path.split('/');
  for (let i = 1; i < parts.length; i++) {
    const dir = parts.slice(0, i).join('/');
    let ok = dirs.get(dir);
    if (ok === undefined) {
      ok = lstatOrUndefined(join(repo, dir))?.isDirectory() ?? false;
      dirs.set(dir, ok);
    }
    if (!ok) return false;
  }
  return true;
}

function lstatOrUndefined(path: string): Stats | undefined {
  try {
    return lstatSync(path);
  } catch {
    return undefined;
  }
}

function readable(path: string): boolean {
  try {
    accessSync(path, constants.R_OK);
    return true;
  } catch {
    return false;
  }
}

function size(bytes: number): string {
  if (bytes >= 1024 * MB) return `${(bytes / (1024 * MB)).toFixed(1)} GB`;
  return `${Math.round(bytes / MB)} MB`;
}
