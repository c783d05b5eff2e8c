/** Checking an audit chain: every line's hash, the links between lines, and the head against the tail. */
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import {
  GENESIS,
  HEAD_FILE,
  hashOf,
  isAuditLine,
  listDayFiles,
  readHead,
  splitLines,
} from './audit-chain.js';

/** The verdict on a chain: its length, or the first bad line (1-based) and what is wrong with it. */
export type VerifyResult =
  | { ok: true; lines: number }
  | { ok: false; line: number; file: string; problem: string };

interface Cursor {
  /** seq and hash of the last good line; undefined until the first line when a lone file is checked. */
  seq: number | undefined;
  hash: string | undefined;
}

interface Seen {
  hash: string;
  /** Full path, for the report; head.json names files by their base name. */
  file: string;
  name: string;
  line: number;
}

/**
 * Verify the chain in an audit folder (all day files in order, plus head.json) or in one day file (its
 * first line's seq and prev are taken as given). Throws if the path cannot be read.
 */
export function verifyChain(path: string): VerifyResult {
  return statSync(path).isDirectory() ? verifyFolder(path) : verifyFile(path);
}

function verifyFile(path: string): VerifyResult {
  const cursor: Cursor = { seq: undefined, hash: undefined };
  const lines = splitLines(readFileSync(path, 'utf8'));
  for (const [i, text] of lines.entries()) {
    const problem = checkLine(text, cursor);
    if (problem) return { ok: false, file: path, line: i + 1, problem };
  }
  return { ok: true, lines: lines.length };
}

function verifyFolder(dir: string): VerifyResult {
  const headPath = join(dir, HEAD_FILE);
  const head = readHead(dir);
  if (head instanceof Error)
    return { ok: false, file: headPath, line: 1, problem: `unreadable: ${head.message}` };
  const cursor: Cursor = { seq: 0, hash: GENESIS };
  // Only two seqs matter for the tail check: the head's own line, and one past the crash window.
  const watch = new Map<number, Seen | undefined>();
  if (head) {
    watch.set(head.count, undefined);
    watch.set(head.count + 2, undefined);
  }
  let last = { file: join(dir, head?.file ?? ''), line: 0 };
  for (const name of listDayFiles(dir)) {
    const file = join(dir, name);
    const lines = splitLines(readFileSync(file, 'utf8'));
    for (const [i, text] of lines.entries()) {
      const problem = checkLine(text, cursor);
      if (problem) return { ok: false, file, line: i + 1, problem };
      if (cursor.seq !== undefined && watch.has(cursor.seq)) {
        watch.set(cursor.seq, { hash: cursor.hash ?? '', file, name, line: i + 1 });
      }
    }
    last = { file, line: lines.length };
  }
  const count = cursor.seq ?? 0;
  return checkHead(head, count, watch, last, headPath) ?? { ok: true, lines: count };
}

/** The tail check: a cut tail leaves head.json pointing past the end, or at a line whose hash differs. */
function checkHead(
  head: ReturnType<typeof readHead>,
  count: number,
  watch: Map<number, Seen | undefined>,
  last: { file: string; line: number },
  headPath: string,
): VerifyResult | undefined {
  if (head instanceof Error) return undefined;
  if (!head) {
    // Between the first line's fsync and the first head write, a crash legitimately leaves no head.
    return count > 1 ? { ok: false, file: headPath, line: 1, problem: 'head.json is missing' } : undefined;
  }
  if (head.count > count) {
    return {
      ok: false,
      file: last.file,
      line: last.line + 1,
      problem: `the chain ends at seq ${count} but head.json records ${head.count} lines: the tail was cut`,
    };
  }
  // One line past the head is an append whose head write a crash interrupted; more than one was not written by keel.
  const extra = watch.get(head.count + 2);
  if (extra) {
    return {
      ok: false,
      file: extra.file,
      line: extra.line,
      problem: `head.json records ${head.count} lines but the chain has ${count}: lines were added behind its back`,
    };
  }
  if (head.count === 0) return undefined;
  const at = watch.get(head.count);
  if (!at) return undefined;
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
function checkLine(text: string, cursor: Cursor): string | undefined {
  if (text.trim() === '') return 'empty line';
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return 'invalid JSON';
  }
  if (!isAuditLine(value)) return 'not an audit line (needs seq, ts, type, prev and hash)';
  if (hashOf(value) !== value.hash) return 'hash mismatch: the line was changed after it was written';
  if (cursor.seq !== undefined && value.seq !== cursor.seq + 1) {
    return `seq ${value.seq} where ${cursor.seq + 1} was expected: a line was deleted, inserted or moved`;
  }
  if (cursor.hash !== undefined && value.prev !== cursor.hash) {
    return "prev does not match the previous line's hash: a line was deleted, inserted or moved";
  }
  cursor.seq = value.seq;
  cursor.hash = value.hash;
  return undefined;
}
