/**
 * The line under each turn, on either face: that turn's own rounds, tokens and cost. A session_end
 * carries rounds for its run but tokens and cost for the whole session, so the turn's share is the
 * session's numbers less those at the end of the turn before.
 */
import type { SessionEvent } from '../agent/events.js';
import { count } from '../agent/terminal.js';
import { tokens } from './describe.js';

type SessionEnd = Extract<SessionEvent, { type: 'session_end' }>;

export class TurnFooter {
  private tokens = 0;
  private cost = 0;

  /** A session's first event (live, or replayed when one is reopened): its numbers start from zero. */
  reset(): void {
    this.tokens = 0;
    this.cost = 0;
  }

  /** `this turn: 2 rounds · 1.2k tokens · $0.0031`; the session's totals move on to this turn's end. */
  line(end: SessionEnd): string {
    const total = end.tokens.input + end.tokens.output;
    const own = Math.max(0, total - this.tokens);
    const cost = end.cost_usd === null ? null : Math.max(0, end.cost_usd - this.cost);
    this.tokens = total;
    this.cost = end.cost_usd ?? 0;
    return `this turn: ${count(end.rounds, 'round')} · ${tokens(own)} tokens${cost === null ? '' : ` · $${cost.toFixed(4)}`}`;
  }
}
