/**
 * Held paths: a path the scope has checked is used through folder descriptors held from `/` down, one
 * component at a time, never following a symlink. A folder swapped for a symlink after the check (by a
 * sandboxed process racing the tool) then stops the use instead of redirecting it outside the scope.
 *
 * Node has no openat; on Linux `/proc/self/fd/<fd>/<name>` is the kernel's name for "the entry <name> of
 * the folder held as <fd>", so every open, mkdir and rename below happens in the held folder. Elsewhere
 * each step is opened by its full path, which refuses a symlink at that step only.
 */
import {
  closeSync,
  constants,
  existsSync,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  type Stats,
} from 'node:fs';
import { type FileHandle, open } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { ScopeError } from './scope.js';

const { O_DIRECTORY, O_NOFOLLOW, O_NONBLOCK, O_RDONLY } = constants;
const PROC_FD = process.platform === 'linux' && existsSync('/proc/self/fd');
// Linux's O_PATH, which Node does not export: a folder held only to walk through needs no read permission
const O_PATH = 0o10000000;
const DIR_FLAGS = (PROC_FD ? O_PATH : O_RDONLY) | O_DIRECTORY | O_NOFOLLOW;
// O_NONBLOCK: a FIFO put where a file was opens at once (and is then refused) instead of hanging the session
const READ_FLAGS = O_RDONLY | O_NOFOLLOW | O_NONBLOCK;

/** A folder reached with no symlink on the way, held open so the names inside it are its own. */
export class HeldDir {
  private constructor(
    private readonly fd: number,
    /** Where the folder was when it was walked to, for messages. */
    readonly path: string,
  ) {}

  /**
   * Walk from `/` to `dir` (absolute and canonical: no `.`, `..` or symlink in it). A component that is a
   * symlink now is a ScopeError; with `create`, missing folders are made on the way, each in its held parent.
   */
  static walk(dir: string, create = false): HeldDir {
    let held = new HeldDir(openSync('/', DIR_FLAGS), '/');
    try {
      for (const name of components(dir)) {
        const next = held.enter(name, create);
        held.close();
        held = next;
      }
      return held;
    } catch (err) {
      held.close();
      throw err;
    }
  }

  /** A path naming the entry `name` of this folder and nothing else, whatever happens to its path. */
  at(name: string): string {
    return PROC_FD ? `/proc/self/fd/${this.fd}/${name}` : join(this.path, name);
  }

  /** The entry `name` of this folder as lstat sees it now (never followed); undefined when there is none. */
  lstat(name: string): Stats | undefined {
    try {
      return lstatSync(this.at(name));
    } catch {
      return undefined;
    }
  }

  close(): void {
    closeSync(this.fd);
  }

  /** Open the sub-folder `name`, refusing a symlink, and making it first when `create` allows. */
  private enter(name: string, create: boolean): HeldDir {
    const path = join(this.path, name);
    try {
      return new HeldDir(this.openDir(name), path);
    } catch (err) {
      if (!create || errno(err) !== 'ENOENT') throw err;
    }
    try {
      mkdirSync(this.at(name));
    } catch (err) {
      // made by someone else in between: opened below like any folder, and refused if it is a symlink
      if (errno(err) !== 'EEXIST') throw this.named(err, name);
    }
    return new HeldDir(this.openDir(name), path);
  }

  private openDir(name: string): number {
    try {
      return openSync(this.at(name), DIR_FLAGS);
    } catch (err) {
      // O_NOFOLLOW | O_DIRECTORY fails on a symlink with ENOTDIR or ELOOP. A symlink there now, or a folder
      // or nothing (so it moved on), is the race; a file there is the caller's plain mistake
      const code = errno(err);
      if (code === 'ENOTDIR' || code === 'ELOOP') {
        const now = this.lstat(name);
        if (!now || now.isSymbolicLink() || now.isDirectory()) throw changed(join(this.path, name));
      }
      throw this.named(err, name);
    }
  }

  /** An fs error about `at(name)` rewritten to name the real path, so no `/proc/self/fd` reaches a person. */
  named(err: unknown, name: string): unknown {
    if (!(err instanceof Error)) return err;
    const e = err as NodeJS.ErrnoException & { dest?: string };
    const real = join(this.path, name);
    e.message = e.message.split(this.at(name)).join(real);
    if (e.path === this.at(name)) e.path = real;
    if (e.dest === this.at(name)) e.dest = real;
    return e;
  }
}

/** An existing file opened through held folders, with what fstat said of it at the open. */
export class HeldFile {
  constructor(
    readonly handle: FileHandle,
    readonly stats: Stats,
    readonly path: string,
    private readonly dir: HeldDir,
    private readonly name: string,
  ) {}

  /**
   * Confirm the file's name still holds the file that was read (the same inode, never a symlink), so bytes
   * reported as this path never came from anywhere else. A ScopeError when it changed.
   */
  recheck(): void {
    const now = this.dir.lstat(this.name);
    if (now && now.ino === this.stats.ino && now.dev === this.stats.dev) return;
    throw new ScopeError(`${this.path} changed while keel read it; nothing it read is used`, this.path);
  }

  async close(): Promise<void> {
    try {
      await this.handle.close();
    } finally {
      this.dir.close();
    }
  }
}

/**
 * Open the file at `path` (absolute and canonical) for reading through held folders; undefined when it
 * or a folder on the way does not exist. A symlink anywhere on the way, the file's own name included, is
 * a ScopeError: the scope check resolved every symlink, so one here appeared after it.
 */
export async function openHeld(path: string): Promise<HeldFile | undefined> {
  const parent = walkToParent(path);
  if (!parent) return undefined;
  const { dir, name } = parent;
  try {
    const handle = await open(dir.at(name), READ_FLAGS);
    const stats = await handle.stat().catch(async (err: unknown) => {
      await handle.close();
      throw err;
    });
    return new HeldFile(handle, stats, path, dir, name);
  } catch (err) {
    dir.close();
    return refuseOpen(err, dir, name, path);
  }
}

/** openHeld for code that must stay synchronous (the safety net's copies): a descriptor the caller closes. */
export function openHeldSync(path: string): { fd: number; stats: Stats } | undefined {
  const parent = walkToParent(path);
  if (!parent) return undefined;
  const { dir, name } = parent;
  try {
    const fd = openSync(dir.at(name), READ_FLAGS);
    try {
      return { fd, stats: fstatSync(fd) };
    } catch (err) {
      closeSync(fd);
      throw err;
    }
  } catch (err) {
    return refuseOpen(err, dir, name, path);
  } finally {
    dir.close();
  }
}

function walkToParent(path: string): { dir: HeldDir; name: string } | undefined {
  try {
    return { dir: HeldDir.walk(dirname(path)), name: basename(path) || '.' };
  } catch (err) {
    if (errno(err) === 'ENOENT') return undefined;
    throw err;
  }
}

// A missing file is undefined, a symlink at its name the race; anything else is the fs error, named
function refuseOpen(err: unknown, dir: HeldDir, name: string, path: string): undefined {
  const code = errno(err);
  if (code === 'ENOENT') return undefined;
  if (code === 'ELOOP') throw changed(path);
  throw dir.named(err, name);
}

function changed(path: string): ScopeError {
  return new ScopeError(
    `${path} changed after the scope check (a symlink took its place); keel does not follow it`,
    path,
  );
}

/** The names of an absolute, canonical path; anything that could walk elsewhere is a programming error. */
function components(path: string): string[] {
  if (!path.startsWith('/')) throw new Error(`held paths are absolute: ${path}`);
  const names = path.split('/').filter((name) => name !== '');
  if (names.some((name) => name === '.' || name === '..' || name.includes('\0'))) {
    throw new Error(`held paths are canonical: ${path}`);
  }
  return names;
}

function errno(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | undefined)?.code;
}
