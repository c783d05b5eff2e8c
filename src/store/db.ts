/** The SQLite connection and its migrations. Every part that keeps data goes through here. */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';

export type Db = Database.Database;

/**
 * Migrations, in order. A part that needs tables appends one here; never edit a shipped entry.
 * The index in this array plus one is the schema version.
 */
const MIGRATIONS: string[] = [
  `CREATE TABLE sessions (
     id TEXT PRIMARY KEY,
     parent_id TEXT,
     created_at TEXT NOT NULL,
     updated_at TEXT NOT NULL,
     mode TEXT NOT NULL,
     cwd TEXT NOT NULL,
     provider TEXT NOT NULL,
     model TEXT NOT NULL,
     prompt TEXT NOT NULL,
     code TEXT,
     summary TEXT
   );
   CREATE INDEX sessions_created ON sessions(created_at);
   CREATE TABLE events (
     session_id TEXT NOT NULL REFERENCES sessions(id),
     seq INTEGER NOT NULL,
     ts TEXT NOT NULL,
     type TEXT NOT NULL,
     data TEXT NOT NULL,
     PRIMARY KEY (session_id, seq)
   ) WITHOUT ROWID;`,
  // forks and resumes: where a fork branched off its parent, and what a session has cost so far
  `ALTER TABLE sessions ADD COLUMN forked_seq INTEGER;
   ALTER TABLE sessions ADD COLUMN cost_usd REAL;
   CREATE INDEX sessions_cwd ON sessions(cwd, created_at);
   CREATE INDEX sessions_parent ON sessions(parent_id);`,
  // memory (src/memory/memory-store.ts): items per project, their full-text index, and term counts for IDF
  `CREATE TABLE memory_items (
     n INTEGER PRIMARY KEY AUTOINCREMENT,
     id TEXT NOT NULL UNIQUE,
     project TEXT NOT NULL,
     kind TEXT NOT NULL,
     text TEXT NOT NULL,
     tags TEXT NOT NULL,
     session_id TEXT,
     author TEXT NOT NULL,
     created_at TEXT NOT NULL,
     updated_at TEXT NOT NULL,
     expires_at TEXT,
     hash TEXT NOT NULL,
     vec BLOB NOT NULL,
     evec BLOB,
     evec_model TEXT,
     UNIQUE (project, hash)
   );
   CREATE INDEX memory_items_project ON memory_items(project, updated_at);
   CREATE INDEX memory_items_expires ON memory_items(expires_at) WHERE expires_at IS NOT NULL;
   CREATE VIRTUAL TABLE memory_fts USING fts5(text, idents, tags, tokenize = 'porter unicode61');
   CREATE TABLE memory_terms (
     project TEXT NOT NULL,
     term TEXT NOT NULL,
     df INTEGER NOT NULL,
     PRIMARY KEY (project, term)
   ) WITHOUT ROWID;`,
  // code graph (src/graph/): files by canonical workspace root with their content hash; a file's rows go with it
  `CREATE TABLE graph_files (
     id INTEGER PRIMARY KEY,
     root TEXT NOT NULL,
     path TEXT NOT NULL,
     hash TEXT NOT NULL,
     language TEXT NOT NULL,
     UNIQUE (root, path)
   );
   CREATE TABLE graph_symbols (
     file_id INTEGER NOT NULL REFERENCES graph_files(id) ON DELETE CASCADE,
     name TEXT NOT NULL,
     kind TEXT NOT NULL,
     signature TEXT NOT NULL,
     start_line INTEGER NOT NULL,
     end_line INTEGER NOT NULL,
     parent TEXT
   );
   CREATE INDEX graph_symbols_file ON graph_symbols(file_id);
   CREATE INDEX graph_symbols_name ON graph_symbols(name);
   CREATE TABLE graph_refs (
     file_id INTEGER NOT NULL REFERENCES graph_files(id) ON DELETE CASCADE,
     name TEXT NOT NULL,
     line INTEGER NOT NULL
   );
   CREATE INDEX graph_refs_file ON graph_refs(file_id);
   CREATE INDEX graph_refs_name ON graph_refs(name);
   CREATE TABLE graph_imports (
     file_id INTEGER NOT NULL REFERENCES graph_files(id) ON DELETE CASCADE,
     module TEXT NOT NULL
   );
   CREATE INDEX graph_imports_file ON graph_imports(file_id);`,
  // A2A tasks of `keel serve` (src/server/a2a/task-store.ts): the SDK's Task as JSON, per project
  `CREATE TABLE a2a_tasks (
     id TEXT PRIMARY KEY,
     project TEXT NOT NULL,
     context_id TEXT NOT NULL,
     state INTEGER NOT NULL,
     task TEXT NOT NULL,
     pid INTEGER NOT NULL,
     updated_at TEXT NOT NULL
   );
   CREATE INDEX a2a_tasks_project ON a2a_tasks(project, updated_at);`,
  // observations are keel's own, not the user's (src/memory/observe.ts, src/fix/observe.ts): the rows a
  // session or a fix run recorded as the user's move to author keel
  `UPDATE memory_items SET author = 'keel'
   WHERE author = 'user' AND session_id IS NOT NULL
     AND kind IN ('file_changed', 'test_outcome', 'gate_denial', 'fix_verdict');`,
  // memory is kept per place (src/memory/project.ts): where a shared item came from
  `ALTER TABLE memory_items ADD COLUMN origin TEXT;`,
  // which process wrote each event (issue 27): a resumed run spans processes, and a late write names its writer
  `ALTER TABLE events ADD COLUMN pid INTEGER;`,
];

/** Open (creating if needed) keel's database and bring its schema up to date. */
export function openDb(path: string): Db {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const db = new Database(path);
  // first, so that every statement below waits for another process (two keel processes opening a
  // fresh KEEL_HOME at once) instead of failing at once with SQLITE_BUSY
  db.pragma('busy_timeout = 5000');
  db.pragma('journal_mode = WAL');
  // NORMAL keeps every committed event across a process crash (SIGKILL); only power loss can cost the tail.
  db.pragma('synchronous = NORMAL');
  db.pragma('foreign_keys = ON');
  migrate(db);
  return db;
}

function schemaVersion(db: Db): number {
  const row = db.prepare('SELECT version FROM schema_version').get() as { version: number } | undefined;
  return row?.version ?? 0;
}

function migrate(db: Db): void {
  db.exec('CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)');
  const tooNew = (current: number) =>
    new Error(
      `database schema version ${current} is newer than this keel understands (${MIGRATIONS.length}); upgrade keel`,
    );
  const seen = schemaVersion(db);
  if (seen > MIGRATIONS.length) throw tooNew(seen);
  if (seen === MIGRATIONS.length) return;
  db.transaction(() => {
    // read again under the write lock: another process may have migrated while this one waited for it
    const current = schemaVersion(db);
    if (current > MIGRATIONS.length) throw tooNew(current);
    for (let v = current; v < MIGRATIONS.length; v++) db.exec(MIGRATIONS[v] as string);
    db.exec('DELETE FROM schema_version');
    db.prepare('INSERT INTO schema_version (version) VALUES (?)').run(MIGRATIONS.length);
  }).immediate();
}
