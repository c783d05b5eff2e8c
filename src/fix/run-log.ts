/**
 * The log of a fix or loop run: one session row of its own, the parent of the sessions it starts.
 * Its events (the baseline, each attempt, the verdict) go through the same recorder as a session's:
 * into the event log and, for those that decide something, into the audit chain.
 */
import { newSessionId } from '../agent/session.js';
import { type KeelPaths, keelPaths } from '../config/paths.js';
import type { Config } from '../config/schema.js';
import { AuditLog, auditEntryFor } from '../store/audit.js';
import { type Db, openDb } from '../store/db.js';
import { EventLog } from '../store/event-log.js';

export interface RunLog {
  runId: string;
  paths: KeelPaths;
  db: Db;
  log: EventLog;
  /** Append one of the run's own events (fix_baseline, loop_round, ...). */
  record(type: string, data: Record<string, unknown>): void;
  /** Close the store and the audit log. */
  close(): void;
}

/** Open the store and record the run's session row (mode `fix` or `loop`). Close `db` when done. */
export function openRunLog(opts: {
  env: NodeJS.ProcessEnv;
  mode: 'fix' | 'loop';
  cwd: string;
  config: Config;
  prompt: string;
  /** The run's id when the caller must know it before the run ends (keel serve answers with it). */
  runId?: string;
}): RunLog {
  const paths = keelPaths(opts.env);
  const runId = opts.runId ?? newSessionId();
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
  const audit = new AuditLog(paths.auditDir);
  const record = (type: string, data: Record<string, unknown>) => {
    log.append(runId, type, data);
    const entry = auditEntryFor({ type, ...data }, runId);
    if (entry) audit.append(entry);
  };
  record('run_start', {
    mode: opts.mode,
    cwd: opts.cwd,
    provider: opts.config.provider,
    model: opts.config.model,
    // `keel runs prune` leaves a run alone while its process lives
    pid: process.pid,
  });
  return {
    runId,
    paths,
    db,
    log,
    record,
    close: () => {
      audit.close();
      db.close();
    },
  };
}
