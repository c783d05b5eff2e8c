/** The team store a verb works on: the one the user's `store` (or KEEL_STORE) names, SQLite in KEEL_HOME by default. */
import { existsSync } from 'node:fs';
import { keelPaths } from '../config/paths.js';
import { openStore, redact, type Store, storeTarget } from '../store/engine.js';
import { load } from '../term/options.js';

export interface OpenedStore {
  /** Undefined when `create` is off and the default SQLite file does not exist yet. */
  store?: Store;
  engine: 'sqlite' | 'postgres';
  /** The file or the URL, its password masked. */
  where: string;
}

/**
 * Open the configured store. Throws ConfigError for a bad config, and an Error naming the store (without
 * its password) when it cannot be opened.
 */
export async function openConfiguredStore(
  flags: { cwd?: string; profile?: string },
  opts: { create: boolean },
): Promise<OpenedStore> {
  const { loaded } = load(flags);
  const target = storeTarget(loaded.config.store, keelPaths().db);
  const where = target.engine === 'sqlite' ? target.path : redact(target.url);
  if (target.engine === 'sqlite' && !opts.create && !existsSync(target.path))
    return { engine: 'sqlite', where };
  try {
    return { store: await openStore(target), engine: target.engine, where };
  } catch (err) {
    throw new Error(`${where}: ${(err as Error).message}`);
  }
}
