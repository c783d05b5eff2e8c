/** The one streaming interface every model provider implements, and the messages it speaks. */

export interface ToolCall {
  id: string;
  name: string;
  /** Raw JSON text of the arguments, exactly as the model produced it. */
  arguments: string;
}

/**
 * An image sent with a user message. The log keeps it without `data` (by path, hash and size); a
 * request carries the bytes, read again from the workspace while the hash still matches.
 */
export interface ImageAttachment {
  /** As attached, relative to the workspace. */
  path: string;
  mime: 'image/png' | 'image/jpeg' | 'image/gif' | 'image/webp';
  sha256: string;
  bytes: number;
  /** The bytes, base64: only on what a request sends, never in the log. */
  data?: string;
}

export type ChatMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string; images?: ImageAttachment[] }
  | { role: 'assistant'; content: string; toolCalls?: ToolCall[] }
  | { role: 'tool'; toolCallId: string; name: string; content: string };

/** A tool as the model sees it: JSON Schema parameters derived from the tool's zod schema. */
export interface ToolSpec {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

export interface ModelRequest {
  model: string;
  messages: ChatMessage[];
  tools: ToolSpec[];
  /** Context window to ask for (Ollama's num_ctx); ignored by servers that fix it themselves. */
  contextWindow?: number;
  /** The longest answer, in tokens: every request the model client sends carries one. */
  maxOutputTokens?: number;
  temperature?: number;
}

export interface Usage {
  inputTokens: number;
  outputTokens: number;
  /** true when the server reported the counts; false when keel estimated them. */
  reported: boolean;
  /** Prompt tokens the server served from its cache, when it says. */
  cachedTokens?: number;
  /** What the provider says the call cost in USD (OpenRouter's `usage.cost`), when it says. */
  costUsd?: number;
}

export type Delta =
  | { type: 'text'; text: string }
  /** The model's reasoning (reasoning_content, Ollama's thinking, or an inline <think> block): never answer text. */
  | { type: 'reasoning'; text: string }
  /** A complete native tool call; providers assemble streamed fragments before emitting it. */
  | { type: 'tool_call'; call: ToolCall }
  | { type: 'usage'; usage: Usage }
  /** Last. finishReason is normalized: 'stop', 'tool_calls', 'length' (cut at the output limit), or the server's word. */
  | { type: 'done'; finishReason: string };

export interface Provider {
  readonly name: string;
  readonly baseUrl: string;
  stream(request: ModelRequest, signal: AbortSignal): AsyncIterable<Delta>;
  /** The context window the server runs the model with (else its training length), when it says. */
  contextWindow?(model: string, signal?: AbortSignal): Promise<ContextWindow | undefined>;
  /** Tokens in a text by the server's own tokenizer (llama-server's /tokenize); undefined when it has none. */
  countTokens?(text: string, signal?: AbortSignal): Promise<number | undefined>;
  /** Models the server offers, when it can say. */
  listModels?(signal?: AbortSignal): Promise<string[]>;
  /** Whether the model accepts images, and where the server said it; undefined when the server does not say. */
  vision?(model: string, signal?: AbortSignal): Promise<VisionSupport | undefined>;
}

/** A model's image support as its server reports it, e.g. `Ollama /api/show capabilities`. */
export interface VisionSupport {
  accepts: boolean;
  source: string;
}

/** A context window and where it was read, e.g. `llama-server /props n_ctx`, for `keel doctor` to say. */
export interface ContextWindow {
  tokens: number;
  source: string;
}

export type ModelErrorKind =
  | 'unreachable' // connection refused, DNS, reset
  | 'auth' // 401/403
  | 'not_found' // 404: wrong base URL or unknown model
  | 'rate_limit' // 429
  | 'timeout' // first-token or idle timeout, 408
  | 'server' // 5xx
  | 'bad_request' // 400/422: the request itself is wrong
  | 'protocol' // the server answered something that is not the wire format
  | 'too_long'; // an answer streamed past its output limit without end

/** A failure talking to a model, classified so retries, fallback and exit codes can act on it. */
export class ModelError extends Error {
  constructor(
    readonly kind: ModelErrorKind,
    message: string,
    readonly url: string,
    readonly status?: number,
    /** Seconds the server asked us to wait (Retry-After), when it said. */
    readonly retryAfterS?: number,
  ) {
    super(message);
    this.name = 'ModelError';
  }

  get retryable(): boolean {
    return (
      this.kind === 'unreachable' ||
      this.kind === 'rate_limit' ||
      this.kind === 'timeout' ||
      this.kind === 'server'
    );
  }
}
