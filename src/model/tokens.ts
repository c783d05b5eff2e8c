/**
 * Token estimates with gpt-tokenizer's o200k encoding. Loading it costs ~250 ms, so it loads on
 * demand (`loadTokenizer`); until then estimates fall back to characters / 4.
 *
 * o200k's merge step is quadratic in the length of a run without whitespace (5 MB of "a" took
 * minutes at full CPU, deaf to signals), so text is counted in pieces of at most PIECE characters,
 * cut at whitespace where there is some, and a text longer than EXACT_LIMIT is counted from evenly
 * spaced samples and scaled: every estimate costs at most a few hundred thousand characters of work.
 */
import type { ChatMessage, ToolCall, ToolSpec, Usage } from './types.js';

type Counter = (text: string) => number;

let counter: Counter | undefined;
let loading: Promise<void> | undefined;

// chat formats wrap each message in a few special tokens (role, separators)
const PER_MESSAGE_OVERHEAD = 4;
const PER_TOOL_OVERHEAD = 8;
const PER_REQUEST_OVERHEAD = 3;

/** Characters counted at once: a piece of one repeated character costs about a millisecond. */
const PIECE = 1024;
/** Longer texts are estimated from SAMPLES pieces spread over them. */
const EXACT_LIMIT = 128 * 1024;
const SAMPLES = 64;

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

/** Where the piece starting at `start` ends: at the last whitespace in its second half, else PIECE on. */
function pieceEnd(text: string, start: number): number {
  const end = Math.min(text.length, start + PIECE);
  if (end === text.length) return end;
  for (let i = end - 1; i > start + PIECE / 2; i--) if (/\s/.test(text[i] ?? '')) return i;
  return end;
}

/** The pieces a text is counted in: all of it up to EXACT_LIMIT, else SAMPLES pieces spread over it. */
function* piecesOf(text: string): Generator<string> {
  if (text.length <= EXACT_LIMIT) {
    for (let start = 0; start < text.length; ) {
      const end = pieceEnd(text, start);
      yield text.slice(start, end);
      start = end;
    }
    return;
  }
  const stride = Math.floor(text.length / SAMPLES);
  for (let i = 0; i < SAMPLES; i++) {
    const start = i * stride;
    yield text.slice(start, pieceEnd(text, start));
  }
}

/** The count of a text from its pieces' counts: exact, or scaled from the samples by length. */
function scaled(text: string, counted: number, chars: number): number {
  if (text.length <= EXACT_LIMIT || chars === 0) return counted;
  return Math.ceil((counted * text.length) / chars);
}

/** Tokens in a piece of text (o200k when loaded, else characters / 4); bounded work whatever the text. */
export function estimateTokens(text: string): number {
  if (text.length === 0) return 0;
  if (!counter) return Math.ceil(text.length / 4);
  let counted = 0;
  let chars = 0;
  for (const piece of piecesOf(text)) {
    counted += counter(piece);
    chars += piece.length;
  }
  return scaled(text, counted, chars);
}

/**
 * Tokens in a text with the o200k tokenizer, yielding to the event loop between pieces so a signal
 * (Ctrl+C, SIGTERM) is heard: for a prompt that may be megabytes long.
 */
export async function countTokensCancellable(text: string, signal?: AbortSignal): Promise<number> {
  await loadTokenizer();
  const count = counter ?? ((t: string) => Math.ceil(t.length / 4));
  let counted = 0;
  let chars = 0;
  let n = 0;
  for (const piece of piecesOf(text)) {
    if (n++ % 8 === 0) {
      await new Promise((resolve) => setImmediate(resolve));
      if (signal?.aborted) throw signal.reason;
    }
    counted += count(piece);
    chars += piece.length;
  }
  return scaled(text, counted, chars);
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

/**
 * keel's o200k estimate ran 24-26% below a Qwen3 server's own count: where the server cannot count,
 * a window check takes the estimate plus this share, so it errs on the safe side.
 */
export const ESTIMATE_MARGIN = 0.3;

/** The words of a request a server tokenizes (every text, call and schema), without the chat template. */
export function requestText(messages: ChatMessage[], tools: ToolSpec[]): string {
  const parts: string[] = [];
  for (const m of messages) {
    parts.push(m.content);
    if (m.role === 'assistant') for (const c of m.toolCalls ?? []) parts.push(c.name, c.arguments);
    if (m.role === 'tool') parts.push(m.name);
  }
  for (const t of tools) parts.push(t.name, t.description, JSON.stringify(t.parameters));
  return parts.join('\n');
}

/** The tokens a chat template adds around a request's texts (roles, separators, tool framing). */
export function templateTokens(messages: ChatMessage[], tools: ToolSpec[]): number {
  let total =
    PER_REQUEST_OVERHEAD + messages.length * PER_MESSAGE_OVERHEAD + tools.length * PER_TOOL_OVERHEAD;
  for (const m of messages) if (m.role === 'assistant') total += 3 * (m.toolCalls?.length ?? 0);
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
