/** The memory tables' queries (items, their full-text index, term counts). No SQL about memory lives anywhere else. */
import type { Db } from '../store/db.js';
import type { TermStats } from './embed.js';
import type { Author, Kind, MemoryItem } from './items.js';

interface Row {
  n: number;
  id: string;
  project: string;
  kind: string;
  text: string;
  tags: string;
  session_id: string | null;
  author: string;
  created_at: string;
  updated_at: string;
  expires_at: string | null;
  hash: string;
  origin: string | null;
}

/** The reserved term whose count is the project's number of items: IDF needs it on every add, COUNT(*) is a scan. */
const ITEMS = '\u0000items';

const COLUMNS =
  'n, id, project, kind, text, tags, session_id, author, created_at, updated_at, expires_at, hash, origin';

function toItem(r: Row): MemoryItem {
  return {
    id: r.id,
    project: r.project,
    kind: r.kind as Kind,
    text: r.text,
    tags: JSON.parse(r.tags) as string[],
    session_id: r.session_id,
    author: r.author as Author,
    created_at: r.created_at,
    updated_at: r.updated_at,
    expires_at: r.expires_at,
    hash: r.hash,
    origin: r.origin,
  };
}

export interface NewRow extends MemoryItem {
  vec: Buffer;
  evec?: Buffer;
  evecModel?: string;
  /** The identifier terms for the index's `idents` column. */
  idents: string;
  /** Distinct terms whose document frequency this item adds to. */
  terms: string[];
}

/** One vector per item, ready for a dot product: the item's row number and its bytes. */
export interface VectorRow {
  n: number;
  vec: Buffer;
}

/** An ambiguous id prefix: more than one item of the project starts with it. */
export class MemoryLookupError extends Error {
  override name = 'MemoryLookupError';
}

export class MemoryStore {
  constructor(private readonly db: Db) {}

  byHash(project: string, hash: string): MemoryItem | undefined {
    const r = this.db
      .prepare(`SELECT ${COLUMNS} FROM memory_items WHERE project = ? AND hash = ?`)
      .get(project, hash) as Row | undefined;
    return r ? toItem(r) : undefined;
  }

  /** Insert an item, its index row and its term counts in one transaction. */
  insert(row: NewRow): void {
    this.db.transaction(() => {
      const { lastInsertRowid } = this.db
        .prepare(
          `INSERT INTO memory_items (id, project, kind, text, tags, session_id, author, created_at, updated_at, expires_at, hash, origin, vec, evec, evec_model)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        )
        .run(
          row.id,
          row.project,
          row.kind,
          row.text,
          JSON.stringify(row.tags),
          row.session_id,
          row.author,
          row.created_at,
          row.updated_at,
          row.expires_at,
          row.hash,
          row.origin,
          row.vec,
          row.evec ?? null,
          row.evecModel ?? null,
        );
      this.db
        .prepare('INSERT INTO memory_fts (rowid, text, idents, tags) VALUES (?, ?, ?, ?)')
        .run(lastInsertRowid, row.text, row.idents, row.tags.join(' '));
      const bump = this.db.prepare(
        `INSERT INTO memory_terms (project, term, df) VALUES (?, ?, 1)
         ON CONFLICT (project, term) DO UPDATE SET df = df + 1`,
      );
      for (const term of [ITEMS, ...row.terms]) bump.run(row.project, term);
    })();
  }

  /** A duplicate seen again: its time, expiry, tags and author move on; no new row. */
  refresh(
    id: string,
    fields: { updated_at: string; expires_at: string | null; tags: string[]; author: Author },
  ): void {
    this.db.transaction(() => {
      const r = this.db.prepare('SELECT n FROM memory_items WHERE id = ?').get(id) as
        | { n: number }
        | undefined;
      if (!r) return;
      this.db
        .prepare('UPDATE memory_items SET updated_at = ?, expires_at = ?, tags = ?, author = ? WHERE id = ?')
        .run(fields.updated_at, fields.expires_at, JSON.stringify(fields.tags), fields.author, id);
      this.db.prepare('UPDATE memory_fts SET tags = ? WHERE rowid = ?').run(fields.tags.join(' '), r.n);
    })();
  }

  /** Remove items (by id) with their index rows and term counts. */
  remove(project: string, ids: string[], termsOf: (text: string) => string[]): void {
    this.db.transaction(() => {
      const drop = this.db.prepare('UPDATE memory_terms SET df = df - 1 WHERE project = ? AND term = ?');
      for (const id of ids) {
        const r = this.db
          .prepare('SELECT n, text FROM memory_items WHERE id = ? AND project = ?')
          .get(id, project) as { n: number; text: string } | undefined;
        if (!r) continue;
        for (const term of [ITEMS, ...termsOf(r.text)]) drop.run(project, term);
        this.db.prepare('DELETE FROM memory_fts WHERE rowid = ?').run(r.n);
        this.db.prepare('DELETE FROM memory_items WHERE n = ?').run(r.n);
      }
      this.db.prepare('DELETE FROM memory_terms WHERE project = ? AND df <= 0').run(project);
    })();
  }

  get(project: string, id: string): MemoryItem | undefined {
    const r = this.db
      .prepare(`SELECT ${COLUMNS} FROM memory_items WHERE project = ? AND id = ?`)
      .get(project, id) as Row | undefined;
    return r ? toItem(r) : undefined;
  }

  /** The project's item whose id is or starts with `prefix`; throws MemoryLookupError when several do. */
  find(project: string, prefix: string): MemoryItem | undefined {
    const rows = this.db
      .prepare(
        `SELECT ${COLUMNS} FROM memory_items WHERE project = ? AND id LIKE ? ESCAPE '\\' ORDER BY id LIMIT 6`,
      )
      .all(project, `${prefix.replace(/[\\%_]/g, '\\$&')}%`) as Row[];
    const exact = rows.find((r) => r.id === prefix);
    if (exact) return toItem(exact);
    if (rows.length > 1)
      throw new MemoryLookupError(
        `"${prefix}" is ambiguous: it matches ${rows.length > 5 ? 'more than 5' : rows.length} items (${rows
          .slice(0, 5)
          .map((r) => r.id)
          .join(', ')}); give more of the id`,
      );
    return rows[0] ? toItem(rows[0]) : undefined;
  }

  /** Items by row numbers, in the order asked. */
  byRowNumbers(ns: number[]): Map<number, MemoryItem> {
    const out = new Map<number, MemoryItem>();
    const stmt = this.db.prepare(`SELECT ${COLUMNS} FROM memory_items WHERE n = ?`);
    for (const n of ns) {
      const r = stmt.get(n) as Row | undefined;
      if (r) out.set(n, toItem(r));
    }
    return out;
  }

  list(project: string, opts: { kind?: Kind; limit?: number } = {}): MemoryItem[] {
    const rows = this.db
      .prepare(
        `SELECT ${COLUMNS} FROM memory_items WHERE project = ? AND (? IS NULL OR kind = ?)
         ORDER BY updated_at DESC, id LIMIT ?`,
      )
      .all(project, opts.kind ?? null, opts.kind ?? null, opts.limit ?? -1) as Row[];
    return rows.map(toItem);
  }

  /** Items of every project past their expiry at `now`. */
  expired(now: string): MemoryItem[] {
    const rows = this.db
      .prepare(
        `SELECT ${COLUMNS} FROM memory_items WHERE expires_at IS NOT NULL AND expires_at <= ? ORDER BY n`,
      )
      .all(now) as Row[];
    return rows.map(toItem);
  }

  /**
   * The places that hold memory of a repository (`identity`, `git:<root commit>`): each key with its item
   * count, including the key alone (items from before memory was kept per place).
   */
  places(identity: string): Array<{ project: string; items: number }> {
    return this.db
      .prepare(
        // a range on the key ('@' sorts just before 'A'), so the project index answers, not a scan
        `SELECT project, COUNT(*) AS items FROM memory_items
         WHERE project = ? OR (project >= ? || '@' AND project < ? || 'A')
         GROUP BY project ORDER BY project`,
      )
      .all(identity, identity, identity) as Array<{ project: string; items: number }>;
  }

  /**
   * Items under a key from before memory was kept per place (`from`) that a session ran at `root` (or in
   * a folder inside it) recorded: the store can tell where these were made, so they move to that place's
   * key (`to`) with their term counts. An item `to` already holds stays where it is. Returns how many moved.
   */
  claimMadeAt(from: string, to: string, root: string, termsOf: (text: string) => string[]): number {
    const rows = this.db
      .prepare(
        `SELECT m.n, m.text, m.hash FROM memory_items m JOIN sessions s ON s.id = m.session_id
         WHERE m.project = ? AND (s.cwd = ? OR substr(s.cwd, 1, length(?) + 1) = ? || '/')
         ORDER BY m.n`,
      )
      .all(from, root, root, root) as Array<{ n: number; text: string; hash: string }>;
    if (!rows.length) return 0;
    let moved = 0;
    this.db.transaction(() => {
      const drop = this.db.prepare('UPDATE memory_terms SET df = df - 1 WHERE project = ? AND term = ?');
      const bump = this.db.prepare(
        `INSERT INTO memory_terms (project, term, df) VALUES (?, ?, 1)
         ON CONFLICT (project, term) DO UPDATE SET df = df + 1`,
      );
      const taken = this.db.prepare('SELECT 1 FROM memory_items WHERE project = ? AND hash = ?');
      const move = this.db.prepare('UPDATE memory_items SET project = ? WHERE n = ?');
      for (const r of rows) {
        if (taken.get(to, r.hash)) continue;
        for (const term of [ITEMS, ...termsOf(r.text)]) {
          drop.run(from, term);
          bump.run(to, term);
        }
        move.run(to, r.n);
        moved++;
      }
      this.db.prepare('DELETE FROM memory_terms WHERE project = ? AND df <= 0').run(from);
    })();
    return moved;
  }

  countsByKind(project: string): Record<string, number> {
    const rows = this.db
      .prepare('SELECT kind, COUNT(*) AS c FROM memory_items WHERE project = ? GROUP BY kind ORDER BY kind')
      .all(project) as Array<{ kind: string; c: number }>;
    return Object.fromEntries(rows.map((r) => [r.kind, r.c]));
  }

  /** Document frequencies for IDF, read per term on demand and cached for this object's life. */
  termStats(project: string): TermStats {
    const stmt = this.db.prepare('SELECT df FROM memory_terms WHERE project = ? AND term = ?');
    const count = (stmt.get(project, ITEMS) as { df: number } | undefined)?.df ?? 0;
    const cache = new Map<string, number>();
    return {
      count,
      df(term) {
        let df = cache.get(term);
        if (df === undefined) {
          df = (stmt.get(project, term) as { df: number } | undefined)?.df ?? 0;
          cache.set(term, df);
        }
        return df;
      },
    };
  }

  /**
   * The BM25 best `limit` rows of the project for an FTS5 query (bm25 is lower-is-better).
   *
   * Joining every match to memory_items to check its project cost most of the time (a common word
   * matches tens of thousands of rows, each a table lookup), so the index is asked alone first, for
   * the best rows of all projects, and only those are checked. When at least `limit` of the global
   * best `depth` rows are this project's, they are exactly its best `limit`: any item of the project
   * ranked lower globally is ranked lower here too. Otherwise (other projects' items crowd the top)
   * the joined query answers.
   */
  fullText(project: string, match: string, limit: number): Array<{ n: number; score: number }> {
    const alone = this.db.prepare(
      `SELECT rowid AS n, bm25(memory_fts, 1.0, 2.0, 1.0) AS score FROM memory_fts
       WHERE memory_fts MATCH ? ORDER BY score, rowid LIMIT ?`,
    );
    for (const depth of [limit, limit * 8]) {
      const top = alone.all(match, depth) as Array<{ n: number; score: number }>;
      const mine = this.inProject(
        project,
        top.map((r) => r.n),
      );
      const kept = top.filter((r) => mine.has(r.n));
      // fewer rows than asked: that was every match there is, and `kept` is all of the project's
      if (kept.length >= limit || top.length < depth) return kept.slice(0, limit);
    }
    return this.db
      .prepare(
        `SELECT f.rowid AS n, bm25(memory_fts, 1.0, 2.0, 1.0) AS score
         FROM memory_fts f JOIN memory_items i ON i.n = f.rowid
         WHERE memory_fts MATCH ? AND i.project = ?
         ORDER BY score, f.rowid LIMIT ?`,
      )
      .all(match, project, limit) as Array<{ n: number; score: number }>;
  }

  /** Which of these row numbers are the project's items. */
  private inProject(project: string, ns: number[]): Set<number> {
    if (!ns.length) return new Set();
    const rows = this.db
      // `+project`: look the row numbers up by key; the project index would read every item of the project
      .prepare(`SELECT n FROM memory_items WHERE +project = ? AND n IN (SELECT value FROM json_each(?))`)
      .all(project, JSON.stringify(ns)) as Array<{ n: number }>;
    return new Set(rows.map((r) => r.n));
  }

  /**
   * A cheap fingerprint of the project's vectors: the newest row number anywhere (row numbers are never
   * reused, so every insert moves it) and the project's item count (every removal moves it).
   */
  vectorVersion(project: string): string {
    const max = (this.db.prepare('SELECT COALESCE(MAX(n), 0) AS m FROM memory_items').get() as { m: number })
      .m;
    const row = this.db
      .prepare('SELECT df FROM memory_terms WHERE project = ? AND term = ?')
      .get(project, ITEMS) as { df: number } | undefined;
    return `${max}:${row?.df ?? 0}`;
  }

  /** Items of the project whose offline vector is not `bytes` long (written by an older embedder). */
  staleVectors(project: string, bytes: number): Array<{ n: number; text: string }> {
    return this.db
      .prepare('SELECT n, text FROM memory_items WHERE project = ? AND length(vec) != ? ORDER BY n')
      .all(project, bytes) as Array<{ n: number; text: string }>;
  }

  /** Replace offline vectors (row number and bytes) in one transaction. */
  setVectors(rows: VectorRow[]): void {
    const stmt = this.db.prepare('UPDATE memory_items SET vec = ? WHERE n = ?');
    this.db.transaction(() => {
      for (const r of rows) stmt.run(r.vec, r.n);
    })();
  }

  /** The offline vectors of these row numbers that are the project's items, in row order. */
  vectorsOf(project: string, ns: number[]): VectorRow[] {
    if (!ns.length) return [];
    return this.db
      .prepare(
        // `+project`: by key, as in inProject
        `SELECT n, vec FROM memory_items WHERE +project = ? AND n IN (SELECT value FROM json_each(?)) ORDER BY n`,
      )
      .all(project, JSON.stringify(ns)) as VectorRow[];
  }

  /** Every offline vector of the project (or endpoint vector of `model`), in row order. */
  vectors(project: string, model: string | null): VectorRow[] {
    if (model === null)
      return this.db
        .prepare('SELECT n, vec FROM memory_items WHERE project = ? ORDER BY n')
        .all(project) as VectorRow[];
    return this.db
      .prepare('SELECT n, evec AS vec FROM memory_items WHERE project = ? AND evec_model = ? ORDER BY n')
      .all(project, model) as VectorRow[];
  }
}
