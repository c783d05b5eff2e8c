/** The team store a verb works on: the one the user's `store` (or KEEL_STORE) names, SQLite in KEEL_HOME by default. */
import { existsSync } from 'node:fs';
import { keelPaths } from '../config/paths.js';
import { openStore, redact, type Store, storeTarget } from '../store/engine.js';
import { ConfigError, load } from '../term/options.js';
import { reportError } from './errors.js';

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

/**
 * Run `fn` with the configured store open, closing it after; a bad config or a store that cannot be
 * opened is the verb's error (CONFIG_ERROR, ENVIRONMENT_ERROR) in its --json shape.
 */
export async function withStore(
  flags: { json?: boolean; cwd?: string; profile?: string },
  create: boolean,
  fn: (store: Store | undefined, opened: OpenedStore) => Promise<number>,
): Promise<number> {
  let opened: OpenedStore;
  try {
    opened = await openConfiguredStore(flags, { create });
  } catch (err) {
    if (err instanceof ConfigError) return reportError(flags.json, 'CONFIG_ERROR', err.message);
    return reportError(flags.json, 'ENVIRONMENT_ERROR', `cannot open the store at ${(err as Error).message}`);
  }
  try {
    return await fn(opened.store, opened);
  } finally {
    await opened.store?.close();
  }
}
