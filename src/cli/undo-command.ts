/** `keel undo [SESSION]`: put the workspace back as it was before a session's first write. */
import { existsSync, realpathSync } from 'node:fs';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline/promises';
import { keelPaths } from '../config/paths.js';
import { openRepoAt } from '../policy/git.js';
import {
  applyUndo,
  describeStep,
  GitError,
  planUndo,
  type SafetyNetRecord,
  safetyNetRecordSchema,
  type UndoPlan,
  UndoRefused,
} from '../policy/safety-net.js';
import { isInside } from '../policy/scope.js';
import { openDb } from '../store/db.js';
import { EventLog, type SessionRow } from '../store/event-log.js';
import { EXIT } from './exit-codes.js';
import { inertLine } from './inert.js';
import { dim, red } from './render.js';

export interface UndoFlags {
  yes?: boolean;
  json?: boolean;
  cwd?: string;
}

interface Target {
  session: SessionRow;
  records: SafetyNetRecord[];
}

// how far back the default looks for a session of this workspace
const RECENT = 200;

/** Undo a session (default: the latest one in this workspace that saved something); shows the plan and asks first. */
export async function runUndo(sessionId: string | undefined, flags: UndoFlags): Promise<number> {
  const out = (doc: object, text: string, code: number) => {
    if (flags.json) process.stdout.write(`${JSON.stringify({ ...doc, exit_code: code }, null, 2)}\n`);
    else if (text) (code === EXIT.ok ? process.stdout : process.stderr).write(text);
    return code;
  };
  const fail = (message: string, code: number, doc: object = {}) =>
    out({ ...doc, error: message }, `${red('keel:')} ${inertLine(message)}\n`, code);

  const prepared = prepareUndo(sessionId, canonical(resolve(flags.cwd ?? process.cwd())));
  if ('error' in prepared) return fail(prepared.error, prepared.exit, prepared.base ?? {});
  const { session, plan, steps } = prepared;
  const base = { session_id: session.id, cwd: session.cwd };
  if (!flags.json) {
    process.stdout.write(
      `session ${session.id} ${dim(`(${session.mode}, ${inertLine(session.cwd)})`)}\nundo will:\n`,
    );
    for (const s of steps) process.stdout.write(`  ${inertLine(s)}\n`);
  }
  if (!flags.yes) {
    if (flags.json || !process.stdin.isTTY) {
      return fail('not undone: pass --yes to apply this plan without a prompt', EXIT.failed, {
        ...base,
        applied: false,
        steps,
      });
    }
    if (!(await confirm('Proceed? [y/N] '))) return fail('not undone', EXIT.failed);
  }

  let done: string[];
  try {
    done = applyUndo(plan);
  } catch (err) {
    return fail(`undo stopped: ${messageOf(err)}`, codeOf(err), { ...base, applied: false, steps });
  }
  const kept = plan.keep.map((k) => k.ref);
  const keptNote = kept.length ? `the session's work is kept at ${[...new Set(kept)].join(', ')}\n` : '';
  return out(
    { ...base, applied: true, steps: done, kept },
    `undone:\n${done.map((s) => `  ${inertLine(s)}\n`).join('')}${keptNote && dim(keptNote)}`,
    EXIT.ok,
  );
}

/** The undo plan for a session (default: the latest here that saved something), or why there is none. */
export function prepareUndo(
  sessionId: string | undefined,
  cwd: string,
):
  | { session: SessionRow; plan: UndoPlan; steps: string[] }
  | { error: string; exit: number; base?: { session_id: string; cwd: string } } {
  const found = findTarget(sessionId, cwd);
  if (typeof found === 'string') return { error: found, exit: EXIT.usage };
  const { session } = found;
  const base = { session_id: session.id, cwd: session.cwd };
  // undo runs git only in the repositories the session recorded, each opened at its exact top
  for (const record of found.records) {
    if (record.kind === 'git' && existsSync(record.repo) && !openRepoAt(record.repo))
      return {
        error: `${record.repo} is no longer the top of a git repository; undo will not guess`,
        exit: EXIT.failed,
        base,
      };
  }
  let plan: UndoPlan;
  try {
    plan = planUndo(found.records, session.cwd);
  } catch (err) {
    return { error: messageOf(err), exit: codeOf(err), base };
  }
  const steps = plan.steps.map((s) => describeStep(s, plan.root));
  if (!steps.length)
    return {
      error: `session ${session.id} has nothing left to undo (already undone?)`,
      exit: EXIT.usage,
      base,
    };
  return { session, plan, steps };
}

/** The session to undo and its safety-net records, or why there is none. */
function findTarget(sessionId: string | undefined, cwd: string): Target | string {
  const path = keelPaths().db;
  if (!existsSync(path)) return 'no sessions recorded yet';
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
        return `session ${session.id} has nothing to undo (it saved nothing before writing)`;
      return { session, records };
    }
    for (const found of log.listSessions(RECENT)) {
      if (!isInside(cwd, canonical(found.cwd))) continue;
      // a round of `keel loop` belongs to its loop: undoing "the last session" means the whole loop
      const parent = found.parent_id ? log.getSession(found.parent_id) : undefined;
      const session = parent && recordsOf(parent.id).length ? parent : found;
      const records = recordsOf(session.id);
      if (records.length) return { session, records };
    }
    return `no recent session in ${cwd} has anything to undo`;
  } finally {
    db.close();
  }
}

async function confirm(question: string): Promise<boolean> {
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    return /^y(es)?$/i.test((await rl.question(question)).trim());
  } finally {
    rl.close();
  }
}

function canonical(dir: string): string {
  try {
    return realpathSync.native(dir);
  } catch {
    return dir;
  }
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

// a refusal is the task failing; git or the disk misbehaving is the environment
function codeOf(err: unknown): number {
  if (err instanceof UndoRefused) return EXIT.failed;
  if (err instanceof GitError || (err instanceof Error && 'syscall' in err)) return EXIT.environment;
  throw err;
}
