/** The log of a fix or loop run: one session row of its own, the parent of the sessions it starts. */
import { newSessionId } from '../agent/session.js';
import { type KeelPaths, keelPaths } from '../config/paths.js';
import type { Config } from '../config/schema.js';
import { type Db, openDb } from '../store/db.js';
import { EventLog } from '../store/event-log.js';

export interface RunLog {
  runId: string;
  paths: KeelPaths;
  db: Db;
  log: EventLog;
  /** Append one of the run's own events (fix_baseline, loop_round, ...). */
  record(type: string, data: Record<string, unknown>): void;
}

/** Open the store and record the run's session row (mode `fix` or `loop`). Close `db` when done. */
export function openRunLog(opts: {
  env: NodeJS.ProcessEnv;
  mode: 'fix' | 'loop';
  cwd: string;
  config: Config;
  prompt: string;
}): RunLog {
  const paths = keelPaths(opts.env);
  const runId = newSessionId();
  const db = openDb(paths.db);
  const log = new EventLog(db);
  log.createSession({
    id: runId,
    mode: opts.mode,
    cwd: opts.cwd,
    provider: opts.config.provider,
    model: opts.config.model || 'scripted',
    prompt: opts.prompt,
  });
  return { runId, paths, db, log, record: (type, data) => void log.append(runId, type, data) };
}
