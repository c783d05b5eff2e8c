/**
 * The audit chain vouches for the session log it summarizes: every session's start (mode, provider, model,
 * folder) is in a sealed chain line, and a fork's branching is too. A session in keel.db whose start
 * differs from its line, or that no line vouches for, was written by something other than keel: it is not
 * resumed, and `keel audit verify` names it.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type AuditLine, hashOf, isAuditLine, lineSealed, listDayFiles, splitLines } from './audit-chain.js';
import { readAuditKey } from './audit-key.js';
import type { EventLog, SessionRow } from './event-log.js';

/** The fields of a session's start that its audit line records and a resume relies on. */
const VOUCHED = ['mode', 'provider', 'model', 'cwd'] as const;

/** A chain line that vouches for a session (its `session_start`, or a fork's `session_fork`), and where it is. */
export interface VouchingLine {
  file: string;
  line: number;
  entry: AuditLine;
}

/** What a check needs of keel.db: a session's row and the data of its (first) `session_start` event. */
export interface StoredStart {
  row: Pick<SessionRow, 'id' | 'mode' | 'cwd' | 'parent_id' | 'forked_seq'>;
  start: Record<string, unknown> | undefined;
}

/**
 * Why a session's recorded start is not what the chain vouches for, or undefined when it is. `lineOf`
 * finds a session's vouching line; `stored` reads another session's row (a fork's parent).
 */
export function startProblem(
  session: StoredStart,
  lineOf: (id: string) => VouchingLine | undefined,
  stored: (id: string) => StoredStart | undefined,
): string | undefined {
  const { row, start } = session;
  const where = (l: VouchingLine) => `${l.file} line ${l.line}`;
  // a fork's start is a copy of its parent's: its own line names the parent, the parent's line the start
  let current = row;
  let vouching = lineOf(row.id);
  const seen = new Set<string>([row.id]);
  while (vouching?.entry.type === 'session_fork') {
    const from = vouching.entry.from;
    if (typeof from !== 'string' || from !== current.parent_id)
      return `session ${current.id} is a fork of ${current.parent_id ?? 'nothing'} in keel.db, but its audit line (${where(vouching)}) says it was forked from ${String(from)}; keel.db was changed`;
    if (seen.has(from)) return `session ${row.id}'s forks loop back to ${from}`;
    seen.add(from);
    const parent = stored(from);
    if (!parent) return `session ${current.id} was forked from ${from}, which is not in keel.db`;
    current = parent.row;
    vouching = lineOf(from);
  }
  if (!vouching)
    return `no audit line vouches for session ${row.id}'s start: it was written into keel.db by something other than keel, or it predates the audit chain in use (a moved-aside chain, or a fork made before keel recorded forks: fork its parent again)`;
  if (!start)
    return `session ${row.id} has no session_start event in keel.db, though ${where(vouching)} records its start`;
  const line = vouching.entry;
  const claims: Array<[string, unknown, unknown]> = [['mode', row.mode, line.mode]];
  for (const field of VOUCHED) if (line[field] !== undefined) claims.push([field, start[field], line[field]]);
  // the row's folder is the start's (both written at once); a fork keeps its parent's
  if (typeof line.cwd === 'string') claims.push(['cwd', row.cwd, line.cwd]);
  for (const [field, db, chain] of claims)
    if (db !== chain)
      return `session ${row.id}'s start in keel.db does not match its audit line (${where(vouching)}): ${field} ${String(db)} in keel.db, ${String(chain)} in the audit chain; keel.db was changed`;
  return undefined;
}

/**
 * The sealed line that vouches for session `id` in an audit folder: searched from the day its id names
 * (ids start with their UTC date and time) on, or in every day file when the id names none. A line whose
 * hash or seal does not check is not a vouching line. A line once found is kept for the process: chat and
 * serve reopen a session on every turn, and a sealed line does not change.
 */
export function findVouchingLine(dir: string, keyPath: string, id: string): VouchingLine | undefined {
  const memo = `${dir}\0${keyPath}\0${id}`;
  const known = found.get(memo);
  if (known) return known;
  const key = readAuditKey(keyPath);
  if (!(key instanceof Buffer)) return undefined;
  const day = /^(\d{4})(\d{2})(\d{2})-/.exec(id);
  const from = day ? `${day[1]}-${day[2]}-${day[3]}.jsonl` : '';
  const needle = `"session_id":${JSON.stringify(id)}`;
  for (const name of listDayFiles(dir)) {
    if (name < from) continue;
    const file = join(dir, name);
    const text = readFileSync(file, 'utf8');
    // only the lines that name the session are parsed: a day file can hold many thousands
    for (let at = text.indexOf(needle); at !== -1; at = text.indexOf(needle, at + needle.length)) {
      const begin = text.lastIndexOf('\n', at) + 1;
      const stop = text.indexOf('\n', at);
      const entry = vouching(text.slice(begin, stop === -1 ? undefined : stop), id);
      if (entry && hashOf(entry) === entry.hash && lineSealed(key, entry)) {
        const line = { file, line: countNewlines(text, begin) + 1, entry };
        found.set(memo, line);
        return line;
      }
    }
  }
  return undefined;
}

const found = new Map<string, VouchingLine>();

function countNewlines(text: string, end: number): number {
  let n = 0;
  for (let i = text.indexOf('\n'); i !== -1 && i < end; i = text.indexOf('\n', i + 1)) n++;
  return n;
}

/** Every vouching line of a chain by session id (the first for each), for `keel audit verify`. */
export function vouchingLines(dir: string): Map<string, VouchingLine> {
  const out = new Map<string, VouchingLine>();
  for (const name of listDayFiles(dir)) {
    const file = join(dir, name);
    for (const [i, text] of splitLines(readFileSync(file, 'utf8')).entries()) {
      if (!text.includes('"session_start"') && !text.includes('"session_fork"')) continue;
      const entry = vouching(text);
      if (entry && typeof entry.session_id === 'string' && !out.has(entry.session_id))
        out.set(entry.session_id, { file, line: i + 1, entry });
    }
  }
  return out;
}

/** A parsed line when it is a session_start or session_fork line (of session `id`, when given). */
function vouching(text: string, id?: string): AuditLine | undefined {
  try {
    const value: unknown = JSON.parse(text);
    if (!isAuditLine(value)) return undefined;
    if (value.type !== 'session_start' && value.type !== 'session_fork') return undefined;
    return id === undefined || value.session_id === id ? value : undefined;
  } catch {
    return undefined;
  }
}

/**
 * How keel.db's sessions stand against the chain: the first whose start the chain does not vouch for
 * (`problem`), and how many have no line because they began before the chain's first line (a chain moved
 * aside and begun anew): those are not judged here, and a resume refuses them.
 */
export function checkSessions(
  dir: string,
  log: EventLog,
): { problem?: { session: string; problem: string }; predating: number } {
  const lines = vouchingLines(dir);
  const since = firstLineTime(dir);
  const stored = (id: string): StoredStart | undefined => {
    const row = log.getSession(id);
    return row ? { row, start: log.firstOfType(id, 'session_start')?.data } : undefined;
  };
  let predating = 0;
  for (const row of log.listSessions(-1).reverse()) {
    const start = log.firstOfType(row.id, 'session_start')?.data;
    // a run (fix, loop) starts with run_start, and a row whose start never got written has nothing to vouch for
    if (!start && row.forked_seq === null) continue;
    if (!lines.has(row.id) && (since === undefined || row.created_at < since)) {
      predating++;
      continue;
    }
    const problem = startProblem({ row, start }, (id) => lines.get(id), stored);
    if (problem) return { problem: { session: row.id, problem }, predating };
  }
  return { predating };
}

/** When the chain's first line was written, or undefined for an empty chain. */
function firstLineTime(dir: string): string | undefined {
  for (const name of listDayFiles(dir)) {
    const [first] = splitLines(readFileSync(join(dir, name), 'utf8'));
    if (!first) continue;
    try {
      const value: unknown = JSON.parse(first);
      return isAuditLine(value) ? value.ts : undefined;
    } catch {
      return undefined;
    }
  }
  return undefined;
}
