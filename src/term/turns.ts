/**
 * What the chat calls a turn, numbered as the transcript shows them (`/rewind N` counts the same way):
 * a run of the session (its `session_start` or `session_resume`) and the first message of that run.
 * Later messages in a run are steering; a run that never got its message (it could not start) is no turn.
 */
import type { StoredEvent } from '../store/event-log.js';

export class TurnCounter {
  private runOpen = false;
  count = 0;

  /** Feed an event's type; true when it is the message that opens a new turn (then `count` is its number). */
  see(type: string): boolean {
    if (type === 'session_start' || type === 'session_resume') {
      this.runOpen = true;
      return false;
    }
    if (type !== 'user_message' || !this.runOpen) return false;
    this.runOpen = false;
    this.count++;
    return true;
  }
}

/** Each turn of a stored session: its number, the seq of the run's start event, and its message. */
export function turnsOf(events: StoredEvent[]): Array<{ n: number; startSeq: number; text: string }> {
  const counter = new TurnCounter();
  const out: Array<{ n: number; startSeq: number; text: string }> = [];
  let startSeq = 0;
  for (const e of events) {
    if (e.type === 'session_start' || e.type === 'session_resume') startSeq = e.seq;
    if (counter.see(e.type)) out.push({ n: counter.count, startSeq, text: String(e.data.text ?? '') });
  }
  return out;
}
