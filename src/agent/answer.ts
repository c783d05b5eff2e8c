/** One model answer: streamed, shown live, with retries and fallbacks recorded, and usage estimated when unreported. */

import { estimateRequestTokens, estimateTokens } from '../model/tokens.js';
import type { ChatMessage, ToolCall, ToolSpec } from '../model/types.js';
import type { TokenCount } from './events.js';
import type { SessionOptions, StreamHooks } from './loop.js';

export interface Answer {
  text: string;
  calls: ToolCall[];
  usage: TokenCount & { reported: boolean };
  model: string;
}

/** Stream the model's answer to a request and collect its text, tool calls and usage. */
export async function streamAnswer(
  opts: SessionOptions,
  request: { messages: ChatMessage[]; tools: ToolSpec[]; contextWindow?: number },
  signal: AbortSignal,
  round: number,
): Promise<Answer> {
  let text = '';
  const calls: ToolCall[] = [];
  let usage: (TokenCount & { reported: boolean }) | undefined;
  const hooks: StreamHooks = {
    onRetry: (info) =>
      opts.record({
        type: 'model_retry',
        round,
        model: info.model,
        attempt: info.attempt,
        error: info.error.message,
        delay_ms: info.delayMs,
      }),
    onFallback: (info) =>
      opts.record({ type: 'model_fallback', round, from: info.from, to: info.to, error: info.error.message }),
  };
  for await (const delta of opts.model.stream(request, signal, hooks)) {
    if (delta.type === 'text') {
      text += delta.text;
      opts.onText?.(delta.text);
    } else if (delta.type === 'tool_call') {
      calls.push(delta.call);
    } else if (delta.type === 'usage') {
      usage = {
        input: delta.usage.inputTokens,
        output: delta.usage.outputTokens,
        reported: delta.usage.reported,
      };
    }
  }
  if (text) opts.onText?.('\n');
  // servers that report no usage still cost tokens: estimate, and say it is an estimate
  usage ??= {
    input: estimateRequestTokens(request.messages, request.tools),
    output: estimateTokens(text + calls.map((c) => c.name + c.arguments).join('')),
    reported: false,
  };
  return { text, calls, usage, model: opts.model.currentModel() };
}
