/**
 * File operations for undo that never follow a link: every path keel saved was canonical (no symlink in
 * it), so a symlink that now sits among its parents was put there since, and a write or delete through it
 * would land elsewhere. Such a path is refused and named; the final component is never followed either.
 */
import {
  closeSync,
  constants,
  fchmodSync,
  lstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  rmdirSync,
  rmSync,
  type Stats,
  writeSync,
} from 'node:fs';
import { dirname, parse, sep } from 'node:path';
import { isInside } from './scope.js';

/** A path undo will not touch because it now leads somewhere else. */
export class LinkedPath extends Error {
  override name = 'LinkedPath';
}

/** Whether each folder on a path is a real folder (true), missing (false); links throw. Shared per plan. */
export type ParentCache = Map<string, boolean>;

/**
 * Throws LinkedPath when a folder above `path` (from the filesystem root down, so the workspace root
 * itself too) is a symlink, or when `path` is not inside `root`. Missing folders are fine: undo creates them.
 */
export function checkParents(path: string, root: string, cache: ParentCache = new Map()): void {
  if (!isInside(path, root) || path === root) {
    throw new LinkedPath(`${path} is not inside ${root}`);
  }
  const top = parse(path).root;
  const parts = dirname(path).slice(top.length).split(sep).filter(Boolean);
  let dir = top;
  for (const part of parts) {
    dir = dir === top ? `${top}${part}` : `${dir}${sep}${part}`;
    let exists = cache.get(dir);
    if (exists === undefined) {
      const st = lstatOrUndefined(dir);
      if (st?.isSymbolicLink()) {
        throw new LinkedPath(`${path}: ${dir} is now a symbolic link, so the path leads somewhere else`);
      }
      exists = st !== undefined;
      cache.set(dir, exists);
    }
    if (!exists) return; // nothing below a missing folder exists yet
  }
}

/** Remove `path` (never following it), then the folders that leaves empty, up to `stop` (exclusive). */
export function removeNoFollow(path: string, stop: string, root: string): void {
  checkParents(path, root);
  // rm on the last component removes a link itself, never what it points at
  rmSync(path, { force: true });
  for (let dir = dirname(path); dir !== stop && isInside(dir, stop); dir = dirname(dir)) {
    try {
      rmdirSync(dir);
    } catch {
      return; // not empty: something else lives there
    }
  }
}

/**
 * Write `copy`'s bytes to `path` as a new file with `mode`: missing folders are made one at a time and
 * checked, whatever is at `path` (a link, or a hard link shared with a file elsewhere) is unlinked first,
 * and the file is created with O_EXCL | O_NOFOLLOW, so no byte lands outside `root`.
 */
export function restoreNoFollow(path: string, copy: string, mode: number, root: string): void {
  checkParents(path, root);
  makeParents(path, root);
  const st = lstatOrUndefined(path);
  if (st && !st.isDirectory()) rmSync(path);
  const fd = openSync(
    path,
    constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
    mode & 0o777,
  );
  try {
    const data = readFileSync(copy);
    for (let done = 0; done < data.length; ) done += writeSync(fd, data, done);
    // the umask trimmed the mode open set; the saved one is exact
    fchmodSync(fd, mode);
  } finally {
    closeSync(fd);
  }
}

// mkdir one level at a time: a recursive mkdir would follow a link that appeared above the path
function makeParents(path: string, root: string): void {
  const missing: string[] = [];
  for (let dir = dirname(path); !lstatOrUndefined(dir); dir = dirname(dir)) {
    if (dir === dirname(dir)) break;
    missing.unshift(dir);
  }
  for (const dir of missing) {
    mkdirSync(dir);
    checkParents(`${dir}${sep}x`, root);
  }
}

function lstatOrUndefined(path: string): Stats | undefined {
  try {
    return lstatSync(path);
  } catch {
    return undefined;
  }
}
