/** The graph's rows in keel.db: one workspace root's files, symbols, references and imports. */
import type { Db } from '../store/db.js';
import type { Extracted, SymbolKind } from './extract.js';
import type { LanguageId } from './queries.js';

export interface SymbolRow {
  path: string;
  name: string;
  kind: SymbolKind;
  signature: string;
  start_line: number;
  end_line: number;
  parent: string | null;
}

export interface RefRow {
  path: string;
  name: string;
  line: number;
}

/** Reads and writes of the graph tables for one canonical workspace root. */
export class GraphStore {
  constructor(
    readonly db: Db,
    readonly root: string,
  ) {}

  /** Every indexed file with its content hash. */
  hashes(): Map<string, string> {
    const rows = this.db
      .prepare('SELECT path, hash FROM graph_files WHERE root = ?')
      .all(this.root) as Array<{
      path: string;
      hash: string;
    }>;
    return new Map(rows.map((r) => [r.path, r.hash]));
  }

  /** Replace one file's rows with what was extracted from its current content. */
  put(path: string, hash: string, language: LanguageId, found: Extracted): void {
    const db = this.db;
    db.prepare('DELETE FROM graph_files WHERE root = ? AND path = ?').run(this.root, path);
    const { lastInsertRowid } = db
      .prepare('INSERT INTO graph_files (root, path, hash, language) VALUES (?, ?, ?, ?)')
      .run(this.root, path, hash, language);
    const symbol = db.prepare(
      'INSERT INTO graph_symbols (file_id, name, kind, signature, start_line, end_line, parent) VALUES (?, ?, ?, ?, ?, ?, ?)',
    );
    for (const d of found.defs)
      symbol.run(lastInsertRowid, d.name, d.kind, d.signature, d.startLine, d.endLine, d.parent ?? null);
    const ref = db.prepare('INSERT INTO graph_refs (file_id, name, line) VALUES (?, ?, ?)');
    for (const r of found.refs) ref.run(lastInsertRowid, r.name, r.line);
    const imp = db.prepare('INSERT INTO graph_imports (file_id, module) VALUES (?, ?)');
    for (const m of found.imports) imp.run(lastInsertRowid, m);
  }

  remove(path: string): void {
    this.db.prepare('DELETE FROM graph_files WHERE root = ? AND path = ?').run(this.root, path);
  }

  /** How many files and symbols the index holds. */
  counts(): { files: number; symbols: number } {
    const files = this.db.prepare('SELECT count(*) AS n FROM graph_files WHERE root = ?').get(this.root) as {
      n: number;
    };
    const symbols = this.db
      .prepare(
        'SELECT count(*) AS n FROM graph_symbols s JOIN graph_files f ON f.id = s.file_id WHERE f.root = ?',
      )
      .get(this.root) as { n: number };
    return { files: files.n, symbols: symbols.n };
  }

  /** Definitions named `name` (exactly), in path and line order. */
  definitions(name: string, limit: number): SymbolRow[] {
    return this.db
      .prepare(
        `SELECT f.path, s.name, s.kind, s.signature, s.start_line, s.end_line, s.parent
         FROM graph_symbols s JOIN graph_files f ON f.id = s.file_id
         WHERE f.root = ? AND s.name = ? ORDER BY f.path, s.start_line LIMIT ?`,
      )
      .all(this.root, name, limit) as SymbolRow[];
  }

  /** Uses of `name`, in path and line order. */
  references(name: string, limit: number): RefRow[] {
    return this.db
      .prepare(
        `SELECT f.path, r.name, r.line FROM graph_refs r JOIN graph_files f ON f.id = r.file_id
         WHERE f.root = ? AND r.name = ? ORDER BY f.path, r.line LIMIT ?`,
      )
      .all(this.root, name, limit) as RefRow[];
  }

  /** A file's definitions in line order, or undefined when the file is not indexed. */
  outline(path: string): SymbolRow[] | undefined {
    const file = this.db
      .prepare('SELECT id FROM graph_files WHERE root = ? AND path = ?')
      .get(this.root, path) as { id: number } | undefined;
    if (!file) return undefined;
    return this.db
      .prepare(
        `SELECT ? AS path, name, kind, signature, start_line, end_line, parent FROM graph_symbols
         WHERE file_id = ? ORDER BY start_line`,
      )
      .all(path, file.id) as SymbolRow[];
  }

  /** Every import of every file (for resolving which files import a module or file). */
  imports(): Array<{ path: string; module: string }> {
    return this.db
      .prepare(
        'SELECT f.path, i.module FROM graph_imports i JOIN graph_files f ON f.id = i.file_id WHERE f.root = ?',
      )
      .all(this.root) as Array<{ path: string; module: string }>;
  }

  /** Every definition of the workspace (for ranking). */
  allSymbols(): SymbolRow[] {
    return this.db
      .prepare(
        `SELECT f.path, s.name, s.kind, s.signature, s.start_line, s.end_line, s.parent
         FROM graph_symbols s JOIN graph_files f ON f.id = s.file_id WHERE f.root = ? ORDER BY f.path, s.start_line`,
      )
      .all(this.root) as SymbolRow[];
  }

  /** How often each file names each identifier (for ranking). */
  refCounts(): Array<{ path: string; name: string; n: number }> {
    return this.db
      .prepare(
        `SELECT f.path, r.name, count(*) AS n FROM graph_refs r JOIN graph_files f ON f.id = r.file_id
         WHERE f.root = ? GROUP BY f.path, r.name`,
      )
      .all(this.root) as Array<{ path: string; name: string; n: number }>;
  }
}
