/** Sessions and their append-only event logs. Knows nothing of what the events mean. */
import type { Db } from './db.js';

export interface SessionRow {
  id: string;
  parent_id: string | null;
  created_at: string;
  updated_at: string;
  mode: string;
  cwd: string;
  provider: string;
  model: string;
  prompt: string;
  code: string | null;
  summary: string | null;
  /** For a fork: the last event of the parent it shares. */
  forked_seq: number | null;
  /** What the session has cost so far, written when a run of it ends (null: no price known). */
  cost_usd: number | null;
}

export interface StoredEvent {
  session_id: string;
  seq: number;
  ts: string;
  type: string;
  data: Record<string, unknown>;
}

export interface NewSession {
  id: string;
  parentId?: string;
  mode: string;
  cwd: string;
  provider: string;
  model: string;
  prompt: string;
}

/** Appends made by this process, for the fault hook below. */
let appended = 0;

/**
 * A test hook, for the proof that a killed run resumes without redoing an effect: with
 * KEEL_FAULT_KILL_AFTER_EVENT=N in its environment, the process kills itself (SIGKILL, no clean-up) right
 * after its Nth event is committed, so a test can stop a run at every event boundary. An environment
 * variable is set by whoever starts keel; neither a repository nor a model can reach it.
 */
function faultAfterAppend(): void {
  appended++;
  const at = process.env.KEEL_FAULT_KILL_AFTER_EVENT;
  if (at !== undefined && Number(at) === appended) process.kill(process.pid, 'SIGKILL');
}

/** How many candidates an ambiguous id prefix lists. */
const AMBIGUOUS_SHOWN = 5;

/** An id prefix that names more than one session; the message lists some of them. */
export class SessionLookupError extends Error {
  override name = 'SessionLookupError';
}

/** Queries over the sessions and events tables. */
export class EventLog {
  private readonly insertEvent;
  private readonly touch;

  constructor(private readonly db: Db) {
    // the next seq is read inside the same write transaction: two processes appending to one session
    // serialize on SQLite's write lock and can never take the same number
    this.insertEvent = db.prepare(
      `INSERT INTO events (session_id, seq, ts, type, data, pid)
       SELECT ?, COALESCE(MAX(seq), 0) + 1, ?, ?, ?, ? FROM events WHERE session_id = ?
       RETURNING seq`,
    );
    this.touch = db.prepare('UPDATE sessions SET updated_at = ? WHERE id = ?');
  }

  createSession(s: NewSession): void {
    const now = new Date().toISOString();
    this.db
      .prepare(
        `INSERT INTO sessions (id, parent_id, created_at, updated_at, mode, cwd, provider, model, prompt)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(s.id, s.parentId ?? null, now, now, s.mode, s.cwd, s.provider, s.model, s.prompt);
  }

  /** Append one event; it is committed (durable across a crash) when this returns. */
  append(sessionId: string, type: string, data: Record<string, unknown>): StoredEvent {
    const ts = new Date().toISOString();
    const seq = this.db
      .transaction(() => {
        const row = this.insertEvent.get(
          sessionId,
          ts,
          type,
          JSON.stringify(data),
          process.pid,
          sessionId,
        ) as {
          seq: number;
        };
        this.touch.run(ts, sessionId);
        return row.seq;
      })
      .immediate();
    faultAfterAppend();
    return { session_id: sessionId, seq, ts, type, data };
  }

  /** A run of the session ended: its terminal code, summary and the session's cost so far. */
  finishSession(sessionId: string, code: string, summary: string, costUsd?: number | null): void {
    this.db
      .prepare('UPDATE sessions SET code = ?, summary = ?, cost_usd = ?, updated_at = ? WHERE id = ?')
      .run(code, summary, costUsd ?? null, new Date().toISOString(), sessionId);
  }

  /** A session is running again (resumed): it has no terminal code until this run ends. */
  reopenSession(sessionId: string): void {
    this.db
      .prepare('UPDATE sessions SET code = NULL, updated_at = ? WHERE id = ?')
      .run(new Date().toISOString(), sessionId);
  }

  /**
   * A new session sharing `source`'s events up to `atSeq` (all of them by default), linked to it
   * as its parent. One transaction: a fork is all there or not at all.
   */
  forkSession(sourceId: string, newId: string, atSeq?: number): SessionRow {
    const source = this.getSession(sourceId);
    if (!source) throw new Error(`no session ${sourceId}`);
    const now = new Date().toISOString();
    this.db
      .transaction(() => {
        const last = (
          this.db
            .prepare('SELECT COALESCE(MAX(seq), 0) AS seq FROM events WHERE session_id = ?')
            .get(sourceId) as {
            seq: number;
          }
        ).seq;
        const at = atSeq ?? last;
        this.db
          .prepare(
            `INSERT INTO sessions (id, parent_id, created_at, updated_at, mode, cwd, provider, model, prompt, forked_seq)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
          )
          .run(
            newId,
            sourceId,
            now,
            now,
            source.mode,
            source.cwd,
            source.provider,
            source.model,
            source.prompt,
            at,
          );
        this.db
          .prepare(
            `INSERT INTO events (session_id, seq, ts, type, data, pid)
           SELECT ?, seq, ts, type, data, pid FROM events WHERE session_id = ? AND seq <= ? ORDER BY seq`,
          )
          .run(newId, sourceId, at);
      })
      .immediate();
    return this.getSession(newId) as SessionRow;
  }
  getSession(id: string): SessionRow | undefined {
    return this.db.prepare('SELECT * FROM sessions WHERE id = ?').get(id) as SessionRow | undefined;
  }

  /**
   * The session with this id, or the one whose id starts with it; undefined when none does. A prefix
   * that several ids start with throws a SessionLookupError listing a few of them: guessing one would
   * act on the wrong session. With `keep`, only the sessions it keeps are candidates, before matching:
   * one that is not kept is neither found nor named.
   */
  findSession(idOrPrefix: string, keep: (row: SessionRow) => boolean = () => true): SessionRow | undefined {
    const exact = this.getSession(idOrPrefix);
    if (exact && keep(exact)) return exact;
    const rows: SessionRow[] = [];
    const matching = this.db
      .prepare("SELECT * FROM sessions WHERE id LIKE ? ESCAPE '\\' ORDER BY created_at DESC, id DESC")
      .iterate(`${idOrPrefix.replace(/[\\%_]/g, '\\$&')}%`) as IterableIterator<SessionRow>;
    for (const row of matching) {
      if (!keep(row)) continue;
      rows.push(row);
      if (rows.length > AMBIGUOUS_SHOWN) break;
    }
    if (rows.length <= 1) return rows[0];
    const shown = rows.slice(0, AMBIGUOUS_SHOWN).map((r) => r.id);
    const more = rows.length > AMBIGUOUS_SHOWN ? ', ...' : '';
    const count = rows.length > AMBIGUOUS_SHOWN ? `more than ${AMBIGUOUS_SHOWN}` : String(rows.length);
    throw new SessionLookupError(
      `"${idOrPrefix}" is ambiguous: it matches ${count} sessions (${shown.join(', ')}${more}); give more of the id`,
    );
  }

  listSessions(limit = 20, filter: { cwd?: string } = {}): SessionRow[] {
    if (filter.cwd !== undefined)
      return this.db
        .prepare('SELECT * FROM sessions WHERE cwd = ? ORDER BY created_at DESC, id DESC LIMIT ?')
        .all(filter.cwd, limit) as SessionRow[];
    return this.db
      .prepare('SELECT * FROM sessions ORDER BY created_at DESC, id DESC LIMIT ?')
      .all(limit) as SessionRow[];
  }

  /** The newest conversation started in `cwd`: a person's session or a fork of one (no run, attempt or subagent). */
  newestSession(cwd: string): SessionRow | undefined {
    return this.db
      .prepare(
        `SELECT s.* FROM sessions s
         WHERE s.cwd = ? AND s.mode IN ('ask', 'plan', 'edit', 'auto')
           AND (s.parent_id IS NULL OR s.forked_seq IS NOT NULL)
         ORDER BY s.updated_at DESC, s.id DESC LIMIT 1`,
      )
      .get(cwd) as SessionRow | undefined;
  }

  /** Sessions started by a run (a fix's plan and attempts), oldest first. */
  childSessions(parentId: string): SessionRow[] {
    return this.db
      .prepare('SELECT * FROM sessions WHERE parent_id = ? ORDER BY created_at, id')
      .all(parentId) as SessionRow[];
  }

  /** Sessions of these modes (`fix`, `loop`: the runs), newest first. */
  listByMode(modes: string[], limit: number): SessionRow[] {
    if (!modes.length) return [];
    return this.db
      .prepare(
        `SELECT * FROM sessions WHERE mode IN (${modes.map(() => '?').join(', ')})
         ORDER BY created_at DESC, id DESC LIMIT ?`,
      )
      .all(...modes, limit) as SessionRow[];
  }

  /**
   * Sessions nobody else started (no parent, or a fork a person made), newest first, each with how many
   * sessions it started itself (a run's plan and attempts, a loop's rounds, subagents).
   */
  listTopLevel(limit: number, filter: { cwd?: string } = {}): Array<SessionRow & { children: number }> {
    const where = `(s.parent_id IS NULL OR s.forked_seq IS NOT NULL)${filter.cwd === undefined ? '' : ' AND s.cwd = ?'}`;
    return this.db
      .prepare(
        `SELECT s.*, (SELECT COUNT(*) FROM sessions c WHERE c.parent_id = s.id AND c.forked_seq IS NULL) AS children
         FROM sessions s WHERE ${where} ORDER BY s.created_at DESC, s.id DESC LIMIT ?`,
      )
      .all(...(filter.cwd === undefined ? [] : [filter.cwd]), limit) as Array<
      SessionRow & { children: number }
    >;
  }

  /** A session's events in order, or only those after seq `after`. */
  events(sessionId: string, after = 0): StoredEvent[] {
    const rows = this.db
      .prepare(
        'SELECT session_id, seq, ts, type, data FROM events WHERE session_id = ? AND seq > ? ORDER BY seq',
      )
      .all(sessionId, after) as Array<Omit<StoredEvent, 'data'> & { data: string }>;
    return rows.map((r) => ({ ...r, data: JSON.parse(r.data) as Record<string, unknown> }));
  }

  /** Which process wrote each of a session's events, in order (null: written before keel recorded it). */
  writers(sessionId: string): Array<{ seq: number; pid: number | null }> {
    return this.db
      .prepare('SELECT seq, pid FROM events WHERE session_id = ? ORDER BY seq')
      .all(sessionId) as Array<{ seq: number; pid: number | null }>;
  }

  /** One stored event, or undefined. */
  event(sessionId: string, seq: number): StoredEvent | undefined {
    const row = this.db
      .prepare('SELECT session_id, seq, ts, type, data FROM events WHERE session_id = ? AND seq = ?')
      .get(sessionId, seq) as (Omit<StoredEvent, 'data'> & { data: string }) | undefined;
    return row && { ...row, data: JSON.parse(row.data) as Record<string, unknown> };
  }

  /** The first event of a type in a session's log, or undefined. */
  firstOfType(sessionId: string, type: string): StoredEvent | undefined {
    const row = this.db
      .prepare(
        'SELECT session_id, seq, ts, type, data FROM events WHERE session_id = ? AND type = ? ORDER BY seq LIMIT 1',
      )
      .get(sessionId, type) as (Omit<StoredEvent, 'data'> & { data: string }) | undefined;
    return row && { ...row, data: JSON.parse(row.data) as Record<string, unknown> };
  }

  /** The last seq of a session's log (0 when it has none). */
  lastSeq(sessionId: string): number {
    return (
      this.db
        .prepare('SELECT COALESCE(MAX(seq), 0) AS seq FROM events WHERE session_id = ?')
        .get(sessionId) as {
        seq: number;
      }
    ).seq;
  }
}
