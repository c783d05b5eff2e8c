/**
 * Compaction: when a session's history grows past a share of the model's context window, older
 * turns become a summary the model writes. The task, the newest turns and the files changed stay
 * verbatim. The result is one `compaction` event; the reducer applies it, so a resumed or forked
 * session sees the same compacted history the live one sent.
 */
import { costUsd } from '../model/cost.js';
import { estimateRequestTokens, estimateTokens } from '../model/tokens.js';
import type { ChatMessage, ToolSpec } from '../model/types.js';
import type { SessionEvent } from './events.js';
import { compactedTask, type SessionState } from './history.js';
import type { SessionModel } from './loop.js';

export interface CompactionSettings {
  /** Compact when the next request would pass this share of the context window. */
  threshold: number;
  /** How much of the newest history stays verbatim, as a share of the window. */
  keep: number;
}

/** What a server says when a request does not fit its context (vLLM, llama.cpp, Ollama, LM Studio, OpenAI). */
const OVERFLOW =
  /context[_ ]length[_ ]exceeded|maximum context length|context (size|window|length)[^.]*exceed|exceeds? (the )?(available |maximum )?context|too many tokens|prompt is too long|input is too long|n_ctx/i;

/** Whether a model error says the request did not fit the context window. */
export function isContextOverflow(err: unknown): boolean {
  return err instanceof Error && err.name === 'ModelError' && OVERFLOW.test(err.message);
}

/**
 * The window a context-overflow message names: llama-server's "request (5000 tokens) exceeds the
 * available context size (4096 tokens)", OpenAI's and vLLM's "maximum context length is 4096 tokens".
 */
export function windowFromError(err: unknown): number | undefined {
  if (!(err instanceof Error)) return undefined;
  const m =
    /context (?:length|size|window)(?: is| of)?\D{0,20}(\d{3,7})/i.exec(err.message) ??
    /n_ctx\D{0,5}(\d{3,7})/i.exec(err.message);
  const n = m ? Number(m[1]) : Number.NaN;
  return Number.isFinite(n) && n > 0 ? n : undefined;
}

/**
 * The request's size as the server counted it, when its overflow message says: llama-server's
 * "request (5000 tokens)", OpenAI's "your messages resulted in 5000 tokens", vLLM's "you requested 5000 tokens".
 */
export function requestTokensFromError(err: unknown): number | undefined {
  if (!(err instanceof Error)) return undefined;
  const m = /request \((\d+) tokens\)|resulted in (\d+) tokens|requested (\d+) tokens/i.exec(err.message);
  const n = Number(m?.[1] ?? m?.[2] ?? m?.[3] ?? Number.NaN);
  return Number.isFinite(n) && n > 0 ? n : undefined;
}

const SUMMARY_PROMPT = [
  'You summarize part of a coding session so the work can go on in a fresh context.',
  'Write a concise summary of the transcript below: what was asked, what was found (files, functions,',
  'facts about the code), what was changed and why, what failed, and what is left to do.',
  'Keep exact file paths, identifiers, commands and error messages. No preamble; at most 300 words.',
].join(' ');

/** Where the verbatim tail starts: a user or assistant message, so no tool result is cut from its call. */
export function cutPoint(state: SessionState, keepTokens: number): number | undefined {
  const { messages } = state;
  // messages[0] is the system prompt and messages[1] the task: both stay whatever happens
  const first = messages[0]?.role === 'system' ? 2 : 1;
  let kept = 0;
  let cut: number | undefined;
  for (let i = messages.length - 1; i > first; i--) {
    const m = messages[i] as ChatMessage;
    kept += estimateRequestTokens([m], []);
    if (m.role !== 'tool' && (cut === undefined || kept <= keepTokens)) cut = i;
    if (kept > keepTokens && cut !== undefined) break;
  }
  return cut !== undefined && cut > first ? cut : undefined;
}

/** The transcript the summarizer reads: each message on its own, long tool output cut to its start and end. */
function transcript(messages: ChatMessage[], budgetTokens: number): string {
  const perTool = 1200;
  const lines = messages.map((m) => {
    if (m.role === 'tool') {
      const body =
        m.content.length > perTool
          ? `${m.content.slice(0, perTool / 2)}\n[...]\n${m.content.slice(-perTool / 2)}`
          : m.content;
      return `[tool result: ${m.name}]\n${body}`;
    }
    if (m.role === 'assistant') {
      const calls = (m.toolCalls ?? [])
        .map((c) => `[calls ${c.name} ${c.arguments.slice(0, 400)}]`)
        .join('\n');
      return `[assistant]\n${m.content}${calls ? `\n${calls}` : ''}`;
    }
    return `[${m.role}]\n${m.content}`;
  });
  // the newest part matters most: drop from the front until it fits what the summarizer can read
  let text = lines.join('\n\n');
  while (estimateTokens(text) > budgetTokens && lines.length > 1) {
    lines.shift();
    text = `[earlier part left out]\n\n${lines.join('\n\n')}`;
  }
  return text;
}

export interface CompactRequest {
  state: SessionState;
  model: SessionModel;
  trigger: 'threshold' | 'overflow' | 'manual';
  window: number;
  settings: CompactionSettings;
  tools: ToolSpec[];
  pricing: Parameters<typeof costUsd>[2];
  signal: AbortSignal;
}

/**
 * Summarize the older part of the history and return the `compaction` event to record, or
 * undefined when there is nothing old enough to fold (the newest turns alone fill the budget).
 */
export async function compact(
  req: CompactRequest,
): Promise<Extract<SessionEvent, { type: 'compaction' }> | undefined> {
  const { state, window } = req;
  const cut = cutPoint(state, Math.floor(window * req.settings.keep));
  if (cut === undefined) return undefined;
  const older = state.messages.slice(1, cut);
  const before = estimateRequestTokens(state.messages, req.tools);
  const messages: ChatMessage[] = [
    { role: 'system', content: SUMMARY_PROMPT },
    { role: 'user', content: transcript(older, Math.floor(window * 0.6)) },
  ];
  let summary = '';
  let usage: { input: number; output: number; reported: boolean } | undefined;
  for await (const delta of req.model.stream({ messages, tools: [] }, req.signal, {})) {
    if (delta.type === 'text') summary += delta.text;
    else if (delta.type === 'usage')
      usage = {
        input: delta.usage.inputTokens,
        output: delta.usage.outputTokens,
        reported: delta.usage.reported,
      };
  }
  summary = summary.replace(/^\s*<think>[\s\S]*?<\/think>/, '').trim();
  if (!summary) return undefined;
  usage ??= { input: estimateRequestTokens(messages, []), output: estimateTokens(summary), reported: false };
  const files = [...state.filesChanged].sort();
  const keepFrom = state.origins[cut] as number;
  const tail = state.messages.slice(cut);
  const system = state.messages[0]?.role === 'system' ? [state.messages[0]] : [];
  const after = estimateRequestTokens(
    [...system, { role: 'user', content: compactedTask(state.task, summary, files) }, ...tail],
    req.tools,
  );
  const model = req.model.currentModel();
  return {
    type: 'compaction',
    trigger: req.trigger,
    summary,
    keep_from_seq: keepFrom,
    files,
    tokens_before: before,
    tokens_after: after,
    model,
    usage,
    cost_usd: costUsd(
      model,
      { inputTokens: usage.input, outputTokens: usage.output, reported: usage.reported },
      req.pricing,
    ),
  };
}
