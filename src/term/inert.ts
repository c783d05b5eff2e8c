/**
 * Text from the model, a tool, a hook or the repository, made inert for a terminal: every character
 * a terminal would act on instead of print is shown as a visible escape (`\x1b`, `\r`, `\u202e`).
 *
 * Escaping works one character at a time and keeps no state, so streamed text can pass through chunk
 * by chunk: an ESC at the end of one chunk is already `\x1b` before the rest of its sequence arrives,
 * and `inert(a) + inert(b) === inert(a + b)` for every split.
 */

// C0 controls except tab and newline (CR too: it moves the cursor back to overwrite what a person
// reads), DEL, C1 controls (U+009B is a one-byte CSI to some terminals), the line and paragraph
// separators, and the bidi embeddings, overrides and isolates that reorder what is shown ("trojan
// source"). Zero-width characters stay in prose: they neither move the cursor nor reorder text, and ZWJ/ZWNJ
// are needed by emoji and several scripts.
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const PROSE = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

// A one-line display (a tool call, a file name, a reason) must not break into lines or hide
// characters: newline and tab are escaped too, and so are the invisible characters that make two
// different names look the same (zero-width spaces and joiners, marks, word joiner, BOM, tag characters).
const LINE =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
  /[\x00-\x1f\x7f-\x9f\u061c\u180e\u200b-\u200f\u2028\u2029\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]|[\u{e0000}-\u{e007f}]/gu;

const NAMED: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

// the escapable characters are a few hundred at most, so each escape is built once
const escapes = new Map<string, string>();

/** The visible escape for one character: `\n`, `\x1b`, `\u202e`, `\u{e0041}`. */
function visible(ch: string): string {
  let shown = escapes.get(ch);
  if (shown === undefined) {
    shown = NAMED[ch] ?? hexEscape(ch.codePointAt(0) ?? 0);
    escapes.set(ch, shown);
  }
  return shown;
}

function hexEscape(code: number): string {
  const hex = code.toString(16);
  if (code < 0x100) return `\\x${hex.padStart(2, '0')}`;
  if (code < 0x10000) return `\\u${hex.padStart(4, '0')}`;
  return `\\u{${hex}}`;
}

/** Make prose inert (assistant text, summaries, messages): control characters become visible escapes; newline and tab stay. */
export function inert(text: string): string {
  return text.replace(PROSE, visible);
}

/** Make text inert for a one-line display: as `inert`, and newline, tab and invisible characters are escaped too. */
export function inertLine(text: string): string {
  return text.replace(LINE, visible);
}
