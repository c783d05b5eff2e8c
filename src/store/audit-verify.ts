/** Checking an audit chain: every line's hash and seal, the links between lines, and the head against the tail. */
import { readFileSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import {
  type AuditHead,
  GENESIS,
  HEAD_FILE,
  hashOf,
  isAuditLine,
  lineSealed,
  listDayFiles,
  readHead,
  sealHead,
  splitLines,
} from './audit-chain.js';
import { defaultKeyPath, readAuditKey } from './audit-key.js';

/** What to check a chain against. */
export interface VerifyOptions {
  /** The key file; by default the one beside the audit folder (`KEEL_HOME/audit.key`). */
  keyPath?: string;
  /** A line hash recorded earlier (a head printed by verify): the chain must still contain that line. */
  expectHead?: string;
}

/**
 * The verdict on a chain: its length, the hash of its last line (to anchor elsewhere) and how many lines at
 * its start predate the key; or the first bad line (1-based) and what is wrong with it.
 */
export type VerifyResult =
  | { ok: true; lines: number; head: string; unsealed: number }
  | { ok: false; line: number; file: string; problem: string };

interface Cursor {
  /** seq and hash of the last good line; undefined until the first line when a lone file is checked. */
  seq: number | undefined;
  hash: string | undefined;
  sealed: number;
  unsealed: number;
  /** Whether the last good line carries a seal, and its prev. */
  lastSealed: boolean;
  lastPrev: string;
  /** Whether a line carrying `expectHead` was seen. */
  anchored: boolean;
}

interface Seen {
  hash: string;
  /** Full path, for the report; head.json names files by their base name. */
  file: string;
  name: string;
  line: number;
  sealed: boolean;
  prev: string;
}

interface Context {
  key: Buffer | undefined;
  keyPath: string;
  expectHead: string | undefined;
}

/**
 * Verify the chain in an audit folder (all day files in order, plus head.json) or in one day file (its
 * first line's seq and prev are taken as given; head.json is checked when it is the newest day file).
 * Throws if the path cannot be read.
 */
export function verifyChain(path: string, options: VerifyOptions = {}): VerifyResult {
  const folder = statSync(path).isDirectory();
  const dir = folder ? path : dirname(path);
  const keyPath = options.keyPath ?? defaultKeyPath(dir);
  const key = readAuditKey(keyPath);
  if (key instanceof Error) return { ok: false, file: keyPath, line: 1, problem: key.message };
  const ctx: Context = { key, keyPath, expectHead: options.expectHead };
  const files = listDayFiles(dir);
  if (folder) return verifyFiles(dir, files, { seq: 0, hash: GENESIS }, ctx, true);
  // Only the newest day file ends where head.json points; an older one is checked on its own.
  return verifyFiles(
    dir,
    [basename(path)],
    { seq: undefined, hash: undefined },
    ctx,
    files.at(-1) === basename(path),
  );
}

function verifyFiles(
  dir: string,
  names: string[],
  start: Pick<Cursor, 'seq' | 'hash'>,
  ctx: Context,
  withHead: boolean,
): VerifyResult {
  const headPath = join(dir, HEAD_FILE);
  const head = withHead ? readHead(dir) : undefined;
  if (head instanceof Error)
    return { ok: false, file: headPath, line: 1, problem: `unreadable: ${head.message}` };
  const cursor: Cursor = {
    ...start,
    sealed: 0,
    unsealed: 0,
    lastSealed: false,
    lastPrev: '',
    anchored: false,
  };
  // Only three seqs matter for the tail check: the head's own line, the one after (a crash window) and
  // one past that (never written by keel).
  const watch = new Map<number, Seen | undefined>();
  if (head) for (const seq of [head.count, head.count + 1, head.count + 2]) watch.set(seq, undefined);
  let first: { file: string; line: number } | undefined;
  let last = { file: join(dir, head?.file ?? names[0] ?? ''), line: 0 };
  for (const name of names) {
    const file = join(dir, name);
    const lines = splitLines(readFileSync(file, 'utf8'));
    for (const [i, text] of lines.entries()) {
      const problem = checkLine(text, cursor, ctx);
      if (problem) return { ok: false, file, line: i + 1, problem };
      first ??= { file, line: i + 1 };
      if (cursor.seq !== undefined && watch.has(cursor.seq)) {
        const seen = { hash: cursor.hash ?? '', file, name, line: i + 1, prev: cursor.lastPrev };
        watch.set(cursor.seq, { ...seen, sealed: cursor.lastSealed });
      }
    }
    if (lines.length) last = { file, line: lines.length };
  }
  const count = cursor.sealed + cursor.unsealed;
  // A lone, empty newest file begun after the head's file holds nothing the head could miss.
  const emptyNewDay =
    start.seq === undefined && count === 0 && head !== undefined && head.file < (names[0] ?? '');
  if (withHead && !emptyNewDay) {
    const bad = checkHead(head, cursor.seq ?? 0, count, watch, last, headPath, ctx);
    if (bad) return bad;
  }
  if (count > 0 && cursor.sealed === 0) {
    return {
      ok: false,
      file: first?.file ?? headPath,
      line: first?.line ?? 1,
      problem: ctx.key
        ? 'no line is sealed, though an audit key exists: the sealed lines were removed, or keel before audit keys wrote this chain; it is not proven intact'
        : 'no line is sealed: keel wrote this chain before audit keys existed, so it is not proven intact (the next session seals it)',
    };
  }
  if (ctx.expectHead !== undefined && !cursor.anchored) {
    return {
      ok: false,
      file: last.file,
      line: last.line,
      problem: `no line has the expected hash ${ctx.expectHead}: the chain was rewritten since that head was recorded`,
    };
  }
  return { ok: true, lines: count, head: cursor.hash ?? GENESIS, unsealed: cursor.unsealed };
}

/** The tail check: a cut tail leaves head.json pointing past the end, or at a line whose hash differs. */
function checkHead(
  head: AuditHead | undefined,
  lastSeq: number,
  count: number,
  watch: Map<number, Seen | undefined>,
  last: { file: string; line: number },
  headPath: string,
  ctx: Context,
): VerifyResult | undefined {
  if (!head) {
    // keel writes a sealed head before a chain's first line, so no head at all means it was deleted.
    return count > 0
      ? { ok: false, file: headPath, line: 1, problem: 'head.json is missing: the chain was cut or replaced' }
      : undefined;
  }
  const at = watch.get(head.count);
  if (head.mac === undefined) {
    // keel before keys wrote unsealed heads; one is acceptable only where the line it names is unsealed too.
    if (!at || at.sealed)
      return {
        ok: false,
        file: headPath,
        line: 1,
        problem: 'head.json is not sealed: it was not written by keel',
      };
  } else if (!ctx.key) {
    return {
      ok: false,
      file: headPath,
      line: 1,
      problem: `sealed, but there is no audit key at ${ctx.keyPath}`,
    };
  } else if (head.mac !== sealHead(ctx.key, head)) {
    return {
      ok: false,
      file: headPath,
      line: 1,
      problem: "head.json's seal does not match: it was forged, or this is not the key that wrote it",
    };
  }
  if (head.count > lastSeq) {
    return {
      ok: false,
      file: last.file,
      line: last.line + 1,
      problem: `the chain ends at seq ${lastSeq} but head.json records ${head.count} lines: the tail was cut`,
    };
  }
  // One line past the head is an append whose head write a crash interrupted; more than one was not written by keel.
  if (lastSeq >= head.count + 2) {
    const extra = watch.get(head.count + 2);
    return {
      ok: false,
      file: extra?.file ?? last.file,
      line: extra?.line ?? 1,
      problem: `head.json records ${head.count} lines but the chain has ${lastSeq}: lines were added behind its back`,
    };
  }
  if (!at) {
    // A lone newest file whose first line starts after the head: only the first line of a new day may.
    const next = watch.get(head.count + 1);
    if (head.count === 0 || next?.prev === head.hash) return undefined;
    return {
      ok: false,
      file: next?.file ?? last.file,
      line: next?.line ?? 1,
      problem: "prev does not match head.json's hash: the tail was replaced",
    };
  }
  if (at.hash !== head.hash) {
    return {
      ok: false,
      file: at.file,
      line: at.line,
      problem: `its hash differs from head.json's: the tail was replaced`,
    };
  }
  if (at.name !== head.file || at.line !== head.line) {
    return {
      ok: false,
      file: at.file,
      line: at.line,
      problem: `head.json places seq ${head.count} at ${head.file} line ${head.line}`,
    };
  }
  return undefined;
}

/** Check one line against the one before it; advance the cursor when it is good. */
function checkLine(text: string, cursor: Cursor, ctx: Context): string | undefined {
  if (text.trim() === '') return 'empty line';
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return 'invalid JSON';
  }
  if (!isAuditLine(value)) return 'not an audit line (needs seq, ts, type, prev and hash)';
  if (hashOf(value) !== value.hash) return 'hash mismatch: the line was changed after it was written';
  if (value.mac === undefined) {
    if (cursor.sealed > 0) return 'not sealed, though lines before it are: it was not written by keel';
  } else if (!ctx.key) {
    return `sealed, but there is no audit key at ${ctx.keyPath} to check it`;
  } else if (!lineSealed(ctx.key, value)) {
    return 'seal mismatch: the line was changed after it was written, or sealed with another key';
  }
  if (cursor.seq !== undefined && value.seq !== cursor.seq + 1) {
    return `seq ${value.seq} where ${cursor.seq + 1} was expected: a line was deleted, inserted or moved`;
  }
  if (cursor.hash !== undefined && value.prev !== cursor.hash) {
    return "prev does not match the previous line's hash: a line was deleted, inserted or moved";
  }
  cursor.seq = value.seq;
  cursor.hash = value.hash;
  cursor.lastSealed = value.mac !== undefined;
  cursor.lastPrev = value.prev;
  if (cursor.lastSealed) cursor.sealed++;
  else cursor.unsealed++;
  if (value.hash === ctx.expectHead) cursor.anchored = true;
  return undefined;
}
