/**
 * A subagent's progress as chat shows it while its parent waits, on either face: its rounds, its tool
 * calls so far and the one it runs now; when it ends, one line with its outcome. Folded from the
 * child's own events as they are stored; every word from the model or a tool is made inert here.
 */
import type { SessionEvent } from '../agent/events.js';
import { count } from '../agent/terminal.js';
import { inertLine } from '../term/inert.js';
import { clip, outcomeWords, toolHeadline } from './describe.js';

export class AgentProgress {
  private rounds = 0;
  private readonly calls = new Set<string>();
  private readonly args = new Map<string, unknown>();
  /** The call it runs now (or ran last), and how that one came out once it did. */
  private current: { id: string; headline: string; outcome?: string; failed?: boolean } | undefined;
  private end: Extract<SessionEvent, { type: 'session_end' }> | undefined;

  constructor(
    /** The agent's name (a grandchild's names its line: "a/b"), inert. */
    readonly name: string,
    readonly sessionId: string,
  ) {}

  get ended(): boolean {
    return this.end !== undefined;
  }

  /** Fold one of the child's events in; whether what is shown changed. */
  see(event: SessionEvent): boolean {
    switch (event.type) {
      case 'model_request':
        this.rounds = Math.max(this.rounds, event.round);
        return true;
      case 'assistant_message':
        for (const call of event.tool_calls) this.args.set(call.id, parse(call.arguments));
        return false;
      case 'gate_decision':
      case 'tool_start': {
        this.calls.add(event.call_id);
        if (this.current?.id === event.call_id) return false;
        const args = event.type === 'tool_start' ? event.args : this.args.get(event.call_id);
        this.current = { id: event.call_id, headline: toolHeadline(event.tool, args) };
        return true;
      }
      case 'tool_result':
        if (this.current?.id !== event.call_id) return false;
        this.current = { ...this.current, outcome: outcomeWords(event), failed: event.is_error };
        return true;
      case 'session_end':
        this.end = event;
        this.rounds = event.rounds;
        return true;
      default:
        return false;
    }
  }

  /** `2 rounds · 1 tool call`. */
  counts(): string {
    return `${count(this.rounds, 'round')} · ${count(this.calls.size, 'tool call')}`;
  }

  /** While it runs: the call it is on (or `thinking` between calls). */
  now(): { headline: string; outcome?: string; failed?: boolean } | undefined {
    return this.current;
  }

  /** Once it ended: its code, its counts and the start of its answer (or why it stopped), on one line. */
  folded(): { code: string; text: string } | undefined {
    const end = this.end;
    if (!end) return undefined;
    const said = clip(inertLine((end.code === 'COMPLETED' ? end.summary : end.reason) || end.reason), 100);
    return { code: end.code, text: `${this.counts()}${said ? ` · ${said}` : ''}` };
  }
}

function parse(raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    return {};
  }
}
