/**
 * Separating inline `<think>...</think>` reasoning (qwen3, deepseek-r1 without a reasoning parser)
 * from answer text, as it streams: a tag may arrive split across chunks (`<thi` + `nk>`).
 */

const OPEN = '<think>';
const CLOSE = '</think>';

/** A piece of the stream, classified. */
export type ThinkPiece = { type: 'text'; text: string } | { type: 'reasoning'; text: string };

type State =
  /** Nothing but whitespace seen: a `<think>` here opens reasoning. */
  | 'start'
  | 'think'
  /** Just after `</think>`: the whitespace models put between reasoning and answer is dropped. */
  | 'after'
  /** The answer proper: passed through untouched, tags and all. */
  | 'text';

/**
 * Splits one answer's content stream into text and reasoning. Only a `<think>` that opens the
 * answer counts: a later one is literal text (a coding model may well write the tag in code), so
 * answer text never loses content to a tag in the middle of it.
 */
export class ThinkTagSplitter {
  private state: State = 'start';
  /** Held back: whitespace or a partial tag that the next chunk decides. */
  private pending = '';

  /** Classify the next chunk of content; returns the pieces that are decided so far. */
  push(chunk: string): ThinkPiece[] {
    const out: ThinkPiece[] = [];
    let buf = this.pending + chunk;
    this.pending = '';
    while (buf.length > 0) {
      if (this.state === 'start') {
        const trimmed = buf.trimStart();
        if (trimmed.startsWith(OPEN)) {
          this.state = 'think';
          buf = trimmed.slice(OPEN.length);
          continue;
        }
        if (OPEN.startsWith(trimmed)) {
          this.pending = buf; // whitespace, or `<thi` waiting for `nk>`
          break;
        }
        this.state = 'text';
        continue;
      }
      if (this.state === 'think') {
        const end = buf.indexOf(CLOSE);
        if (end >= 0) {
          if (end > 0) out.push({ type: 'reasoning', text: buf.slice(0, end) });
          this.state = 'after';
          buf = buf.slice(end + CLOSE.length);
          continue;
        }
        const held = partialSuffix(buf, CLOSE);
        const decided = buf.slice(0, buf.length - held);
        if (decided) out.push({ type: 'reasoning', text: decided });
        this.pending = buf.slice(decided.length);
        break;
      }
      if (this.state === 'after') {
        buf = buf.trimStart();
        if (buf) this.state = 'text';
        continue;
      }
      out.push({ type: 'text', text: buf });
      break;
    }
    return out;
  }

  /** The stream ended: release what was held (a partial tag is just text, or reasoning inside a block). */
  end(): ThinkPiece[] {
    const held = this.pending;
    this.pending = '';
    if (!held) return [];
    return [{ type: this.state === 'think' ? 'reasoning' : 'text', text: held }];
  }
}

/** Length of the longest suffix of `text` that is a proper prefix of `tag` (a tag cut by the chunk end). */
function partialSuffix(text: string, tag: string): number {
  for (let n = Math.min(tag.length - 1, text.length); n > 0; n--) {
    if (text.endsWith(tag.slice(0, n))) return n;
  }
  return 0;
}

/**
 * Reasoning whose opening tag was never streamed: chat templates that end the prompt with
 * `<think>` (deepseek-r1, qwen3 thinking) make the model start inside reasoning and only close it.
 * That is only knowable once `</think>` arrives, after the reasoning was streamed as text, so it is
 * applied to the whole answer text. Undefined when `text` has no such unopened close.
 */
export function splitUnopenedThink(text: string): { reasoning: string; text: string } | undefined {
  const end = text.indexOf(CLOSE);
  if (end < 0) return undefined;
  const before = text.slice(0, end);
  // `<think>` earlier in the text: a literal block in the middle of an answer, not an unopened one
  if (before.includes(OPEN)) return undefined;
  return { reasoning: before, text: text.slice(end + CLOSE.length).trimStart() };
}
