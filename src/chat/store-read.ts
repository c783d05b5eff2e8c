/** Reading the session store from the chat; loaded only when needed, so the prompt is up before SQLite is. */
import { existsSync } from 'node:fs';
import { keelPaths } from '../config/paths.js';
import { openDb } from '../store/db.js';
import { EventLog } from '../store/event-log.js';

/** Read from the session store, or undefined when there is none yet. */
export function withStore<T>(fn: (log: EventLog) => T, env: NodeJS.ProcessEnv = process.env): T | undefined {
  const path = keelPaths(env).db;
  if (!existsSync(path)) return undefined;
  const db = openDb(path);
  try {
    return fn(new EventLog(db));
  } finally {
    db.close();
  }
}
