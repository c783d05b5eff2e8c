/**
 * The audit chain's HMAC key: 32 random bytes, hex, in `KEEL_HOME/audit.key` (mode 0600). It lives beside
 * the audit folder, not in it, so copying the folder to show someone does not hand them the key.
 */
import { createHmac, randomBytes } from 'node:crypto';
import {
  closeSync,
  constants,
  fstatSync,
  fsyncSync,
  linkSync,
  mkdirSync,
  openSync,
  readFileSync,
  rmSync,
  writeSync,
} from 'node:fs';
import { dirname, join } from 'node:path';

/** The key file's name next to the audit folder. */
export const KEY_FILE = 'audit.key';

const KEY_TEXT = /^[0-9a-f]{64}\n?$/;

/** Where the key for an audit folder lives when no path is given: beside it (`KEEL_HOME/audit.key`). */
export function defaultKeyPath(auditDir: string): string {
  return join(dirname(auditDir), KEY_FILE);
}

/** Read a key file; undefined when it does not exist, an Error when it exists but is not a key. */
export function readAuditKey(path: string): Buffer | undefined | Error {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    return new Error(`audit key ${path} is unreadable: ${(err as Error).message}`);
  }
  if (!KEY_TEXT.test(text)) return new Error(`audit key ${path} is not 64 hex digits`);
  return Buffer.from(text.slice(0, 64), 'hex');
}

/**
 * A key file several processes share (the hubs of a team on one PostgreSQL, each with its own KEEL_HOME):
 * never created here, and refused unless it is a regular file of this user that no one else may read or
 * write (mode 0600 or 0400). Opened without following a symlink, and checked on the open file, so what
 * is checked is what is read. Throws an Error naming the file and what is wrong.
 */
export function readPrivateAuditKey(path: string): Buffer {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ELOOP') throw new Error(`audit key file ${path} is a symlink: name the file itself`);
    throw new Error(`audit key file ${path} is unreadable: ${(err as Error).message}`);
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw new Error(`audit key file ${path} is not a regular file`);
    const uid = process.getuid?.();
    if (uid !== undefined && st.uid !== uid)
      throw new Error(`audit key file ${path} is owned by uid ${st.uid}, not by this user (uid ${uid})`);
    const mode = st.mode & 0o777;
    if ((mode & 0o077) !== 0)
      throw new Error(
        `audit key file ${path} is mode ${mode.toString(8).padStart(4, '0')}: others may read or change it; chmod 600 ${path}`,
      );
    const text = readFileSync(fd, 'utf8');
    if (!KEY_TEXT.test(text)) throw new Error(`audit key file ${path} is not 64 hex digits`);
    return Buffer.from(text.slice(0, 64), 'hex');
  } finally {
    closeSync(fd);
  }
}

/**
 * The key at `path`, created on first use, and whether it was already there when we looked. The new key is
 * written whole to a private temporary file and then hard-linked into place: link() fails if the name
 * exists, so processes starting at once agree on one key, and none ever reads a half-written one (which
 * O_EXCL and a later write would allow).
 */
export function ensureAuditKey(path: string): { key: Buffer; existed: boolean } {
  const existing = readAuditKey(path);
  if (existing instanceof Error) throw existing;
  if (existing) return { key: existing, existed: true };
  mkdirSync(dirname(path), { recursive: true });
  const tmp = `${path}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  const fd = openSync(tmp, 'wx', 0o600);
  try {
    writeSync(fd, `${randomBytes(32).toString('hex')}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    linkSync(tmp, path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  } finally {
    rmSync(tmp, { force: true });
  }
  const key = readAuditKey(path);
  if (key instanceof Error) throw key;
  if (!key) throw new Error(`audit key ${path} vanished while it was being created`);
  return { key, existed: false };
}

/** The seal of one chain line: HMAC-SHA256 over its canonical body (which includes seq and prev). */
export function lineMac(key: Buffer, canonicalBody: string): string {
  return createHmac('sha256', key).update('keel-audit-line\n').update(canonicalBody).digest('hex');
}

/** The seal of head.json: HMAC-SHA256 over the canonical head, in its own domain so no line seal fits it. */
export function headMac(key: Buffer, canonicalHead: string): string {
  return createHmac('sha256', key).update('keel-audit-head\n').update(canonicalHead).digest('hex');
}
