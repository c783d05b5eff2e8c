/**
 * Output truncation for every tool: line, byte and line-length caps with markers that say how to get the
 * rest. Tools shape their own output within the caps (read_file's window, shell's head and tail); every
 * result then passes `capResult` once, where the loop records it, so no tool can send more.
 */
import { omittedMarker } from '../policy/effects.js';

/** Default caps: what one tool result may put in a small model's context. */
export const LIMITS = {
  lines: 2000,
  bytes: 50 * 1024,
  lineChars: 2000,
} as const;

export interface WindowLimits {
  maxLines?: number;
  maxBytes?: number;
}

/** Cut one line to `maxChars`, marked so the model does not mistake it for the whole line. */
export function clipLine(line: string, maxChars: number = LIMITS.lineChars, force = false): string {
  if (line.length <= maxChars && !force) return line;
  return `${line.slice(0, maxChars)}… [line cut at ${maxChars} chars]`;
}

/** The marker closing a cut output: what is shown, the limit that cut it, and how to get the rest. */
export function truncationMarker(shown: string, hint: string, limitText?: string): string {
  return `[truncated: ${shown}${limitText ? ` (${limitText})` : ''}; ${hint}]`;
}

/** A byte count in words a model reads easily, e.g. "5.2 MB". */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} bytes`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  if (bytes < 1024 ** 3) return `${(bytes / 1024 ** 2).toFixed(1)} MB`;
  return `${(bytes / 1024 ** 3).toFixed(1)} GB`;
}

/** A head-of-output window that accepts lines until the line or byte cap is reached. */
export class LineWindow {
  readonly lines: string[] = [];
  /** Why the window stopped accepting lines, or null while it still has room. */
  cutBy: 'lines' | 'bytes' | null = null;
  private bytes = 0;
  private readonly maxLines: number;
  private readonly maxBytes: number;

  constructor(limits: WindowLimits = {}) {
    this.maxLines = limits.maxLines ?? LIMITS.lines;
    this.maxBytes = limits.maxBytes ?? LIMITS.bytes;
  }

  /** Add a line if it fits; returns false (and keeps nothing) once the window is full. */
  add(line: string): boolean {
    if (this.cutBy) return false;
    if (this.lines.length >= this.maxLines) {
      this.cutBy = 'lines';
      return false;
    }
    // +1 for the newline that joins it
    const size = Buffer.byteLength(line) + 1;
    if (this.bytes + size > this.maxBytes && this.lines.length > 0) {
      this.cutBy = 'bytes';
      return false;
    }
    this.lines.push(line);
    this.bytes += size;
    return true;
  }

  /** The limit that cut the window, in words, e.g. "2000-line limit". */
  limitText(): string {
    return this.cutBy === 'bytes'
      ? `${Math.round(this.maxBytes / 1024)} KB limit`
      : `${this.maxLines}-line limit`;
  }
}

/**
 * Keep the head of `text` within the caps; when cut, append a marker naming what was cut and `hint`
 * (how to get the rest, e.g. "narrow the pattern or path").
 */
export function truncateHead(
  text: string,
  hint: string,
  limits: WindowLimits & { maxLineChars?: number } = {},
): string {
  const all = text.split('\n');
  const window = new LineWindow(limits);
  for (const line of all) {
    if (!window.add(clipLine(line, limits.maxLineChars))) break;
  }
  if (!window.cutBy) return window.lines.join('\n');
  const omitted = all.length - window.lines.length;
  const marker = truncationMarker(`${omitted} more lines not shown`, hint, window.limitText());
  return `${window.lines.join('\n')}\n${marker}`;
}

/**
 * Keep the head and tail of `text` (where a command's banner and its final error live) and replace
 * the middle with a marker counting the omitted bytes.
 */
export function truncateMiddle(text: string, limits: WindowLimits & { maxLineChars?: number } = {}): string {
  const maxBytes = limits.maxBytes ?? LIMITS.bytes;
  const maxLines = limits.maxLines ?? LIMITS.lines;
  const lines = text.split('\n').map((l) => clipLine(l, limits.maxLineChars));
  const joined = lines.join('\n');
  const total = Buffer.byteLength(joined);
  if (lines.length <= maxLines && total <= maxBytes) return joined;
  const half = { maxLines: Math.floor(maxLines / 2), maxBytes: Math.floor(maxBytes / 2) };
  const head = new LineWindow(half);
  for (const line of lines) if (!head.add(line)) break;
  const tail = new LineWindow(half);
  for (let i = lines.length - 1; i >= head.lines.length; i--) {
    const line = lines[i] ?? '';
    if (!tail.add(line)) break;
  }
  tail.lines.reverse();
  const kept = Buffer.byteLength(head.lines.join('\n')) + Buffer.byteLength(tail.lines.join('\n')) + 2;
  const omittedLines = lines.length - head.lines.length - tail.lines.length;
  if (omittedLines <= 0) return joined;
  const marker = `${omittedMarker(Math.max(0, total - kept))} (${omittedLines} lines)`;
  return [...head.lines, marker, ...tail.lines].join('\n');
}

/** Room past the caps that a tool's own labels and markers take: a result a tool cut itself is not cut again. */
const MARKER_ROOM = { bytes: 1024, lines: 8, lineChars: 64 } as const;

/** Whether `text` is within the caps, give or take the room markers take. */
function fitsCaps(text: string): boolean {
  if (text.length > LIMITS.bytes + MARKER_ROOM.bytes) return false;
  if (Buffer.byteLength(text) > LIMITS.bytes + MARKER_ROOM.bytes) return false;
  let lines = 0;
  for (let start = 0; start <= text.length; lines++) {
    const end = text.indexOf('\n', start);
    const stop = end < 0 ? text.length : end;
    if (stop - start > LIMITS.lineChars + MARKER_ROOM.lineChars) return false;
    start = stop + 1;
  }
  return lines <= LIMITS.lines + MARKER_ROOM.lines;
}

/**
 * The one cap every tool result passes (built-in, MCP, A2A and subagent tools alike) before the model or
 * the log sees it: a result within the caps is kept as it is; a bigger one keeps its head and tail, long
 * lines cut, with a marker saying how much is missing.
 */
export function capResult(text: string): string {
  return fitsCaps(text) ? text : truncateMiddle(text);
}
