/**
 * Project instructions injected into the system prompt: AGENTS.md and .keel/instructions.md. A
 * repository is untrusted, so each is read only when it is a regular file inside the workspace, and
 * never more than the cap.
 */
import {
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  openSync,
  readlinkSync,
  readSync,
  realpathSync,
} from 'node:fs';
import { isAbsolute, join, relative, sep } from 'node:path';
import { binaryReason, bomBytes, decodeBody, detectEncoding, isUtf16 } from '../tools/text-encoding.js';

/** Cap per file: instructions share a small context window with everything else. */
const MAX_CHARS = 16_000;
// Bytes enough for MAX_CHARS in any encoding (UTF-8 takes at most 3 bytes per UTF-16 unit), read instead of the whole file
const MAX_BYTES = MAX_CHARS * 4;

const NAMES = ['AGENTS.md', join('.keel', 'instructions.md')];

export interface Instructions {
  files: string[];
  text: string;
  /** Instruction files that exist but were not used, with why (a link out, a FIFO, ...). */
  skipped: Array<{ file: string; reason: string }>;
}

/** Read the workspace's instruction files that exist, in a fixed order. */
export function loadInstructions(root: string): Instructions {
  const files: string[] = [];
  const parts: string[] = [];
  const skipped: Instructions['skipped'] = [];
  const realRoot = realpathSync(root);
  for (const name of NAMES) {
    const read = readInstructionFile(realRoot, name);
    if (read === null) continue;
    if ('skip' in read) {
      skipped.push({ file: name, reason: read.skip });
      continue;
    }
    const trimmed = read.text.trim();
    if (!trimmed) continue;
    files.push(name);
    const body =
      trimmed.length > MAX_CHARS || read.cut
        ? `${trimmed.slice(0, MAX_CHARS)}\n[... ${name} cut at ${MAX_CHARS} chars]`
        : trimmed;
    parts.push(`# ${name}\n${body}`);
  }
  return { files, text: parts.join('\n\n'), skipped };
}

type Read = { text: string; cut: boolean } | { skip: string } | null;

/**
 * One instruction file: null when it does not exist, a reason when it exists but may not be used.
 * A symlink is followed only to a file inside the workspace (AGENTS.md -> docs/agents.md is common).
 */
function readInstructionFile(root: string, name: string): Read {
  let real: string;
  try {
    real = realpathSync(join(root, name));
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return code === 'ENOENT' || code === 'ENOTDIR'
      ? danglingOrMissing(join(root, name))
      : { skip: `it cannot be resolved (${code})` };
  }
  if (!inside(root, real)) return { skip: 'it leads outside the workspace' };
  // lstat before open: opening a device can have effects of its own; fstat after open closes the race
  const kind = describe(lstatSync(real, { throwIfNoEntry: false }));
  if (kind) return { skip: kind };
  let fd: number;
  try {
    // O_NONBLOCK: a FIFO swapped in after the lstat still cannot block the open; O_NOFOLLOW: nor a link
    fd = openSync(real, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    return { skip: `it cannot be opened (${(err as NodeJS.ErrnoException).code})` };
  }
  try {
    const opened = describe(fstatSync(fd));
    if (opened) return { skip: opened };
    // a parent folder swapped for a link between realpath and open shows in the descriptor's own path
    const actual = openedPath(fd);
    if (actual !== null && !inside(root, actual)) return { skip: 'it leads outside the workspace' };
    const { bytes, cut } = readCapped(fd);
    // decoded as read_file decodes it: UTF-8, a BOM's encoding, or Latin-1 when not valid UTF-8
    const encoding = detectEncoding(bytes, !cut);
    const binary = isUtf16(encoding) ? null : binaryReason(bytes, encoding);
    if (binary) return { skip: `it is binary (${binary})` };
    return { text: decodeBody(bytes.subarray(bomBytes(encoding).length), encoding), cut };
  } finally {
    closeSync(fd);
  }
}

/** A dangling link is a file someone made and keel refused to follow; a missing file is just absent. */
function danglingOrMissing(path: string): Read {
  return lstatSync(path, { throwIfNoEntry: false })?.isSymbolicLink()
    ? { skip: 'it is a dangling symlink' }
    : null;
}

function describe(
  info: { isFile(): boolean; isFIFO(): boolean; isDirectory(): boolean } | undefined,
): string | null {
  if (!info) return 'it vanished while being read';
  if (info.isFile()) return null;
  if (info.isFIFO()) return 'it is a FIFO, which would block keel';
  if (info.isDirectory()) return 'it is a folder';
  return 'it is not a regular file';
}

function readCapped(fd: number): { bytes: Buffer; cut: boolean } {
  // one byte over the cap says whether there is more
  const buf = Buffer.alloc(MAX_BYTES + 1);
  let got = 0;
  while (got < buf.length) {
    const n = readSync(fd, buf, got, buf.length - got, got);
    if (n === 0) break;
    got += n;
  }
  return { bytes: buf.subarray(0, Math.min(got, MAX_BYTES)), cut: got > MAX_BYTES };
}

function openedPath(fd: number): string | null {
  try {
    return readlinkSync(`/proc/self/fd/${fd}`);
  } catch {
    // no /proc (macOS): the realpath check and O_NOFOLLOW stand alone
    return null;
  }
}

function inside(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel);
}
