/**
 * The team store's connection: one async interface over SQLite (KEEL_HOME/keel.db, the default) and
 * PostgreSQL (`store = "postgres://…"`). Parts write their SQL once, with `$1` placeholders, and ask
 * `sql.dialect` only where the engines differ (row locks). Transactions are the unit of every write.
 */
import { EventEmitter } from 'node:events';
import { resolve } from 'node:path';
import Database from 'better-sqlite3';
import type pgModule from 'pg';
import { type Db, openDb } from './db.js';
import { migrateTeamStore } from './migrations.js';
import { redact } from './redact.js';

export { redact };

export type Dialect = 'sqlite' | 'postgres';

/** Something that runs a statement: the store itself, or one open transaction. */
export interface Sql {
  readonly dialect: Dialect;
  /** Rows of a statement (`$1`, `$2`… placeholders). */
  query<T = Record<string, unknown>>(text: string, params?: readonly unknown[]): Promise<T[]>;
  /** Rows changed by a statement. */
  run(text: string, params?: readonly unknown[]): Promise<number>;
}

export interface Store extends Sql {
  /** Where the data lives, without a password: a file path or a postgres URL. */
  readonly where: string;
  /**
   * Run `fn` in one transaction (committed when it returns, rolled back when it throws). On SQLite the
   * transaction takes the write lock at once and transactions of one process run one after another.
   */
  transaction<T>(fn: (tx: Sql) => Promise<T>): Promise<T>;
  /** Tell every process listening on `channel` to re-read: a hint, coalesced, never a carrier of data. */
  hint(channel: string): void;
  /** Call `onHint` when some process hints on `channel`; returns the function that stops listening. */
  listen(channel: string, onHint: () => void): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

/** A store URL that is not one keel can open: names the value and what was expected. */
export class StoreUrlError extends Error {
  override name = 'StoreUrlError';
}

/** What `store` (or KEEL_STORE) names: SQLite in KEEL_HOME, or a PostgreSQL database. */
export type StoreTarget = { engine: 'sqlite'; path: string } | { engine: 'postgres'; url: string };

/** Read the `store` setting: "sqlite" or unset (the SQLite file at `sqlitePath`), or a postgres:// URL. */
export function storeTarget(value: string | undefined, sqlitePath: string): StoreTarget {
  if (value === undefined || value === '' || value === 'sqlite')
    return { engine: 'sqlite', path: sqlitePath };
  if (/^postgres(ql)?:\/\//.test(value)) return { engine: 'postgres', url: value };
  throw new StoreUrlError(
    `store: expected "sqlite" or a postgres://user@host/db URL, got ${JSON.stringify(redact(value))}`,
  );
}

/** Open the team store and bring its schema up to date. */
export async function openStore(target: StoreTarget): Promise<Store> {
  // node-postgres loads only for a PostgreSQL store: a SQLite one (every session's ledger by default) never needs it
  const store =
    target.engine === 'sqlite' ? new SqliteStore(target.path) : new PgStore(target.url, await loadPg());
  try {
    await migrateTeamStore(store);
  } catch (err) {
    await store.close();
    throw err;
  }
  return store;
}

/** A statement's `$1`-style text rewritten once: its `?` text and which parameter each `?` takes. */
interface Positional {
  sql: string;
  order: number[];
}

// by text (bounded): the same statements run again and again, and the rewrite was 2 % of the hub's time
const rewritten = new Map<string, Positional>();

/** `$1`-style SQL as better-sqlite3 wants it (`?`, with the values in order of use, as SQLite takes them). */
function positional(text: string, params: readonly unknown[]): [string, unknown[]] {
  let p = rewritten.get(text);
  if (!p) {
    const order: number[] = [];
    const sql = text.replace(/\$(\d+)/g, (_, n: string) => {
      order.push(Number(n) - 1);
      return '?';
    });
    p = { sql, order };
    if (rewritten.size >= 1000) rewritten.clear();
    rewritten.set(text, p);
  }
  const values = new Array<unknown>(p.order.length);
  for (let i = 0; i < p.order.length; i++) values[i] = sqliteValue(params[p.order[i] as number]);
  return [p.sql, values];
}

/** SQLite has no boolean and no undefined. */
function sqliteValue(value: unknown): unknown {
  if (value === undefined) return null;
  if (typeof value === 'boolean') return value ? 1 : 0;
  return value;
}

function sqliteSql(db: Db): Sql {
  // preparing costs more than running most of keel's statements: keep them, by text (bounded)
  const prepared = new Map<string, Database.Statement>();
  const prepare = (sql: string): Database.Statement => {
    let statement = prepared.get(sql);
    if (!statement) {
      if (prepared.size >= 500) prepared.clear();
      statement = db.prepare(sql);
      prepared.set(sql, statement);
    }
    return statement;
  };
  return {
    dialect: 'sqlite',
    async query<T>(text: string, params: readonly unknown[] = []): Promise<T[]> {
      const [sql, bound] = positional(text, params);
      const statement = prepare(sql);
      if (!statement.reader) {
        statement.run(bound);
        return [];
      }
      return statement.all(bound) as T[];
    },
    async run(text: string, params: readonly unknown[] = []): Promise<number> {
      const [sql, bound] = positional(text, params);
      return prepare(sql).run(bound).changes;
    },
  };
}

// one process-wide hub, so hints reach every store of this process opened on the same file
const sqliteHints = new EventEmitter();
sqliteHints.setMaxListeners(0);
const sqliteTurns = new Map<string, Promise<unknown>>();

class SqliteStore implements Store {
  readonly dialect = 'sqlite' as const;
  readonly where: string;
  private readonly db: Db;
  private readonly direct: Sql;
  // reads outside a transaction see the last commit (WAL), as another process would, and never wait for a writer
  private readonly reader: Db;
  private readonly reads: Sql;

  constructor(path: string) {
    this.where = path === ':memory:' ? path : resolve(path);
    this.db = openDb(path);
    this.reader = path === ':memory:' ? this.db : new Database(path, { readonly: true });
    this.reader.pragma('busy_timeout = 5000');
    this.direct = sqliteSql(this.db);
    this.reads = sqliteSql(this.reader);
  }

  /**
   * better-sqlite3 is synchronous: a transaction that awaits must not interleave with another, nor with
   * a read outside it, and a second connection of this process to the same file would block the whole
   * thread waiting for a lock this thread holds. So everything on one file waits its turn, process-wide.
   */
  private inTurn<T>(fn: () => Promise<T>): Promise<T> {
    const next = (sqliteTurns.get(this.where) ?? Promise.resolve()).then(fn);
    const settled = next.then(
      () => undefined,
      () => undefined,
    );
    sqliteTurns.set(this.where, settled);
    void settled.then(() => {
      if (sqliteTurns.get(this.where) === settled) sqliteTurns.delete(this.where);
    });
    return next;
  }

  /** A read of the last commit (the connection is read-only: a write here fails, use `run` or a transaction). */
  query<T>(text: string, params: readonly unknown[] = []): Promise<T[]> {
    return this.reads.query<T>(text, params);
  }

  run(text: string, params: readonly unknown[] = []): Promise<number> {
    return this.inTurn(() => this.direct.run(text, params));
  }

  transaction<T>(fn: (tx: Sql) => Promise<T>): Promise<T> {
    return this.inTurn(async () => {
      this.db.exec('BEGIN IMMEDIATE');
      try {
        const result = await fn(this.direct);
        this.db.exec('COMMIT');
        return result;
      } catch (err) {
        if (this.db.inTransaction) this.db.exec('ROLLBACK');
        throw err;
      }
    });
  }

  hint(channel: string): void {
    // other processes on this file poll; this one hears at once
    queueMicrotask(() => sqliteHints.emit(`${this.where}\0${channel}`));
  }

  async listen(channel: string, onHint: () => void): Promise<() => Promise<void>> {
    const name = `${this.where}\0${channel}`;
    sqliteHints.on(name, onHint);
    return async () => {
      sqliteHints.off(name, onHint);
    };
  }

  async close(): Promise<void> {
    await this.inTurn(async () => {
      if (this.reader.open) this.reader.close();
      if (this.db.open) this.db.close();
    });
  }
}

type Pg = typeof pgModule;
let pgLoaded: Promise<Pg> | undefined;

/** node-postgres, on first use. */
function loadPg(): Promise<Pg> {
  pgLoaded ??= import('pg').then(({ default: pg }) => {
    // BIGINT counters and epoch milliseconds fit a double; node-postgres would return them as strings
    pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));
    return pg;
  });
  return pgLoaded;
}

// statements with parameters are prepared once per connection under a name, so PostgreSQL parses and
// plans each text once rather than on every run (most of a short statement's server time). Not a text
// with a `*`: a column added by a newer keel's migration would change its rows' shape, which a prepared
// statement refuses ("cached plan must not change result type"). Bounded: texts past the bound (lists
// of varying length) run unnamed, as before.
const named = new Map<string, string>();
const MAX_NAMED = 300;

/** node-postgres's query: named (prepared once per connection) when it takes parameters and the bound allows. */
function pgQuery(text: string, params: readonly unknown[]): pgModule.QueryConfig {
  if (!params.length || text.includes('*')) return { text, values: params as unknown[] };
  let name = named.get(text);
  if (name === undefined && named.size < MAX_NAMED) {
    name = `keel_${named.size}`;
    named.set(text, name);
  }
  return name === undefined
    ? { text, values: params as unknown[] }
    : { name, text, values: params as unknown[] };
}

/** A failure that a fresh attempt of the same transaction resolves (serialization, deadlock). */
function retryable(err: unknown): boolean {
  const code = (err as { code?: string }).code;
  return code === '40001' || code === '40P01';
}

class PgStore implements Store {
  readonly dialect = 'postgres' as const;
  readonly where: string;
  private readonly pool: pgModule.Pool;
  private readonly url: string;
  private readonly notifier: Notifier;

  constructor(
    url: string,
    private readonly pg: Pg,
  ) {
    this.url = url;
    this.where = redact(url);
    // a server that does not answer is an error in seconds, not a hang
    this.pool = new this.pg.Pool({ connectionString: url, max: 10, connectionTimeoutMillis: 10_000 });
    // an idle connection the server drops must not crash the process
    this.pool.on('error', () => undefined);
    this.notifier = new Notifier((channel) => this.pool.query('SELECT pg_notify($1, $2)', [channel, '']));
  }

  async query<T>(text: string, params: readonly unknown[] = []): Promise<T[]> {
    return (await this.pool.query(pgQuery(text, params))).rows as T[];
  }

  async run(text: string, params: readonly unknown[] = []): Promise<number> {
    return (await this.pool.query(pgQuery(text, params))).rowCount ?? 0;
  }

  async transaction<T>(fn: (tx: Sql) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const client = await this.pool.connect();
      const tx: Sql = {
        dialect: 'postgres',
        query: async <R>(text: string, params: readonly unknown[] = []) =>
          (await client.query(pgQuery(text, params))).rows as R[],
        run: async (text: string, params: readonly unknown[] = []) =>
          (await client.query(pgQuery(text, params))).rowCount ?? 0,
      };
      try {
        await client.query('BEGIN');
        const result = await fn(tx);
        await client.query('COMMIT');
        client.release();
        return result;
      } catch (err) {
        await client.query('ROLLBACK').catch(() => undefined);
        client.release();
        if (!retryable(err) || attempt >= 5) throw err;
      }
    }
  }

  hint(channel: string): void {
    this.notifier.send(channel);
  }

  async listen(channel: string, onHint: () => void): Promise<() => Promise<void>> {
    // LISTEN holds its connection for as long as it listens: never one of the pool's
    const client = new this.pg.Client({ connectionString: this.url, connectionTimeoutMillis: 10_000 });
    client.on('error', () => undefined);
    await client.connect();
    client.on('notification', (message) => {
      if (message.channel === channel) onHint();
    });
    await client.query(`LISTEN ${quoteIdent(channel)}`);
    return async () => {
      await client.end().catch(() => undefined);
    };
  }

  async close(): Promise<void> {
    await this.notifier.drain();
    await this.pool.end();
  }
}

function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/**
 * NOTIFY takes a lock on the whole database at commit: sent from inside busy transactions it would
 * serialize them. So hints go out after commit, from one notifier per store, at most one in flight
 * per channel and any number of hints meanwhile folded into one more.
 */
class Notifier {
  private readonly inFlight = new Map<string, Promise<void>>();
  private readonly pending = new Set<string>();

  constructor(private readonly notify: (channel: string) => Promise<unknown>) {}

  send(channel: string): void {
    if (this.inFlight.has(channel)) {
      this.pending.add(channel);
      return;
    }
    const sent = this.notify(channel)
      .then(
        () => undefined,
        () => undefined, // a lost hint costs one poll interval, never data
      )
      .finally(() => {
        this.inFlight.delete(channel);
        if (this.pending.delete(channel)) this.send(channel);
      });
    this.inFlight.set(channel, sent);
  }

  async drain(): Promise<void> {
    while (this.inFlight.size) await Promise.all(this.inFlight.values());
  }
}
