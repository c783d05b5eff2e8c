/**
 * How long one answer may be: the output limit every request carries (`max_output_tokens`, sent as
 * max_tokens or num_predict), and keel's own stop for a server that streams past it without end.
 */
import { ModelError, type ModelRequest } from './types.js';

/** Sent with every request when the config sets no `max_output_tokens`. */
export const DEFAULT_MAX_OUTPUT_TOKENS = 8192;

/**
 * The longest line of an answer's stream on the wire (one server event; a whole large tool call in one is
 * far shorter): a parser holds a line until it ends, so one that never ends is stopped here, unseen otherwise.
 */
export const MAX_LINE_BYTES = 4 * 1024 * 1024;

/** The ModelError for a line of the stream past MAX_LINE_BYTES. */
export function lineTooLong(url: string): ModelError {
  return new ModelError(
    'too_long',
    `${url}: a line of the answer's stream ran past ${MAX_LINE_BYTES / 1024 / 1024} MB without end; keel stopped it`,
    url,
  );
}

/** More characters per token than any tokenizer gives over a whole answer: past it, the limit was ignored. */
const CHARS_PER_TOKEN = 32;

/** Counts what one answer streams (text, reasoning, tool-call arguments) and stops it past its limit. */
export class AnswerMeter {
  private chars = 0;
  private readonly tokens: number;
  /** Characters the answer may stream in all. */
  readonly cap: number;

  constructor(
    private readonly request: ModelRequest,
    private readonly url: string,
  ) {
    this.tokens = request.maxOutputTokens ?? DEFAULT_MAX_OUTPUT_TOKENS;
    this.cap = this.tokens * CHARS_PER_TOKEN;
  }

  /** Count streamed text; throws once the answer is past its cap. */
  add(text: string): void {
    this.chars += text.length;
    if (this.chars > this.cap) throw this.error();
  }

  /** Check text the provider holds before it is a piece of the answer (a line not yet ended). */
  holding(length: number): void {
    if (this.chars + length > this.cap) throw this.error();
  }

  private error(): ModelError {
    return new ModelError(
      'too_long',
      `${this.url}: the answer of model ${this.request.model} ran past ${this.cap} characters without end (max_output_tokens = ${this.tokens}, which the server did not honour); keel stopped it`,
      this.url,
    );
  }
}
