/** Sessions in the store, found by id or prefix, and branched (`keel sessions fork`, the chat's /fork). */
import { existsSync } from 'node:fs';
import { keelPaths } from '../config/paths.js';
import { type AuditEntry, AuditLog } from '../store/audit.js';
import { appendAudited, auditEntryFor } from '../store/audit-entries.js';
import { openDb } from '../store/db.js';
import { EventLog, SessionLookupError, type SessionRow } from '../store/event-log.js';
import { newSessionId } from './session.js';

/** Read the session store, or undefined when there is none yet. */
export function withLog<T>(fn: (log: EventLog) => T): T | undefined {
  const path = keelPaths().db;
  if (!existsSync(path)) return undefined;
  const db = openDb(path);
  try {
    return fn(new EventLog(db));
  } finally {
    db.close();
  }
}

/**
 * Run `fn` on the session an id or prefix names; a string says why there is none (no such session,
 * an ambiguous prefix, no sessions yet).
 */
export function withSession<T>(id: string, fn: (log: EventLog, row: SessionRow) => T | string): T | string {
  try {
    return (
      withLog((log) => {
        const row = log.findSession(id);
        return row ? fn(log, row) : `no session matches "${id}" (see keel sessions list)`;
      }) ?? `no session matches "${id}" (no sessions yet)`
    );
  } catch (err) {
    if (err instanceof SessionLookupError) return err.message;
    throw err;
  }
}

/** Branch a stored session after event `at` (default: all of it); the new row, or why not. */
export function forkStored(id: string, at?: number): SessionRow | string {
  return withSession(id, (log, source) => {
    if (!['ask', 'plan', 'edit', 'auto'].includes(source.mode))
      return `session ${source.id} is a ${source.mode} run, not a conversation; it cannot be forked`;
    const last = log.lastSeq(source.id);
    if (at !== undefined && at > last)
      return `session ${source.id} has ${last} events; --at ${at} is past its end`;
    const fork = log.forkSession(source.id, newSessionId(), at);
    // the copy ends here: nothing runs it until someone resumes it
    const event = { type: 'session_fork', from: source.id, at: fork.forked_seq ?? last };
    log.append(fork.id, event.type, { from: event.from, at: event.at });
    // the chain vouches for the fork as it does for a start (src/store/audit-sessions.ts)
    const audit = new AuditLog(keelPaths().auditDir);
    try {
      audit.append(auditEntryFor(event, fork.id) as AuditEntry);
    } finally {
      audit.close();
    }
    return fork;
  });
}

/**
 * Record what a person did to a session from outside its run (an undo, a rewind, a review's verdict) in the
 * session's log and the audit chain: who put the work tree back is as much a fact as who changed it.
 */
export function recordEvent(sessionId: string, type: string, data: Record<string, unknown>): void {
  const paths = keelPaths();
  const db = openDb(paths.db);
  const audit = new AuditLog(paths.auditDir);
  try {
    appendAudited(new EventLog(db), audit, sessionId, type, data);
  } finally {
    audit.close();
    db.close();
  }
}
