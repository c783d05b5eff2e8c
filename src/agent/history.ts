/**
 * A session's state as a projection of its event log: one reducer, used live (each event is folded
 * in as it is recorded) and when a session is reopened (its stored events folded from the start).
 * The messages the next request sends, budgets spent, loop-detector counts, files touched and cost
 * all come from here and nowhere else, so a resumed session continues exactly where it stopped.
 */

import type { ChatMessage, ToolCall } from '../model/types.js';
import type { ToolList } from '../policy/tool-allowlist.js';
import type { SessionEvent, TokenCount, ToolIntent } from './events.js';

export interface OpenCall {
  tool: string;
  /** A tool_start was recorded: the call may have run, partly or fully. */
  started: boolean;
  /** The id the request sends for this call (the provider's, or keel's own when it had none). */
  wire: string;
  /** The arguments as the model sent them (a resumed run runs the call with them). */
  arguments: string;
  /** What its tool_start said it was about to do. */
  intent?: ToolIntent;
}

export interface SessionState {
  /** The history the next request sends, exactly as the log says it was sent. */
  messages: ChatMessage[];
  /** The seq of the event each message came from (compaction keeps a tail by seq). */
  origins: number[];
  /** The first user message: the task, which compaction keeps verbatim. */
  task: string;
  mode: string;
  /** Rounds over the session's life. */
  rounds: number;
  /** The session's own answers' tokens (its subagents' are in their own logs). */
  tokens: TokenCount;
  /** null when the model has no price: keel never invents a cost. */
  cost: number | null;
  filesChanged: Set<string>;
  /** Counts of each tool fingerprint since the last change to the files or the last message (loop detection). */
  seen: Map<string, number>;
  /** Calls of the last assistant message without an answer yet, by keel's call id. */
  open: Map<string, OpenCall>;
  /** Calls the model made over the session's life: the next one is `c${calls + 1}`. */
  calls: number;
  /** This run (session_start or a resume): what per-run budgets count. */
  run: { number: number; rounds: number; diffLines: number; pid?: number };
  /** The last run has a session_end (or the log is a fork's copy): nothing is running it. */
  ended: boolean;
  lastText: string;
  lastSeq: number;
  compactions: number;
  /** Tools activated over the session's life, beyond the core set every request offers. */
  active: string[];
  /** Lists of the tools the session may still use (skills' allowed-tools): a call must be on each. */
  allowLists: ToolList[];
  /** The round of a model request logged without its answer: a resumed run sends it again (re-issued). */
  unanswered?: number;
}

export function initialState(): SessionState {
  return {
    messages: [],
    origins: [],
    task: '',
    mode: '',
    rounds: 0,
    tokens: { input: 0, output: 0 },
    cost: null,
    filesChanged: new Set(),
    seen: new Map(),
    open: new Map(),
    calls: 0,
    run: { number: 0, rounds: 0, diffLines: 0 },
    ended: true,
    lastText: '',
    lastSeq: 0,
    compactions: 0,
    active: [],
    allowLists: [],
  };
}

/**
 * Fold one event into the state. The state is updated in place and returned (a session of
 * thousands of events replays without copying its history at every step).
 */
export function reduce(state: SessionState, event: SessionEvent, seq: number): SessionState {
  state.lastSeq = seq;
  const push = (message: ChatMessage) => {
    state.messages.push(message);
    state.origins.push(seq);
  };
  switch (event.type) {
    case 'session_start':
      state.mode = event.mode;
      state.cost = event.priced ? 0 : null;
      state.run = { number: 1, rounds: 0, diffLines: 0, ...(event.pid ? { pid: event.pid } : {}) };
      state.ended = false;
      if (event.system_prompt !== undefined) {
        state.messages = [{ role: 'system', content: event.system_prompt }];
        state.origins = [seq];
      }
      break;
    case 'session_resume':
      state.mode = event.mode;
      state.run = { number: event.run, rounds: 0, diffLines: 0, pid: event.pid };
      state.ended = false;
      break;
    case 'session_fork':
      state.ended = true;
      break;
    case 'repo_map': {
      // context, not the task: it goes with the system prompt, so the first user message stays the task
      const system = state.messages[0];
      if (system?.role === 'system')
        state.messages[0] = { ...system, content: `${system.content}\n\n${event.text}` };
      else push({ role: 'system', content: event.text });
      break;
    }
    case 'user_message':
      if (!state.task) state.task = event.text;
      // a new message makes the next request a new one, not the unanswered one again
      state.unanswered = undefined;
      push({ role: 'user', content: event.text, ...(event.images?.length ? { images: event.images } : {}) });
      // a new message is a new question: the same call again answers it, it is no loop (chat turns, steering)
      state.seen.clear();
      break;
    case 'model_request':
      // a re-issued request is the round that went unanswered, not a new one
      if (!event.reissued) state.rounds++;
      state.run.rounds++;
      state.unanswered = event.round;
      break;
    case 'assistant_message': {
      state.tokens.input += event.usage.input;
      state.tokens.output += event.usage.output;
      state.cost = state.cost === null || event.cost_usd === null ? null : state.cost + event.cost_usd;
      if (event.text.trim()) state.lastText = event.text.trim();
      // history never carries malformed arguments: a server may reject them, and the model would copy them;
      // the request sends each call under the id its provider gave it, the log and the faces keel's own
      const calls: ToolCall[] = [
        ...event.tool_calls.map((c) => ({
          id: c.wire_id ?? c.id,
          name: c.name,
          arguments: validJsonOr(c.arguments, '{}'),
        })),
        ...(event.invalid_calls ?? []).map((c) => ({ id: c.id, name: c.name, arguments: '{}' })),
      ];
      const ids = [...event.tool_calls.map((c) => c.id), ...(event.invalid_calls ?? []).map((c) => c.id)];
      push({ role: 'assistant', content: event.text, ...(calls.length ? { toolCalls: calls } : {}) });
      state.open = new Map(
        calls.map((c, i) => [
          ids[i] ?? c.id,
          { tool: c.name, started: false, wire: c.id, arguments: event.tool_calls[i]?.arguments ?? '{}' },
        ]),
      );
      state.unanswered = undefined;
      state.calls += event.tool_calls.length;
      break;
    }
    case 'tool_call_invalid':
      answer(state, event.call_id, event.tool, `Error: ${event.error}`, seq);
      break;
    case 'gate_decision':
      if (event.fingerprint && event.decision !== 'ask')
        state.seen.set(event.fingerprint, (state.seen.get(event.fingerprint) ?? 0) + 1);
      // a deny before the call started is its answer; a deny while it ran (a path outside the scope) is
      // followed by the call's own result
      if (event.decision === 'deny' && state.open.get(event.call_id)?.started === false)
        answer(state, event.call_id, event.tool, `Error: denied: ${event.reason ?? 'denied'}`, seq);
      break;
    case 'tool_start': {
      const call = state.open.get(event.call_id);
      if (call) {
        call.started = true;
        if (event.intent) call.intent = event.intent;
      }
      break;
    }
    case 'tool_result':
      // an older log's child_usage is not folded: a session's own spending is its answers', and what its
      // subagents spent is read from their own logs (see the tree's counter in budgets.ts)
      for (const f of event.files_changed) state.filesChanged.add(f);
      state.run.diffLines += event.diff_lines;
      // a change to the files is progress: a call repeated after it can see something new (read, edit, read)
      if (event.diff_lines > 0) state.seen.clear();
      answer(state, event.call_id, event.tool, event.output, seq);
      break;
    case 'compaction': {
      const system = state.messages[0]?.role === 'system' ? state.messages[0] : undefined;
      const keep = state.origins.findIndex((o) => o >= event.keep_from_seq);
      const tail = keep < 0 ? [] : state.messages.slice(keep);
      const tailOrigins = keep < 0 ? [] : state.origins.slice(keep);
      const head: ChatMessage = {
        role: 'user',
        content: compactedTask(state.task, event.summary, event.files),
      };
      state.messages = [...(system ? [system] : []), head, ...tail];
      state.origins = [...(system ? [state.origins[0] as number] : []), seq, ...tailOrigins];
      state.compactions++;
      // a request refused as too big is answered (by its error): the one after the compaction is new
      state.unanswered = undefined;
      if (event.usage) {
        state.tokens.input += event.usage.input;
        state.tokens.output += event.usage.output;
      }
      if (event.cost_usd !== undefined)
        state.cost = state.cost === null || event.cost_usd === null ? null : state.cost + event.cost_usd;
      break;
    }
    case 'tools_activated':
      for (const name of event.tools) if (!state.active.includes(name)) state.active.push(name);
      break;
    case 'tools_narrowed':
      state.allowLists.push({ by: event.by, rules: [...event.rules] });
      break;
    case 'session_end':
      state.ended = true;
      state.unanswered = undefined;
      break;
    default:
      break;
  }
  return state;
}

/** The state a stored log describes. */
export function replay(events: Iterable<{ seq: number; event: SessionEvent }>): SessionState {
  let state = initialState();
  for (const { seq, event } of events) state = reduce(state, event, seq);
  return state;
}

/** The frame around a compaction summary: the model wrote it, so it is never laid out as the user's words. */
export const SUMMARY_OPEN =
  "--- Summary of the earlier conversation, written by the model (not the user's words; every line quoted) ---";
export const SUMMARY_CLOSE = '--- End of the summary ---';

/**
 * The first message of a compacted history: the task verbatim, then the model's summary of what was done
 * inside a frame, each of its lines quoted with "> " (so no line of it can close the frame or pass for
 * the user), then the files (quoted).
 */
export function compactedTask(task: string, summary: string, files: string[]): string {
  const quoted = summary
    .trim()
    .split(/\r?\n|\r/)
    .map((line) => `> ${line}`);
  const lines = [task, '', SUMMARY_OPEN, ...quoted, SUMMARY_CLOSE];
  // file names were chosen in the session too: quoted, so none can start a line of its own
  if (files.length) lines.push('', `Files changed so far: ${files.map((f) => JSON.stringify(f)).join(', ')}`);
  return lines.join('\n');
}

function answer(state: SessionState, callId: string, tool: string, content: string, seq: number): void {
  const open = state.open.get(callId);
  const wire = open?.wire ?? callId;
  // named as the model called it: a family's call (`agent`) is recorded under its action's tool (spawn_agent)
  state.messages.push({ role: 'tool', toolCallId: wire, name: open?.tool ?? tool, content });
  state.origins.push(seq);
  state.open.delete(callId);
}

function validJsonOr(text: string, fallback: string): string {
  try {
    JSON.parse(text);
    return text;
  } catch {
    return fallback;
  }
}
