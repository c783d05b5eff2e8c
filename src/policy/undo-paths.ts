/**
 * File operations for undo that never follow a link: every path keel saved was canonical (no symlink in
 * it), so a symlink that now sits among its parents was put there since, and a write or delete through it
 * would land elsewhere. Such a path is refused and named; the final component is never followed either,
 * and the write or delete itself happens in a held folder (held-path.ts), so the check holds at the use.
 */
import {
  closeSync,
  constants,
  fchmodSync,
  lstatSync,
  openSync,
  readFileSync,
  rmdirSync,
  rmSync,
  type Stats,
  writeSync,
} from 'node:fs';
import { basename, dirname, parse, sep } from 'node:path';
import { HeldDir } from './held-path.js';
import { isInside, ScopeError } from './scope.js';

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
  const dir = heldParent(path, false);
  if (!dir) return; // its folder is gone, and the file with it
  try {
    // rm on the last component removes a link itself, never what it points at
    rmSync(dir.at(basename(path)), { force: true });
  } finally {
    dir.close();
  }
  for (let parent = dirname(path); parent !== stop && isInside(parent, stop); parent = dirname(parent)) {
    try {
      rmdirSync(parent);
    } catch {
      return; // not empty (or not a folder): something else lives there
    }
  }
}

/**
 * Write `copy`'s bytes to `path` as a new file with `mode`. The folder is reached through held folders
 * (held-path.ts: missing ones made one at a time, a symlink on the way refused, also one that appears
 * while undo works), whatever is at `path` (a link, or a hard link shared with a file elsewhere) is
 * unlinked first, and the file is created with O_EXCL | O_NOFOLLOW in the held folder, so no byte lands
 * outside `root`.
 */
export function restoreNoFollow(path: string, copy: string, mode: number, root: string): void {
  checkParents(path, root);
  const dir = heldParent(path, true);
  if (!dir) throw new LinkedPath(`${path}: its folder could not be made`);
  try {
    const name = basename(path);
    const st = dir.lstat(name);
    if (st && !st.isDirectory()) rmSync(dir.at(name));
    const fd = openSync(
      dir.at(name),
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
  } finally {
    dir.close();
  }
}

// The held folder of `path`; a symlink on the way is a LinkedPath, a missing folder undefined (without create)
function heldParent(path: string, create: boolean): HeldDir | undefined {
  try {
    return HeldDir.walk(dirname(path), create);
  } catch (err) {
    if (err instanceof ScopeError) throw new LinkedPath(`${path}: ${err.message}`);
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

export function lstatOrUndefined(path: string): Stats | undefined {
  try {
    return lstatSync(path);
  } catch {
    return undefined;
  }
}
