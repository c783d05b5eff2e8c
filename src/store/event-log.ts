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

/** Queries over the sessions and events tables. */
export class EventLog {
  private readonly insertEvent;
  private readonly touch;
  private seqs = new Map<string, number>();

  constructor(private readonly db: Db) {
    this.insertEvent = db.prepare(
      'INSERT INTO events (session_id, seq, ts, type, data) VALUES (?, ?, ?, ?, ?)',
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
    this.seqs.set(s.id, 0);
  }

  /** Append one event; it is committed (durable across a crash) when this returns. */
  append(sessionId: string, type: string, data: Record<string, unknown>): StoredEvent {
    const seq = this.nextSeq(sessionId);
    const ts = new Date().toISOString();
    this.db.transaction(() => {
      this.insertEvent.run(sessionId, seq, ts, type, JSON.stringify(data));
      this.touch.run(ts, sessionId);
    })();
    this.seqs.set(sessionId, seq);
    return { session_id: sessionId, seq, ts, type, data };
  }

  finishSession(sessionId: string, code: string, summary: string): void {
    this.db
      .prepare('UPDATE sessions SET code = ?, summary = ?, updated_at = ? WHERE id = ?')
      .run(code, summary, new Date().toISOString(), sessionId);
  }

  getSession(id: string): SessionRow | undefined {
    return this.db.prepare('SELECT * FROM sessions WHERE id = ?').get(id) as SessionRow | undefined;
  }

  /** Find a session by full id or a unique prefix. */
  findSession(idOrPrefix: string): SessionRow | undefined {
    const exact = this.getSession(idOrPrefix);
    if (exact) return exact;
    const rows = this.db
      .prepare("SELECT * FROM sessions WHERE id LIKE ? ESCAPE '\\' LIMIT 2")
      .all(`${idOrPrefix.replace(/[\\%_]/g, '\\$&')}%`) as SessionRow[];
    return rows.length === 1 ? rows[0] : undefined;
  }

  listSessions(limit = 20): SessionRow[] {
    return this.db
      .prepare('SELECT * FROM sessions ORDER BY created_at DESC, id DESC LIMIT ?')
      .all(limit) as SessionRow[];
  }

  /** Sessions started by a run (a fix's plan and attempts), oldest first. */
  childSessions(parentId: string): SessionRow[] {
    return this.db
      .prepare('SELECT * FROM sessions WHERE parent_id = ? ORDER BY created_at, id')
      .all(parentId) as SessionRow[];
  }

  events(sessionId: string): StoredEvent[] {
    const rows = this.db
      .prepare('SELECT session_id, seq, ts, type, data FROM events WHERE session_id = ? ORDER BY seq')
      .all(sessionId) as Array<Omit<StoredEvent, 'data'> & { data: string }>;
    return rows.map((r) => ({ ...r, data: JSON.parse(r.data) as Record<string, unknown> }));
  }

  private nextSeq(sessionId: string): number {
    let last = this.seqs.get(sessionId);
    if (last === undefined) {
      const row = this.db
        .prepare('SELECT COALESCE(MAX(seq), 0) AS seq FROM events WHERE session_id = ?')
        .get(sessionId) as { seq: number };
      last = row.seq;
    }
    return last + 1;
  }
}
