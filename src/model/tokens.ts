/**
 * Token estimates with gpt-tokenizer's o200k encoding. Loading it costs ~250 ms, so it loads on
 * demand (`loadTokenizer`); until then estimates fall back to characters / 4.
 */
import type { ChatMessage, ToolCall, ToolSpec, Usage } from './types.js';

type Counter = (text: string) => number;

let counter: Counter | undefined;
let loading: Promise<void> | undefined;

// chat formats wrap each message in a few special tokens (role, separators)
const PER_MESSAGE_OVERHEAD = 4;
const PER_TOOL_OVERHEAD = 8;
const PER_REQUEST_OVERHEAD = 3;

/** Load the o200k tokenizer; later estimates are exact for o200k instead of chars / 4. */
export function loadTokenizer(): Promise<void> {
  loading ??= import('gpt-tokenizer/encoding/o200k_base').then((m) => {
    // text from files may contain "<|endoftext|>"; count it as text instead of throwing
    counter = (text) => m.countTokens(text, { disallowedSpecial: new Set() });
  });
  return loading;
}

/** Whether estimates currently use the real tokenizer. */
export function tokenizerLoaded(): boolean {
  return counter !== undefined;
}

/** Tokens in a piece of text (o200k when loaded, else characters / 4). */
export function estimateTokens(text: string): number {
  if (text.length === 0) return 0;
  if (counter) return counter(text);
  return Math.ceil(text.length / 4);
}

function callTokens(calls: ToolCall[] | undefined): number {
  return (calls ?? []).reduce((n, c) => n + estimateTokens(c.name) + estimateTokens(c.arguments) + 3, 0);
}

/** Tokens a request will cost as input: messages plus the tool schemas offered. */
export function estimateRequestTokens(messages: ChatMessage[], tools: ToolSpec[]): number {
  let total = PER_REQUEST_OVERHEAD;
  for (const m of messages) {
    total += PER_MESSAGE_OVERHEAD + estimateTokens(m.content);
    if (m.role === 'assistant') total += callTokens(m.toolCalls);
    if (m.role === 'tool') total += estimateTokens(m.name);
  }
  for (const t of tools) {
    total += PER_TOOL_OVERHEAD + estimateTokens(t.name) + estimateTokens(t.description);
    total += estimateTokens(JSON.stringify(t.parameters));
  }
  return total;
}

/** Estimated usage for an answer whose server did not report counts. */
export function estimateUsage(
  messages: ChatMessage[],
  tools: ToolSpec[],
  outputText: string,
  calls: ToolCall[],
): Usage {
  return {
    inputTokens: estimateRequestTokens(messages, tools),
    outputTokens: estimateTokens(outputText) + callTokens(calls),
    reported: false,
  };
}
