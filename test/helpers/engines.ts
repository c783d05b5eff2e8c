/** The team store's engines for contract suites: `describe.each(await storeEngines())` runs a suite on both. */
import { join } from 'node:path';
import { afterAll } from 'vitest';
import { openStore, type Store } from '../../src/store/engine.js';
import { freshPgDatabase, skipReason } from './pg.js';
import { tempDir } from './tmp.js';

export interface TestEngine {
  name: 'sqlite' | 'postgres';
  /** Why this engine's cases skip here; empty when they run. */
  skip: string;
  /** Another connection to this file's one database of the engine (as another process would open it). */
  open(): Promise<Store>;
}

/** SQLite (a fresh keel.db) and PostgreSQL (a fresh database of the run's cluster, or skipped). */
export async function storeEngines(): Promise<TestEngine[]> {
  const opened: Store[] = [];
  afterAll(async () => {
    for (const store of opened) await store.close();
  });
  const track = async (store: Promise<Store>) => {
    const s = await store;
    opened.push(s);
    return s;
  };
  const sqlitePath = join(tempDir('keel-store-'), 'keel.db');
  const pgUrl = await freshPgDatabase();
  return [
    { name: 'sqlite', skip: '', open: () => track(openStore({ engine: 'sqlite', path: sqlitePath })) },
    {
      name: 'postgres',
      skip: pgUrl ? '' : skipReason,
      open: () => track(openStore({ engine: 'postgres', url: pgUrl ?? 'postgres://unavailable' })),
    },
  ];
}
