/**
 * What a session is doing now, folded from its log as the page reads it (replayed, then live): whether a
 * turn is open, since when it waits for the model, and which questions wait for a person. The page's
 * status line and badge say only what these events say happened.
 */
import type { LogEvent } from './types.js';

export class Activity {
  /** A turn has started and its `session_end` has not come yet. */
  open = false;
  /** How the last turn ended (its code), while no turn is open. */
  ended: string | null = null;
  /** When the request in flight was logged (ms since the epoch), until its answer is. */
  modelSince: number | null = null;
  /** Text of the answer in flight has arrived (the model is writing, no longer silent). */
  answering = false;
  /** Questions asked in the log and not yet settled there, by question id (or call id). */
  readonly asked = new Set<string>();

  apply(ev: LogEvent): void {
    switch (ev.type) {
      case 'session_start':
      case 'session_resume':
        this.open = true;
        this.ended = null;
        this.modelSince = null;
        this.asked.clear();
        break;
      case 'model_request':
        this.modelSince = typeof ev.ts === 'string' ? Date.parse(ev.ts) : Date.now();
        if (Number.isNaN(this.modelSince)) this.modelSince = Date.now();
        this.answering = false;
        break;
      case 'assistant_message':
        this.modelSince = null;
        this.answering = false;
        break;
      case 'gate_decision': {
        const key = String(ev.question_id ?? ev.call_id);
        if (ev.decision === 'ask') this.asked.add(key);
        else this.asked.delete(key);
        break;
      }
      case 'session_end':
        this.open = false;
        this.ended = typeof ev.code === 'string' ? ev.code : null;
        this.modelSince = null;
        this.answering = false;
        this.asked.clear();
        break;
    }
  }

  /** Streamed text of the answer in flight. */
  streamed(): void {
    if (this.modelSince !== null) this.answering = true;
  }

  /** The status line while a turn is open ("waiting for the model (12 s)"), or null. */
  line(now: number): string | null {
    if (!this.open || this.modelSince === null) return null;
    const s = Math.max(0, Math.floor((now - this.modelSince) / 1000));
    return this.answering ? `the model is answering (${s} s)` : `waiting for the model (${s} s)`;
  }
}
