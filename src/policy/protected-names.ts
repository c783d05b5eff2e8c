/**
 * Protected names: `.git`, `.keel` and `keel.toml` in every spelling a filesystem may treat as the same
 * name, and the sweep that removes such an entry when a command created one at the top of the scope.
 */
import { lstatSync, readdirSync, rmSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';

/** Which protected thing a name is: git's metadata, or keel's project config. */
export type ProtectedKind = 'git' | 'keel';

// Code points HFS+ ignores when it compares names, so `.g\u200cit` opens `.git` there (git checks the same)
const IGNORABLE = /[\u200b-\u200f\u202a-\u202e\u2060-\u2063\u206a-\u206f\ufeff]/g;

/**
 * Classify a single path component: a `.git` or keel config name in any letter case, with trailing dots or
 * spaces (Windows drops them), an NTFS stream suffix (`.git::$INDEX_ALLOCATION`), an 8.3 short name
 * (`GIT~1`, `KEEL~1.TOM`) or HFS+-ignored code points; undefined for an ordinary name.
 */
export function protectedKind(name: string): ProtectedKind | undefined {
  let n = name.replace(IGNORABLE, '').toLowerCase();
  const stream = n.indexOf(':');
  if (stream >= 0) n = n.slice(0, stream);
  n = n.replace(/[. ]+$/, '');
  if (n === '.git' || /^\.?git~\d+$/.test(n)) return 'git';
  // an 8.3 name KEEL~N may stand for either .keel or keel.toml; both are protected in the same places
  if (n === '.keel' || n === 'keel.toml' || /^\.?keel~\d+(\.[^.]{0,3})?$/.test(n)) return 'keel';
  return undefined;
}

/** The protected entries (names as the filesystem lists them) directly inside `dir`. */
export function protectedEntries(dir: string): string[] {
  try {
    return readdirSync(dir).filter((name) => protectedKind(name) !== undefined);
  } catch {
    return [];
  }
}

/** Protected entries of each folder, taken before a command so the sweep knows what it created. */
export type ProtectedSnapshot = Map<string, Set<string>>;

/** Record the protected entries at the top of each folder: one readdir per folder. */
export function snapshotProtected(dirs: readonly string[]): ProtectedSnapshot {
  return new Map(dirs.map((dir) => [dir, new Set(protectedEntries(dir))]));
}

/**
 * Remove every protected entry a command created at the top of the snapshot's folders (a file, a
 * folder or a symlink, never followed) and return their paths. A `.git` or `keel.toml` that appears there
 * would be used by keel's git runner or config loader on the host in this or the next session.
 */
export function sweepProtected(before: ProtectedSnapshot): string[] {
  const removed: string[] = [];
  for (const [dir, existed] of before) {
    for (const name of protectedEntries(dir)) {
      if (existed.has(name)) continue;
      const path = join(dir, name);
      const failed = removeEntry(path);
      removed.push(failed ? `${path} (could not be removed: ${failed})` : path);
    }
  }
  return removed;
}

// Returns why the entry could not be removed, if it could not
function removeEntry(path: string): string | undefined {
  try {
    // lstat: a symlink is removed itself; rmSync never follows links inside a folder it deletes
    if (lstatSync(path).isDirectory()) rmSync(path, { recursive: true, force: true });
    else unlinkSync(path);
    return undefined;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return code === 'ENOENT' ? undefined : (code ?? (err as Error).message);
  }
}
