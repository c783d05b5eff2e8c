/**
 * Bringing a plugin's files in for `keel plugin install`: from a folder, a git URL or a tarball, into a new
 * staging folder. Whatever the source, what lands is regular files and folders only, inside the staging
 * folder, bounded: a link (symbolic or hard), a device, an absolute path or a `..` refuses the whole plugin.
 */
import {
  closeSync,
  fstatSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { dirname, isAbsolute, join, normalize, sep } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { MANIFEST } from '../config/plugins.js';
import { cloneInert } from '../policy/git-runner.js';

/** Bytes and files a plugin may hold at most. */
export const MAX_BYTES = 50_000_000;
export const MAX_FILES = 5_000;

export class PluginSourceError extends Error {
  override name = 'PluginSourceError';
}

export type SourceKind = 'folder' | 'git' | 'tarball';

/** How a source is read: a URL (or `git@host:path`) is cloned, a `.tar`/`.tar.gz`/`.tgz` is extracted, else a folder. */
export function sourceKind(source: string): SourceKind {
  if (/^(https?|git|ssh|file):\/\//i.test(source) || /^[\w.-]+@[\w.-]+:/.test(source)) return 'git';
  if (/\.(tar|tar\.gz|tgz)$/i.test(source)) return 'tarball';
  return 'folder';
}

/** Stage `source` in a new folder under `parent`; returns the folder that holds keel-plugin.json. */
export function stagePlugin(source: string, parent: string): { stage: string; root: string } {
  mkdirSync(parent, { recursive: true, mode: 0o700 });
  const stage = mkdtempSync(join(parent, '.staging-'));
  try {
    const files = join(stage, 'files');
    const kind = sourceKind(source);
    if (kind === 'tarball') extractTar(source, files);
    else if (kind === 'git') {
      const clone = join(stage, 'clone');
      try {
        cloneInert(source, clone);
      } catch (err) {
        throw new PluginSourceError(`git clone ${source} failed: ${(err as Error).message}`);
      }
      copyTree(clone, files, new Set(['.git']));
      rmSync(clone, { recursive: true, force: true });
    } else {
      if (!lstatSync(source, { throwIfNoEntry: false })?.isDirectory())
        throw new PluginSourceError(`${source} is not a folder, a git URL or a .tar/.tar.gz/.tgz file`);
      copyTree(source, files, new Set(['.git']));
    }
    return { stage, root: manifestRoot(files) };
  } catch (err) {
    rmSync(stage, { recursive: true, force: true });
    throw err;
  }
}

/** The plugin's top: the folder itself, or its one subfolder (a tarball's `name-1.0/`), holding the manifest. */
function manifestRoot(files: string): string {
  if (lstatSync(join(files, MANIFEST), { throwIfNoEntry: false })?.isFile()) return files;
  const entries = readdirSync(files);
  const only = entries.length === 1 ? join(files, entries[0] as string) : undefined;
  if (
    only &&
    lstatSync(only).isDirectory() &&
    lstatSync(join(only, MANIFEST), { throwIfNoEntry: false })?.isFile()
  )
    return only;
  throw new PluginSourceError(`no ${MANIFEST} at the top of the plugin`);
}

interface Budget {
  bytes: number;
  files: number;
}

function spend(budget: Budget, bytes: number): void {
  budget.bytes += bytes;
  budget.files += 1;
  if (budget.bytes > MAX_BYTES) throw new PluginSourceError(`the plugin is over ${MAX_BYTES} bytes`);
  if (budget.files > MAX_FILES) throw new PluginSourceError(`the plugin holds over ${MAX_FILES} files`);
}

/** Copy regular files and folders; a link or anything else refuses the plugin. */
function copyTree(
  from: string,
  to: string,
  skip: Set<string>,
  budget: Budget = { bytes: 0, files: 0 },
  rel = '',
): void {
  mkdirSync(to, { recursive: true });
  for (const name of readdirSync(from).sort()) {
    if (!rel && skip.has(name)) continue;
    const src = join(from, name);
    const shown = rel ? `${rel}/${name}` : name;
    const info = lstatSync(src);
    if (info.isSymbolicLink())
      throw new PluginSourceError(`${shown} is a symlink: a plugin may hold files and folders only`);
    if (info.isDirectory()) copyTree(src, join(to, name), skip, budget, shown);
    else if (info.isFile()) {
      spend(budget, info.size);
      writeFileSync(join(to, name), readRegular(src, shown), { flag: 'wx', mode: info.mode & 0o755 });
    } else throw new PluginSourceError(`${shown} is not a regular file or a folder`);
  }
}

function readRegular(path: string, shown: string): Buffer {
  const fd = openSync(path, 'r');
  try {
    const info = fstatSync(fd);
    if (!info.isFile()) throw new PluginSourceError(`${shown} is not a regular file`);
    const buf = Buffer.alloc(info.size);
    let got = 0;
    for (let n = 1; n > 0 && got < buf.length; got += n) n = readSync(fd, buf, got, buf.length - got, got);
    return buf.subarray(0, got);
  } finally {
    closeSync(fd);
  }
}

/** An entry's path, made safe: relative, no `..`, no absolute part; undefined for the archive's own `./`. */
function safePath(name: string): string | undefined {
  if (name.includes('\0') || name.includes('\\'))
    throw new PluginSourceError(`the tarball entry ${JSON.stringify(name)} has a forbidden character`);
  if (isAbsolute(name))
    throw new PluginSourceError(`the tarball entry ${JSON.stringify(name)} is an absolute path`);
  const parts = name.split('/').filter((p) => p !== '' && p !== '.');
  if (parts.includes('..'))
    throw new PluginSourceError(`the tarball entry ${JSON.stringify(name)} leads out of its folder`);
  return parts.length ? parts.join('/') : undefined;
}

/**
 * Extract a ustar/pax/GNU tarball (gzipped or not): files and folders only. A symbolic or hard link, a
 * device, a FIFO, a path out of the folder, or a second entry for the same file refuses the whole tarball.
 */
export function extractTar(file: string, to: string): void {
  let data: Buffer;
  try {
    const size = lstatSync(file).size;
    if (size > MAX_BYTES + MAX_FILES * 1024)
      throw new PluginSourceError(`${file} is over ${MAX_BYTES} bytes`);
    data = readRegular(file, file);
  } catch (err) {
    if (err instanceof PluginSourceError) throw err;
    throw new PluginSourceError(`cannot read ${file}: ${(err as Error).message}`);
  }
  if (data[0] === 0x1f && data[1] === 0x8b) {
    try {
      data = gunzipSync(data, { maxOutputLength: MAX_BYTES + MAX_FILES * 1024 });
    } catch (err) {
      throw new PluginSourceError(`${file} is not a readable gzip file: ${(err as Error).message}`);
    }
  }
  mkdirSync(to, { recursive: true });
  try {
    readEntries(data, file, to);
  } catch (err) {
    if (err instanceof PluginSourceError) throw err;
    // an entry that clashes with another (a folder over a file, a file under a file): the tarball is refused
    throw new PluginSourceError(`${file} cannot be extracted: ${(err as Error).message}`);
  }
}

function readEntries(data: Buffer, file: string, to: string): void {
  const budget: Budget = { bytes: 0, files: 0 };
  let longName: string | undefined;
  let paxPath: string | undefined;
  for (let at = 0; at + 512 <= data.length; ) {
    const header = data.subarray(at, at + 512);
    if (header.every((b) => b === 0)) break;
    const size = octal(header.subarray(124, 136));
    const type = String.fromCharCode(header[156] as number);
    const body = data.subarray(at + 512, at + 512 + size);
    if (body.length < size) throw new PluginSourceError(`${file} is cut short`);
    at += 512 + Math.ceil(size / 512) * 512;
    if (type === 'L') {
      longName = cString(body);
      continue;
    }
    if (type === 'x') {
      paxPath = paxRecord(body, 'path') ?? paxPath;
      continue;
    }
    if (type === 'g') continue;
    const prefix = cString(header.subarray(345, 500));
    const raw =
      paxPath ??
      longName ??
      (prefix ? `${prefix}/${cString(header.subarray(0, 100))}` : cString(header.subarray(0, 100)));
    longName = undefined;
    paxPath = undefined;
    if (type === '1' || type === '2')
      throw new PluginSourceError(
        `the tarball entry ${JSON.stringify(raw)} is a ${type === '2' ? 'symbolic' : 'hard'} link: a plugin may hold files and folders only`,
      );
    if (type !== '0' && type !== '\0' && type !== '5' && type !== '7')
      throw new PluginSourceError(
        `the tarball entry ${JSON.stringify(raw)} is not a file or a folder (type ${JSON.stringify(type)})`,
      );
    const rel = safePath(raw);
    if (rel === undefined) continue;
    const dest = join(to, rel);
    if (!normalize(dest).startsWith(`${normalize(to)}${sep}`))
      throw new PluginSourceError(`the tarball entry ${JSON.stringify(raw)} leads out of its folder`);
    if (type === '5') {
      mkdirSync(dest, { recursive: true });
      continue;
    }
    spend(budget, size);
    mkdirSync(dirname(dest), { recursive: true });
    const mode = octal(header.subarray(100, 108)) & 0o755;
    try {
      // wx: never over an entry already written (nor through one: nothing here is a link)
      writeFileSync(dest, body, { flag: 'wx', mode: mode || 0o644 });
    } catch (err) {
      throw new PluginSourceError(
        `the tarball entry ${JSON.stringify(raw)} cannot be written: ${(err as NodeJS.ErrnoException).code}`,
      );
    }
  }
}

function cString(buf: Buffer): string {
  const end = buf.indexOf(0);
  return buf.subarray(0, end < 0 ? buf.length : end).toString('utf8');
}

function octal(buf: Buffer): number {
  const text = cString(buf).trim();
  if (!text) return 0;
  if (!/^[0-7]+$/.test(text)) throw new PluginSourceError('a tarball header has a malformed number');
  return Number.parseInt(text, 8);
}

/** One `key=value` of a pax extended header. */
function paxRecord(body: Buffer, key: string): string | undefined {
  const text = body.toString('utf8');
  let found: string | undefined;
  for (let at = 0; at < text.length; ) {
    const space = text.indexOf(' ', at);
    const length = Number.parseInt(text.slice(at, space), 10);
    if (!(length > 0) || space < 0) break;
    const record = text.slice(space + 1, at + length - 1);
    const eq = record.indexOf('=');
    if (record.slice(0, eq) === key) found = record.slice(eq + 1);
    at += length;
  }
  return found;
}
