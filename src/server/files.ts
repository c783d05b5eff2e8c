/**
 * The project's files, read-only, for the browser workspace's file tree and viewer. A path is relative to
 * the project and stays inside it after every link is followed (a symlink out of the project, a folder
 * linked out of it, `..`, an absolute path: refused); git's metadata and credential files are never listed
 * or read, nor a file whose text holds what the secret scan takes for a credential; files are read up to a
 * size cap, and binary files and hard-linked files (a second name may be of a file outside) are refused. The file that is read is the one that was checked: it is opened
 * without following a last link and its real path is checked again through the open descriptor.
 */
import {
  closeSync,
  constants,
  fstatSync,
  openSync,
  readdirSync,
  readlinkSync,
  readSync,
  realpathSync,
  statSync,
} from 'node:fs';
import { basename, isAbsolute, join, relative, sep } from 'node:path';
import type { Context, Hono } from 'hono';
import { protectedKind } from '../policy/protected-names.js';
import { isCredentialFile } from '../policy/secret-rules.js';
import { scanText } from '../policy/secret-scan.js';

/** Larger files are data, not something to read in a browser. */
export const MAX_VIEW_BYTES = 1024 * 1024;
/** A folder lists at most this many entries. */
export const MAX_ENTRIES = 2000;

export class FileRefused extends Error {
  constructor(
    readonly status: 400 | 403 | 404 | 413 | 415,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** Why a project-relative name may not be shown, or undefined when it may. */
function hidden(rel: string): string | undefined {
  for (const part of rel.split(sep)) {
    if (protectedKind(part) === 'git') return "git's metadata is not shown";
  }
  if (isCredentialFile(rel)) return 'a credential file is not shown';
  return undefined;
}

/** The real path of `given` (relative to the project), checked to be inside it and showable. */
function inside(root: string, given: string): { real: string; rel: string } {
  if (given.includes('\0')) throw new FileRefused(400, 'BAD_PATH', 'the path holds a NUL byte');
  if (isAbsolute(given) || /^[a-z]:/i.test(given))
    throw new FileRefused(
      400,
      'BAD_PATH',
      `path ${JSON.stringify(given)}: give a path relative to the project`,
    );
  if (given.split(/[\\/]/).includes('..'))
    throw new FileRefused(400, 'BAD_PATH', `path ${JSON.stringify(given)}: ".." is not allowed`);
  let real: string;
  try {
    real = realpathSync(join(root, given));
  } catch {
    throw new FileRefused(404, 'NOT_FOUND', `no file ${given} in the project`);
  }
  const rel = relative(root, real);
  if (rel.startsWith('..') || isAbsolute(rel))
    throw new FileRefused(403, 'OUTSIDE', `${given} leads out of the project (a link); it is not shown`);
  const why = hidden(rel) ?? hidden(given.replace(/[\\/]+/g, sep));
  if (why) throw new FileRefused(403, 'HIDDEN', `${given}: ${why}`);
  return { real, rel };
}

export interface Entry {
  name: string;
  path: string;
  kind: 'dir' | 'file';
  size?: number;
}

/** One folder of the project: its showable entries, folders first (a link out of the project is left out). */
export function listDir(project: string, dir: string): { dir: string; entries: Entry[]; truncated: boolean } {
  const root = realpathSync(project);
  const { real, rel } = dir === '' || dir === '.' ? { real: root, rel: '' } : inside(root, dir);
  if (!statSync(real).isDirectory()) throw new FileRefused(400, 'NOT_A_FOLDER', `${dir} is not a folder`);
  const entries: Entry[] = [];
  const names = readdirSync(real).sort((a, b) => a.localeCompare(b));
  for (const name of names) {
    const path = rel ? `${rel}/${name}` : name;
    try {
      const target = inside(root, path);
      const st = statSync(target.real);
      if (st.isDirectory()) entries.push({ name, path, kind: 'dir' });
      else if (st.isFile()) entries.push({ name, path, kind: 'file', size: st.size });
    } catch {
      // hidden, a broken link, or a link out of the project: not in the tree
    }
    if (entries.length >= MAX_ENTRIES) break;
  }
  entries.sort((a, b) => (a.kind === b.kind ? 0 : a.kind === 'dir' ? -1 : 1));
  return { dir: rel.split(sep).join('/'), entries, truncated: entries.length >= MAX_ENTRIES };
}

/** One file's text, read through the descriptor whose real path was checked. */
export function readProjectFile(project: string, path: string): { path: string; size: number; text: string } {
  const root = realpathSync(project);
  const { real, rel } = inside(root, path);
  let fd: number;
  try {
    fd = openSync(real, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    throw new FileRefused(404, 'NOT_FOUND', `${path} cannot be opened`);
  }
  try {
    // the descriptor's own path: a link swapped in after the check above is caught here
    const opened = readlinkSync(`/proc/self/fd/${fd}`);
    if (opened !== real) inside(root, relative(root, opened));
    const st = fstatSync(fd);
    if (!st.isFile()) throw new FileRefused(400, 'NOT_A_FILE', `${path} is not a file`);
    // a second name of a file is no proof of where the file lives: it may be one outside the project
    if (st.nlink > 1)
      throw new FileRefused(403, 'HARD_LINK', `${path} has ${st.nlink} names (a hard link); it is not shown`);
    if (st.size > MAX_VIEW_BYTES)
      throw new FileRefused(
        413,
        'TOO_LARGE',
        `${path} is ${st.size} bytes; the viewer shows files up to ${MAX_VIEW_BYTES}`,
      );
    const buf = Buffer.alloc(st.size);
    let got = 0;
    while (got < st.size) {
      const n = readSync(fd, buf, got, st.size - got, got);
      if (n === 0) break;
      got += n;
    }
    const bytes = buf.subarray(0, got);
    if (bytes.subarray(0, 8192).includes(0))
      throw new FileRefused(415, 'BINARY', `${path} is a binary file; the viewer shows text`);
    const text = bytes.toString('utf8');
    const found = scanText(basename(rel), text)[0];
    if (found)
      throw new FileRefused(
        403,
        'SECRET',
        `${path} holds what looks like a credential (${found.rule}, line ${found.line}); it is not shown`,
      );
    return { path: rel.split(sep).join('/'), size: got, text };
  } finally {
    closeSync(fd);
  }
}

/** GET /v1/files?dir= and GET /v1/files/content?path=, behind the server's token like every API route. */
export function mountFiles(app: Hono, project: string): void {
  const refused = (c: Context, err: unknown) => {
    if (err instanceof FileRefused) return c.json({ code: err.code, error: err.message }, err.status);
    throw err;
  };
  app.get('/v1/files', (c) => {
    try {
      return c.json(listDir(project, c.req.query('dir') ?? ''));
    } catch (err) {
      return refused(c, err);
    }
  });
  app.get('/v1/files/content', (c) => {
    const path = c.req.query('path');
    if (!path) return c.json({ code: 'BAD_REQUEST', error: 'path: give a file of the project' }, 400);
    try {
      return c.json(readProjectFile(project, path));
    } catch (err) {
      return refused(c, err);
    }
  });
}
