/** `keel undo [SESSION]`: put the workspace back as it was before a session's first write. */
import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import { recordEvent } from '../agent/stored-sessions.js';
import { applyUndo } from '../policy/undo.js';
import { EXIT } from '../term/exit-codes.js';
import { inertLine } from '../term/inert.js';
import { canonical, codeOf, messageOf, prepareUndo } from '../term/undo-target.js';
import { confirmOrExit } from './ask-line.js';
import { dim, red } from './render.js';

export interface UndoFlags {
  yes?: boolean;
  json?: boolean;
  cwd?: string;
}

/** Undo a session (default: the latest one in this workspace that saved something); shows the plan and asks first. */
export async function runUndo(sessionId: string | undefined, flags: UndoFlags): Promise<number> {
  const out = (doc: object, text: string, code: number) => {
    if (flags.json) process.stdout.write(`${JSON.stringify({ ...doc, exit_code: code }, null, 2)}\n`);
    else if (text) (code === EXIT.ok ? process.stdout : process.stderr).write(text);
    return code;
  };
  const fail = (message: string, code: number, doc: object = {}) =>
    out({ code: errorCode(code), ...doc, error: message }, `${red('keel:')} ${inertLine(message)}\n`, code);

  const given = resolve(flags.cwd ?? process.cwd());
  if (!statSync(given, { throwIfNoEntry: false })?.isDirectory())
    return fail(`workspace ${given} is not a folder`, EXIT.usage);
  const cwd = canonical(given);
  const prepared = prepareUndo(sessionId, cwd);
  if ('error' in prepared)
    return fail(prepared.error, prepared.exit, {
      ...(prepared.code ? { code: prepared.code } : {}),
      ...prepared.base,
    });
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
    if (!(await confirmOrExit('Proceed? [y/N] '))) return fail('not undone', EXIT.failed);
  }

  let done: string[];
  try {
    done = applyUndo(plan);
  } catch (err) {
    recordEvent(session.id, 'undo', { applied: false, steps, error: messageOf(err) });
    return fail(`undo stopped: ${messageOf(err)}`, codeOf(err), { ...base, applied: false, steps });
  }
  const kept = plan.keep.map((k) => k.ref);
  recordEvent(session.id, 'undo', { applied: true, steps: done, kept, cwd });
  const keptNote = kept.length ? `the session's work is kept at ${[...new Set(kept)].join(', ')}\n` : '';
  return out(
    { ...base, applied: true, steps: done, kept },
    `undone:\n${done.map((s) => `  ${inertLine(s)}\n`).join('')}${keptNote && dim(keptNote)}`,
    EXIT.ok,
  );
}

function errorCode(exit: number): string {
  if (exit === EXIT.usage) return 'CONFIG_ERROR';
  if (exit === EXIT.environment) return 'ENVIRONMENT_ERROR';
  return 'NOT_UNDONE';
}
