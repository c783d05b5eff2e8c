/** read_file: a window of a text file's lines, numbered, streamed so a huge file is never loaded whole. */
import type { FileHandle } from 'node:fs/promises';
import * as z from 'zod';
import { type HeldFile, openHeld } from '../policy/held-path.js';
import { hasBinaryExtension } from './binary.js';
import {
  binaryReason,
  bomBytes,
  detectEncoding,
  encodingLabel,
  isUtf16,
  readHead,
  type TextEncoding,
} from './text-encoding.js';
import { clipLine, formatBytes, LIMITS, LineWindow, truncationMarker } from './truncate.js';
import { type Tool, ToolError } from './types.js';

// Below this size counting every line for "of N" costs next to nothing
const COUNT_ALL_BYTES = 1024 * 1024;

const schema = z.object({
  path: z.string(),
  offset: z.coerce.number().min(1).optional().describe('first line, 1-based'),
  limit: z.coerce.number().min(1).optional().describe('max lines'),
});

/** The read_file tool. */
export const readFileTool: Tool<typeof schema> = {
  name: 'read_file',
  description: 'Read a text file with line numbers; page a long one with offset and limit.',
  effect: 'read',
  schema,
  paths: (args) => [{ path: args.path, access: 'read' }],
  async execute(args, ctx) {
    // opened through held folders, so a folder swapped for a symlink after the check cannot redirect it
    const file = await openHeld(ctx.resolve(args.path, 'read'));
    if (!file) throw new ToolError(`${args.path} does not exist; use glob or list_dir to find it`);
    try {
      const result = await readWindow(file, args, ctx.signal);
      // what was read is shown as this path only if the path still names that file
      file.recheck();
      return result;
    } finally {
      await file.close();
    }
  },
};

/** The numbered lines of the opened file that the call asked for, with a marker when more follow. */
async function readWindow(
  file: HeldFile,
  args: z.infer<typeof schema>,
  signal: AbortSignal,
): Promise<{ output: string }> {
  const info = file.stats;
  if (info.isDirectory())
    throw new ToolError(`${args.path} is a directory; use list_dir to see its contents`);
  if (!info.isFile()) throw new ToolError(`${args.path} is not a regular file`);
  const binary = () =>
    new ToolError(`${args.path} is a binary file (${formatBytes(info.size)}); read_file only shows text`);
  if (hasBinaryExtension(file.path)) throw binary();
  if (info.size === 0) return { output: `(${args.path} is empty)` };
  // the same detection edit_file uses, from the head only so a huge file is never read whole
  const head = await readHead(file.handle, COUNT_ALL_BYTES);
  const encoding = detectEncoding(head.bytes, head.complete);
  if (binaryReason(head.bytes, encoding)) throw binary();
  // one short line so the model knows what it sees, and that its edits keep the encoding
  const note = encoding === 'utf-8' ? '' : `[encoding: ${encodingLabel(encoding)}; edits keep it]\n`;

  const offset = Math.floor(args.offset ?? 1);
  const window = new LineWindow({
    maxLines: Math.min(Math.floor(args.limit ?? LIMITS.lines), LIMITS.lines),
  });
  const countAll = info.size <= COUNT_ALL_BYTES;
  let lineNo = 0;
  let more = false;
  for await (const line of readLines(file.handle, encoding, signal)) {
    lineNo++;
    if (lineNo < offset || more) continue;
    if (window.add(`${String(lineNo).padStart(5)}\t${line}`)) continue;
    more = true;
    if (!countAll) break;
  }

  if (lineNo === 0) return { output: `${note}(${args.path} is empty)` };
  if (window.lines.length === 0) {
    throw new ToolError(`offset ${offset} is past the end of ${args.path} (${lineNo} lines)`);
  }
  if (!more) return { output: `${note}${window.lines.join('\n')}` };
  const last = offset + window.lines.length - 1;
  const shown = countAll
    ? `showing lines ${offset}-${last} of ${lineNo}`
    : `showing lines ${offset}-${last}, file continues`;
  const marker = truncationMarker(shown, `use offset=${last + 1} to continue`, window.limitText());
  return { output: `${note}${window.lines.join('\n')}\n${marker}` };
}

/**
 * Yield a file's lines without its line breaks. Unlike readline, a line longer than the display cap
 * is not buffered whole, so a 50 MB single-line file costs a few KB of memory.
 */
async function* readLines(
  handle: FileHandle,
  encoding: TextEncoding,
  signal: AbortSignal,
): AsyncGenerator<string> {
  // up to 4 bytes per char, so the kept bytes always cover the displayed chars
  const maxLineBytes = LIMITS.lineChars * 4;
  let parts: Buffer[] = [];
  let kept = 0;
  let dropped = false;
  const keep = (piece: Buffer): void => {
    const room = maxLineBytes - kept;
    if (piece.length > room) dropped = true;
    const part = piece.length > room ? piece.subarray(0, room) : piece;
    if (part.length === 0) return;
    parts.push(part);
    kept += part.length;
  };
  const finish = (): string => {
    let text = Buffer.concat(parts).toString(encoding === 'latin1' ? 'latin1' : 'utf8');
    if (text.endsWith('\r')) text = text.slice(0, -1);
    const line = clipLine(text, LIMITS.lineChars, dropped);
    parts = [];
    kept = 0;
    dropped = false;
    return line;
  };
  for await (const chunk of byteChunks(handle, encoding, signal)) {
    let start = 0;
    while (start < chunk.length) {
      const nl = chunk.indexOf(10, start);
      if (nl === -1) {
        keep(chunk.subarray(start));
        break;
      }
      keep(chunk.subarray(start, nl));
      yield finish();
      start = nl + 1;
    }
  }
  if (kept > 0 || dropped) yield finish();
}

/**
 * The file's bytes after its BOM, in chunks. UTF-16 is transcoded to UTF-8 on the way, so the line
 * splitter only ever looks for a single newline byte.
 */
async function* byteChunks(
  handle: FileHandle,
  encoding: TextEncoding,
  signal: AbortSignal,
): AsyncGenerator<Buffer> {
  if (!isUtf16(encoding)) {
    yield* rawChunks(handle, bomBytes(encoding).length, signal);
    return;
  }
  // ignoreBOM: the BOM is already skipped, so a U+FEFF after it is text
  const decoder = new TextDecoder(encoding, { ignoreBOM: true });
  for await (const chunk of rawChunks(handle, bomBytes(encoding).length, signal)) {
    const text = decoder.decode(chunk, { stream: true });
    if (text) yield Buffer.from(text, 'utf8');
  }
  const tail = decoder.decode();
  if (tail) yield Buffer.from(tail, 'utf8');
}

/** The open file's bytes from `start`, in fresh 64 KB chunks (the line splitter keeps slices of them). */
async function* rawChunks(handle: FileHandle, start: number, signal: AbortSignal): AsyncGenerator<Buffer> {
  for (let position = start; ; ) {
    signal.throwIfAborted();
    const chunk = Buffer.allocUnsafe(64 * 1024);
    const { bytesRead } = await handle.read(chunk, 0, chunk.length, position);
    if (bytesRead === 0) return;
    position += bytesRead;
    yield chunk.subarray(0, bytesRead);
  }
}
