/**
 * What a face builds once and opens sessions from: keel's store (one SQLite connection and its event
 * log), the audit chain, and where keel keeps its state. A one-shot command opens a runtime for its one
 * session; chat, `keel serve` and a fix run keep one for all of theirs, and a subagent runs in its
 * parent's. Per session stay what depends on its config: the model client, the sandbox (built by the
 * sandbox factory for the session's scope), and its tool registry (builtins plus the factories it is given).
 */
import { type KeelPaths, keelPaths } from '../config/paths.js';
import type { CallLedger } from '../model/call-ledger.js';
import { AuditLog } from '../store/audit.js';
import { type Db, openDb } from '../store/db.js';
import { EventLog } from '../store/event-log.js';
import {
  type CompactOptions,
  compactIn,
  runSessionIn,
  type SessionOutcome,
  type StartOptions,
} from './session.js';

export interface Runtime {
  readonly env: NodeJS.ProcessEnv;
  readonly paths: KeelPaths;
  readonly db: Db;
  readonly log: EventLog;
  readonly audit: AuditLog;
  /** The team store's ledger a session records its calls to when its run gives none (a person's session is its own run). */
  readonly calls?: CallLedger;
  /** Run a session (new, or reopened with `resume`) in this runtime; every event is stored before it takes effect. */
  start(opts: StartOptions): Promise<SessionOutcome>;
  /** Fold a stored session's older turns into a summary now (`keel sessions compact`). */
  compact(opts: CompactOptions): ReturnType<typeof compactIn>;
  /** Close the store and the audit log; sessions still running in it must have ended. */
  close(): void;
}

/** Open keel's store for this process under `env`'s KEEL_HOME (or the user's state folder). */
export function openRuntime(
  env: NodeJS.ProcessEnv = process.env,
  opts: { calls?: CallLedger } = {},
): Runtime {
  const paths = keelPaths(env);
  const db = openDb(paths.db);
  const audit = new AuditLog(paths.auditDir);
  let closed = false;
  const runtime: Runtime = {
    env,
    paths,
    db,
    log: new EventLog(db),
    audit,
    ...(opts.calls ? { calls: opts.calls } : {}),
    start: (opts) => (closed ? Promise.reject(closedError()) : runSessionIn(runtime, opts)),
    compact: (opts) => (closed ? Promise.reject(closedError()) : compactIn(runtime, opts)),
    close() {
      if (closed) return;
      closed = true;
      audit.close();
      db.close();
    },
  };
  return runtime;
}

const closedError = () => new Error('this keel runtime is closed: open another to start a session');

/** A runtime for one piece of work (a CLI command's session), closed however the work ends. */
export async function withRuntime<T>(
  env: NodeJS.ProcessEnv | undefined,
  work: (rt: Runtime) => Promise<T>,
  opts: { calls?: CallLedger } = {},
): Promise<T> {
  const runtime = openRuntime(env ?? process.env, opts);
  try {
    return await work(runtime);
  } finally {
    runtime.close();
  }
}
