/** Which session `keel undo` (and the chat's /undo) puts back, and its plan: found from the event log. */
import { existsSync, realpathSync } from 'node:fs';
import { keelPaths } from '../config/paths.js';
import { openRepoAt } from '../policy/git.js';
import { GitError, type SafetyNetRecord, safetyNetRecordSchema } from '../policy/safety-net.js';
import { isInside } from '../policy/scope.js';
import { describeStep, planUndo, type UndoPlan, UndoRefused } from '../policy/undo.js';
import { openDb } from '../store/db.js';
import { EventLog, type SessionRow } from '../store/event-log.js';
import { EXIT } from './exit-codes.js';

interface Target {
  session: SessionRow;
  records: SafetyNetRecord[];
  /** The plan, when finding the target already made it (the default search plans to skip what is undone). */
  plan?: UndoPlan;
}

// how far back the default looks for a session of this workspace
const RECENT = 200;

/** The undo plan for a session (default: the latest here that saved something), or why there is none. */
export function prepareUndo(
  sessionId: string | undefined,
  cwd: string,
):
  | { session: SessionRow; plan: UndoPlan; steps: string[] }
  | { error: string; exit: number; code?: string; base?: { session_id: string; cwd: string } } {
  let found: Target | Nothing | string;
  try {
    found = findTarget(sessionId, cwd);
  } catch (err) {
    return { error: messageOf(err), exit: codeOf(err) };
  }
  if (typeof found === 'string') return { error: found, exit: EXIT.usage };
  if ('nothing' in found) return { error: found.nothing, exit: EXIT.failed, ...NOTHING };
  const { session } = found;
  const base = { session_id: session.id, cwd: session.cwd };
  const unopened = openRecorded(found.records);
  if (unopened) return { error: unopened, exit: EXIT.failed, base };
  let plan: UndoPlan;
  try {
    plan = found.plan ?? planUndo(found.records, session.cwd);
  } catch (err) {
    return { error: messageOf(err), exit: codeOf(err), base };
  }
  const steps = plan.steps.map((s) => describeStep(s, plan.root));
  if (!steps.length)
    return {
      error: `session ${session.id} has nothing left to undo (already undone?)`,
      exit: EXIT.failed,
      ...NOTHING,
      base,
    };
  return { session, plan, steps };
}

/** Nothing to undo is no mistake of the person's: exit 1 with its own code, never a usage error. */
interface Nothing {
  nothing: string;
}
const NOTHING = { code: 'NOTHING_TO_UNDO' } as const;

/** The session to undo and its safety-net records, why there is none (Nothing), or a usage error. */
function findTarget(sessionId: string | undefined, cwd: string): Target | Nothing | string {
  const path = keelPaths().db;
  if (!existsSync(path)) return { nothing: 'nothing to undo: no sessions recorded yet' };
  const db = openDb(path);
  try {
    const log = new EventLog(db);
    const recordsOf = (id: string) =>
      log
        .events(id)
        .filter((e) => e.type === 'safety_net')
        .map((e) => safetyNetRecordSchema.safeParse(e.data))
        .flatMap((r) => (r.success ? [r.data] : []));
    if (sessionId) {
      const session = log.findSession(sessionId);
      if (!session) return `no session matches "${sessionId}" (see keel sessions list)`;
      const records = recordsOf(session.id);
      if (!records.length)
        return { nothing: `session ${session.id} has nothing to undo (it saved nothing before writing)` };
      return { session, records };
    }
    const seen = new Set<string>();
    for (const found of log.listSessions(RECENT)) {
      if (!isInside(cwd, canonical(found.cwd))) continue;
      // a round of `keel loop` belongs to its loop: undoing "the last session" means the whole loop
      const parent = found.parent_id ? log.getSession(found.parent_id) : undefined;
      const session = parent && recordsOf(parent.id).length ? parent : found;
      if (seen.has(session.id)) continue;
      seen.add(session.id);
      const records = recordsOf(session.id);
      // "the last change" is the newest session that changed something and was not undone since
      if (!records.length || undoneAlready(log, session.id) || !changedSomething(log, session)) continue;
      const unopened = openRecorded(records);
      if (unopened) throw new UndoRefused(unopened);
      // a plan with no steps (the changes are gone already) looks further back; one that refuses (HEAD
      // moved, a path swapped for a link) stops here and says why
      const plan = planUndo(records, session.cwd);
      if (plan.steps.length) return { session, records, plan };
    }
    return { nothing: `no recent session in ${cwd} has anything left to undo` };
  } finally {
    db.close();
  }
}

/** Whether `keel undo` has put this session's changes back already (its log says so). */
function undoneAlready(log: EventLog, id: string): boolean {
  return log.events(id).some((e) => e.type === 'undo' && e.data.applied === true);
}

/**
 * Whether a session changed something. A session's safety net is taken just before a write or a command,
 * so its records are the evidence. A loop snapshots before its first round whatever the rounds then do:
 * its end says which files differ (a loop killed before its end: any round that snapshotted).
 */
function changedSomething(log: EventLog, session: SessionRow): boolean {
  if (session.mode !== 'loop') return true;
  const end = log.events(session.id).findLast((e) => e.type === 'loop_end');
  if (end) return Array.isArray(end.data.files) && end.data.files.length > 0;
  return log.childSessions(session.id).some((c) => log.events(c.id).some((e) => e.type === 'safety_net'));
}

/** Undo runs git only in the repositories the session recorded, each opened at its exact top; else why not. */
function openRecorded(records: SafetyNetRecord[]): string | undefined {
  for (const record of records) {
    if (record.kind === 'git' && existsSync(record.repo) && !openRepoAt(record.repo))
      return `${record.repo} is no longer the top of a git repository; undo will not guess`;
  }
  return undefined;
}

export function canonical(dir: string): string {
  try {
    return realpathSync.native(dir);
  } catch {
    return dir;
  }
}

export function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

// a refusal is the task failing; git or the disk misbehaving is the environment
export function codeOf(err: unknown): number {
  if (err instanceof UndoRefused) return EXIT.failed;
  if (err instanceof GitError || (err instanceof Error && 'syscall' in err)) return EXIT.environment;
  throw err;
}
