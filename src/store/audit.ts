/**
 * The tamper-evident audit chain: `audit/YYYY-MM-DD.jsonl` (UTC), one metadata-only line per event that
 * matters, each carrying the hash of the line before it and an HMAC seal under the key in KEEL_HOME,
 * plus a sealed `head.json` so a cut tail shows.
 */
import {
  closeSync,
  existsSync,
  fstatSync,
  fsyncSync,
  ftruncateSync,
  mkdirSync,
  openSync,
  readFileSync,
  readSync,
  rmSync,
  type Stats,
  statSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import {
  AuditChainError,
  type AuditEntry,
  type AuditHead,
  type AuditLine,
  dayFileName,
  GENESIS,
  HEAD_FILE,
  hashOf,
  isAuditLine,
  lineBody,
  lineSealed,
  listDayFiles,
  RESERVED,
  readHead,
  sealHead,
  sha256,
  splitLines,
} from './audit-chain.js';
import { defaultKeyPath, ensureAuditKey, lineMac } from './audit-key.js';

export { AuditChainError, type AuditEntry, type AuditHead, type AuditLine } from './audit-chain.js';
export { defaultKeyPath, readAuditKey } from './audit-key.js';
export { type VerifyOptions, type VerifyResult, verifyChain } from './audit-verify.js';

/** What every refusal to extend a broken chain tells the person. */
const SEE_VERIFY = 'run keel audit verify (to start a new chain, move the audit folder aside)';

/** How long a writer waits for another process's append before giving up; appends take milliseconds. */
const LOCK_WAIT_MS = 10_000;

/**
 * Present while an append starts a new day file. A crash between that file's first line and the head
 * write would leave a line no cached tail knows of; the marker sends the next writer back to the folder.
 */
const NEW_FILE_MARKER = '.new-day-file';

interface Tail {
  count: number;
  hash: string;
  file: string | undefined;
  line: number;
}

/** What this writer left at the chain's end; if the folder still shows exactly this, nobody appended since. */
interface Seen {
  tail: Tail & { file: string };
  /** head.json as this writer wrote it. */
  head: string;
  /** The tail file after this writer's line: appends only grow it, so any other append changes its size. */
  stat: Pick<Stats, 'ino' | 'size' | 'mtimeMs'>;
}

/** Appends to the audit chain in one folder; safe to use from many processes at once. */
export class AuditLog {
  private readonly now: () => Date;
  private readonly keyPath: string;
  private lock: Database.Database | undefined;
  private seen: Seen | undefined;
  /** Read (or created) once per log, so an append costs no extra file read. */
  private cachedKey: Buffer | undefined;
  /** Whether the key did not exist when this log first looked: only then may an unsealed chain be continued. */
  private keyIsNew = false;

  constructor(
    private readonly dir: string,
    options: { now?: () => Date; keyPath?: string } = {},
  ) {
    this.now = options.now ?? (() => new Date());
    this.keyPath = options.keyPath ?? defaultKeyPath(dir);
  }

  /** Append one entry; it is written (head updated) when this returns, because keel records before acting. */
  append(entry: AuditEntry): AuditLine {
    if (typeof entry.type !== 'string' || entry.type === '') throw new TypeError('audit entry needs a type');
    for (const key of RESERVED) {
      if (key in entry) throw new TypeError(`audit entry may not set "${key}"; the chain assigns it`);
    }
    // Hash exactly what a reader will parse back (undefined dropped, Dates as strings, NaN as null).
    const fields = JSON.parse(JSON.stringify(entry)) as AuditEntry;
    const key = this.key();
    return this.locked(() => {
      // Trust nothing cached if this append throws halfway.
      const seen = this.seen;
      this.seen = undefined;
      const cached = seen && this.unchanged(seen) ? seen.tail : undefined;
      const tail = cached ?? this.tail(key);
      const at = this.now();
      // Files must sort in chain order, so a clock that stepped back keeps writing to the newest file.
      const today = dayFileName(at);
      const name = tail.file && tail.file > today ? tail.file : today;
      const path = join(this.dir, name);
      const marker = join(this.dir, NEW_FILE_MARKER);
      const newFile = name !== tail.file;
      if (newFile) writeFileSync(marker, '');
      const lineNo = newFile ? countLines(path) + 1 : tail.line + 1;
      // A sealed head exists before the first line, so a chain without one is always tampering.
      if (tail.count === 0)
        writeHead(this.dir, sealed(key, { count: 0, hash: GENESIS, file: name, line: 0 }));
      const body: Record<string, unknown> = {
        seq: tail.count + 1,
        ts: at.toISOString(),
        ...fields,
        prev: tail.hash,
      };
      const text = lineBody(body);
      const line = { ...body, hash: sha256(text), mac: lineMac(key, text) } as AuditLine;
      const stat = appendDurably(path, `${JSON.stringify(line)}\n`);
      const head = sealed(key, { count: line.seq, hash: line.hash, file: name, line: lineNo });
      const headText = writeHead(this.dir, head);
      // The head now covers every line, including one a crashed writer left behind its marker.
      if (newFile || !cached) rmSync(marker, { force: true });
      this.seen = { tail: head, head: headText, stat };
      return line;
    });
  }

  /** The chain's key, created at first use. */
  private key(): Buffer {
    if (this.cachedKey) return this.cachedKey;
    const { key, existed } = ensureAuditKey(this.keyPath);
    this.cachedKey = key;
    this.keyIsNew = !existed;
    return key;
  }

  /** Release the lock file's handle; the log can still be appended to afterwards (it reopens). */
  close(): void {
    this.lock?.close();
    this.lock = undefined;
  }

  /**
   * Run `fn` while holding the writers' lock, so two processes never link to the same tail (a fork).
   * The lock is SQLite's exclusive lock on `audit/.lock`: an OS byte-range lock that the kernel drops the
   * moment its holder dies, so there is no stale-lock guessing (no pid reuse, no clock, no race between
   * two waiters breaking the same stale lock), and busy_timeout waits synchronously inside SQLite.
   */
  private locked<T>(fn: () => T): T {
    if (!this.lock) {
      mkdirSync(this.dir, { recursive: true });
      const db = new Database(join(this.dir, '.lock'));
      db.pragma(`busy_timeout = ${LOCK_WAIT_MS}`);
      // The lock file is never written; a journal on disk would only be created and deleted on every append.
      db.pragma('journal_mode = MEMORY');
      this.lock = db;
    }
    const db = this.lock;
    try {
      db.exec('BEGIN EXCLUSIVE');
    } catch (err) {
      throw new Error(`audit log ${this.dir} is locked by another writer (${(err as Error).message})`);
    }
    try {
      return fn();
    } finally {
      db.exec('ROLLBACK');
    }
  }

  /**
   * Whether the chain still ends where this writer left it: no new-day marker, the tail file at the size
   * this writer left it, and head.json byte for byte what it wrote. A stat and a small read instead of
   * listing the folder (which grows by a file a day) and reading the newest file's end.
   */
  private unchanged(seen: Seen): boolean {
    if (existsSync(join(this.dir, NEW_FILE_MARKER))) return false;
    const st = statSync(join(this.dir, seen.tail.file), { throwIfNoEntry: false });
    if (!st || st.ino !== seen.stat.ino || st.size !== seen.stat.size || st.mtimeMs !== seen.stat.mtimeMs)
      return false;
    // Contents, not a stat: head.json is rewritten in place at a fixed size within one timestamp tick,
    // so only its text tells for sure that no one rewrote it.
    return readText(join(this.dir, HEAD_FILE)) === seen.head;
  }

  /**
   * Where the chain ends now. head.json is trusted over the files (once its seal checks), so an append
   * never papers over a cut tail; a chain that shows tampering is refused rather than extended.
   */
  private tail(key: Buffer): Tail {
    const head = readHead(this.dir);
    if (head instanceof Error)
      throw new AuditChainError(`audit chain head is unreadable (${head.message}); ${SEE_VERIFY}`);
    if (head?.mac !== undefined && head.mac !== sealHead(key, head))
      throw new AuditChainError(`audit chain ${join(this.dir, HEAD_FILE)} has a bad seal; ${SEE_VERIFY}`);
    const genesis: Tail = { count: 0, hash: GENESIS, file: undefined, line: 0 };
    const end = lastLineOfChain(this.dir);
    const last = parseLine(end?.text);
    // An unsealed head, or none, is what keel before keys left; once a key exists every head is sealed
    // (one is written before the first line), so otherwise it is a cut chain dressed up as an old one.
    if (end && (!head || head.mac === undefined) && !this.keyIsNew) {
      const what = head ? 'is not sealed' : 'is missing';
      throw new AuditChainError(`audit chain ${join(this.dir, HEAD_FILE)} ${what}; ${SEE_VERIFY}`);
    }
    if (!head) {
      if (!end) return genesis;
      if (!last) throw new AuditChainError(`audit chain tail in ${end.path} is unreadable; ${SEE_VERIFY}`);
      // keel before keys crashed between its first line and its first head: the files are all there is
      return { count: last.seq, hash: last.hash, file: end.name, line: countLines(end.path) };
    }
    // One good line past the head is an append whose head write a crash cut short: it was on disk, keep it.
    const past =
      end !== undefined &&
      last !== undefined &&
      last.seq === head.count + 1 &&
      last.prev === head.hash &&
      (last.mac === undefined ? head.mac === undefined : lineSealed(key, last));
    if (end && last && past) {
      const line = end.name === head.file ? head.line + 1 : countLines(end.path);
      return { count: last.seq, hash: last.hash, file: end.name, line };
    }
    return head;
  }
}

/** Read the newest `n` lines of the chain in an audit folder, oldest first; unparsable lines come back as text only. */
export function readAuditTail(
  dir: string,
  n: number,
): Array<{ file: string; line: number; text: string; entry: AuditLine | undefined }> {
  const out: Array<{ file: string; line: number; text: string; entry: AuditLine | undefined }> = [];
  for (const name of listDayFiles(dir).reverse()) {
    const lines = splitLines(readFileSync(join(dir, name), 'utf8'));
    for (let i = lines.length - 1; i >= 0 && out.length < n; i--) {
      const text = lines[i] ?? '';
      out.push({ file: name, line: i + 1, text, entry: parseLine(text, false) });
    }
    if (out.length >= n) break;
  }
  return out.reverse();
}

/** Parse a line; with `check`, only a line whose hash verifies counts. */
function parseLine(text: string | undefined, check = true): AuditLine | undefined {
  if (text === undefined) return undefined;
  try {
    const value: unknown = JSON.parse(text);
    if (!isAuditLine(value)) return undefined;
    return !check || hashOf(value) === value.hash ? value : undefined;
  } catch {
    return undefined;
  }
}

/** A head with its seal. */
function sealed(key: Buffer, head: AuditHead): AuditHead {
  return { ...head, mac: sealHead(key, head) };
}

/** The chain's last complete line, from the newest day file that has one (an empty newest file is skipped). */
function lastLineOfChain(dir: string): { name: string; path: string; text: string } | undefined {
  for (const name of listDayFiles(dir).reverse()) {
    const path = join(dir, name);
    const text = lastCompleteLine(path);
    if (text !== undefined) return { name, path, text };
  }
  return undefined;
}

function readText(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

function countLines(path: string): number {
  return existsSync(path) ? splitLines(readFileSync(path, 'utf8')).length : 0;
}

/**
 * The last complete line of a file, reading only its end. A fragment after the last newline is an append
 * that crashed mid-write and so never returned (nothing acted on it); it is cut so the next line starts clean.
 */
function lastCompleteLine(path: string): string | undefined {
  const fd = openSync(path, 'r+');
  try {
    let size = fstatSync(fd).size;
    for (let want = 4096; ; want *= 4) {
      const start = Math.max(0, size - want);
      const buf = Buffer.alloc(size - start);
      readSync(fd, buf, 0, buf.length, start);
      const end = buf.lastIndexOf(0x0a);
      if (end === -1 && start > 0) continue;
      if (end !== buf.length - 1) {
        size = start + end + 1;
        ftruncateSync(fd, size);
        fsyncSync(fd);
      }
      // an empty file, or one whose only line was torn: no complete line at all
      if (end === -1) return undefined;
      const begin = end === 0 ? -1 : buf.lastIndexOf(0x0a, end - 1);
      if (begin === -1 && start > 0) continue;
      return buf.subarray(begin + 1, end).toString('utf8');
    }
  } finally {
    closeSync(fd);
  }
}

/**
 * Append a line. It is in the kernel when this returns, so it survives the process being killed, the
 * same promise the event log makes (SQLite WAL, synchronous=NORMAL). No fsync per line: on these disks
 * each costs 10-40 ms, and a power cut can lose the tail, which `keel audit verify` then reports.
 * Returns the file's stat after the line, so the next append can tell whether anyone else wrote since.
 */
function appendDurably(path: string, text: string): Stats {
  const fd = openSync(path, 'a');
  try {
    const buf = Buffer.from(text, 'utf8');
    for (let off = 0; off < buf.length; ) off += writeSync(fd, buf, off, buf.length - off);
    return fstatSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** head.json's fixed size: rewritten in place, so every version has the same length. */
const HEAD_BYTES = 512;

/**
 * Rewrite head.json in place, padded to a fixed size, with one write at offset 0. Writers hold the lock,
 * and a process killed during the write() still gets the whole buffer copied, so the file is always one
 * head or the next. A rename per append (the usual atomic replace) cost ~1 ms each on ext4; this costs
 * microseconds. Returns the text written.
 */
function writeHead(dir: string, head: AuditHead): string {
  const json = JSON.stringify(head);
  const text = `${json.padEnd(HEAD_BYTES - 1, ' ')}\n`;
  const path = join(dir, HEAD_FILE);
  const fd = openSync(path, existsSync(path) ? 'r+' : 'w');
  try {
    const buf = Buffer.from(text, 'utf8');
    writeSync(fd, buf, 0, buf.length, 0);
    // an older, longer head (or a hand-edited one) must not leave bytes behind
    if (fstatSync(fd).size !== buf.length) ftruncateSync(fd, buf.length);
  } finally {
    closeSync(fd);
  }
  return text;
}
