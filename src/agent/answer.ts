/** One model answer: streamed, shown live, with retries and fallbacks recorded, and usage estimated when unreported. */

import { splitUnopenedThink } from '../model/think-tags.js';
import { estimateRequestTokens, estimateTokens } from '../model/tokens.js';
import type { ChatMessage, ToolCall, ToolSpec } from '../model/types.js';
import type { TokenCount } from './events.js';
import type { SessionOptions, StreamHooks } from './loop.js';

export interface Answer {
  /** The answer proper, reasoning taken out: what goes into history and summaries. */
  text: string;
  /** The model's reasoning (reasoning_content, thinking, <think> blocks), trimmed; '' when it gave none. */
  reasoning: string;
  calls: ToolCall[];
  /** From the done delta: 'stop', 'tool_calls', 'length' (cut at the output limit), ...; '' if none came. */
  finishReason: string;
  usage: TokenCount & { reported: boolean };
  model: string;
  /** From the start of the request that answered (after any retry or fallback): to its first token, to its end. */
  timing: { first_token_ms: number; total_ms: number };
}

/** Stream the model's answer to a request and collect its text, reasoning, tool calls and usage. */
export async function streamAnswer(
  opts: SessionOptions,
  request: { messages: ChatMessage[]; tools: ToolSpec[]; contextWindow?: number; reissued?: boolean },
  signal: AbortSignal,
  round: number,
): Promise<Answer> {
  let text = '';
  let reasoning = '';
  let finishReason = '';
  const calls: ToolCall[] = [];
  let usage: (TokenCount & { reported: boolean }) | undefined;
  // the answer's own request: a retry or a fallback starts the clock again
  let start = Date.now();
  let first: number | undefined;
  const hooks: StreamHooks = {
    onRetry: (info) => {
      start = Date.now() + info.delayMs;
      opts.record({
        type: 'model_retry',
        round,
        model: info.model,
        attempt: info.attempt,
        error: info.error.message,
        delay_ms: info.delayMs,
      });
    },
    onFallback: (info) => {
      start = Date.now();
      opts.record({ type: 'model_fallback', round, from: info.from, to: info.to, error: info.error.message });
    },
  };
  for await (const delta of opts.model.stream(request, signal, hooks)) {
    const token =
      delta.type === 'tool_call' || ((delta.type === 'text' || delta.type === 'reasoning') && delta.text);
    if (first === undefined && token) first = Date.now();
    if (delta.type === 'text') {
      text += delta.text;
      opts.onText?.(delta.text);
    } else if (delta.type === 'reasoning') {
      reasoning += delta.text;
      opts.onReasoning?.(delta.text);
    } else if (delta.type === 'tool_call') {
      calls.push(delta.call);
    } else if (delta.type === 'usage') {
      usage = {
        input: delta.usage.inputTokens,
        output: delta.usage.outputTokens,
        reported: delta.usage.reported,
      };
    } else if (delta.type === 'done') {
      finishReason = delta.finishReason;
    }
  }
  if (text) opts.onText?.('\n');
  // a server that sent reasoning apart sends a clean answer; otherwise a bare </think> ends reasoning
  // that began before the stream did (the template opened it), which streamed as text
  const unopened = reasoning ? undefined : splitUnopenedThink(text);
  if (unopened) {
    reasoning = unopened.reasoning;
    text = unopened.text;
  }
  // servers that report no usage still cost tokens: estimate, and say it is an estimate
  usage ??= {
    input: estimateRequestTokens(request.messages, request.tools),
    output: estimateTokens(reasoning + text + calls.map((c) => c.name + c.arguments).join('')),
    reported: false,
  };
  const end = Date.now();
  const timing = { first_token_ms: Math.max(0, (first ?? end) - start), total_ms: Math.max(0, end - start) };
  return {
    text,
    reasoning: reasoning.trim(),
    calls,
    finishReason,
    usage,
    model: opts.model.currentModel(),
    timing,
  };
}
