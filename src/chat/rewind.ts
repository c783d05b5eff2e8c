/**
 * `/rewind N`: back to the start of turn N, numbered as the transcript shows them. The conversation is
 * a fork of the session at the event before that turn's run began (turn 1: a new session); the files
 * are put back from the safety net's records taken from that run on. The old session stays in the log,
 * with a `rewind` event (and its audit entry) saying what was done.
 */
import { keelPaths } from '../config/paths.js';
import { safetyNetRecordSchema } from '../policy/safety-net.js';
import { describeStep, planUndo, type UndoPlan, UndoRefused } from '../policy/undo.js';
import { openDb } from '../store/db.js';
import { EventLog, type SessionRow } from '../store/event-log.js';
import { turnsOf } from '../term/turns.js';

export interface RewindPlan {
  session: SessionRow;
  turn: number;
  /** The turn's message (raw: the face makes it inert). */
  text: string;
  /** The fork keeps events up to here (0: turn 1, a new session instead). */
  at: number;
  /** The file steps, described; empty when the turns since changed nothing the safety net saved. */
  steps: string[];
  undo?: UndoPlan;
}

/** What rewinding `sessionId` to turn `n` would do, or why it cannot. */
export function prepareRewind(sessionId: string, n: number): RewindPlan | { error: string } {
  const db = openDb(keelPaths().db);
  try {
    const log = new EventLog(db);
    const session = log.getSession(sessionId);
    if (!session) return { error: `session ${sessionId} is not in the log yet: nothing to rewind` };
    const events = log.events(session.id);
    const turns = turnsOf(events);
    const turn = turns.find((t) => t.n === n);
    if (!turn)
      return {
        error: `this session has ${turns.length} turn${turns.length === 1 ? '' : 's'}; /rewind ${n} names none (the numbers are those in the transcript)`,
      };
    const records = events
      .filter((e) => e.type === 'safety_net' && e.seq > turn.startSeq)
      .map((e) => safetyNetRecordSchema.safeParse(e.data))
      .flatMap((r) => (r.success ? [r.data] : []));
    let undo: UndoPlan | undefined;
    if (records.length) {
      try {
        undo = planUndo(records, session.cwd);
      } catch (err) {
        if (err instanceof UndoRefused) return { error: `cannot put the files back: ${err.message}` };
        throw err;
      }
    }
    const steps = undo ? undo.steps.map((s) => describeStep(s, undo.root)) : [];
    return {
      session,
      turn: n,
      text: turn.text,
      at: turn.startSeq - 1,
      steps,
      ...(undo && steps.length ? { undo } : {}),
    };
  } finally {
    db.close();
  }
}
