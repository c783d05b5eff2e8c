/**
 * Text encodings keel reads and edits byte-exactly: UTF-8 (with or without BOM), UTF-16 LE/BE with a
 * BOM, and Latin-1 for anything that is not valid UTF-8. Each maps bytes to text one to one, so an edit
 * made on the decoded text and encoded back leaves every byte outside the replaced span as it was.
 */
import type { FileHandle } from 'node:fs/promises';
import { looksBinary } from './binary.js';

export type TextEncoding = 'utf-8' | 'utf-8-bom' | 'utf-16le' | 'utf-16be' | 'latin1';

export interface DecodedText {
  encoding: TextEncoding;
  /** The file's text without its BOM. */
  text: string;
}

/** Why bytes cannot be edited as text, e.g. "it contains NUL bytes". */
export interface Undecodable {
  binary: string;
}

/** Thrown by encodeText when the text holds a character the encoding cannot store. */
export class EncodingError extends Error {
  override name = 'EncodingError';
}

const BOMS: Array<{ encoding: TextEncoding; bytes: Buffer }> = [
  { encoding: 'utf-8-bom', bytes: Buffer.from([0xef, 0xbb, 0xbf]) },
  { encoding: 'utf-16le', bytes: Buffer.from([0xff, 0xfe]) },
  { encoding: 'utf-16be', bytes: Buffer.from([0xfe, 0xff]) },
];

/** The encoding's BOM bytes, empty for encodings without one. */
export function bomBytes(encoding: TextEncoding): Buffer {
  return BOMS.find((b) => b.encoding === encoding)?.bytes ?? Buffer.alloc(0);
}

/** How a person names the encoding, e.g. "UTF-16 LE with BOM". */
export function encodingLabel(encoding: TextEncoding): string {
  switch (encoding) {
    case 'utf-8':
      return 'UTF-8';
    case 'utf-8-bom':
      return 'UTF-8 with BOM';
    case 'utf-16le':
      return 'UTF-16 LE with BOM';
    case 'utf-16be':
      return 'UTF-16 BE with BOM';
    case 'latin1':
      return 'Latin-1 (not valid UTF-8)';
  }
}

/**
 * The encoding of a file from its bytes. `complete` is false when `bytes` is only the file's head: a
 * multi-byte sequence cut at the end is then not held against UTF-8.
 */
export function detectEncoding(bytes: Uint8Array, complete = true): TextEncoding {
  const bom = BOMS.find((b) => startsWith(bytes, b.bytes));
  // FF FE 00 00 is a UTF-32 LE BOM; it falls through to the NUL-byte binary check
  if (bom && !(bom.encoding === 'utf-16le' && bytes[2] === 0 && bytes[3] === 0)) return bom.encoding;
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(bytes, { stream: !complete });
    return 'utf-8';
  } catch {
    return 'latin1';
  }
}

/** Why bytes in this encoding are not text keel may edit, or null when they are. */
export function binaryReason(bytes: Uint8Array, encoding: TextEncoding): string | null {
  if (isUtf16(encoding)) return bytes.length % 2 === 0 ? null : 'UTF-16 with an odd number of bytes';
  return looksBinary(bytes) ? 'it contains NUL bytes' : null;
}

/**
 * Decode a whole file's bytes, or say why they are not editable text. The result is checked to encode
 * back to exactly the same bytes, so nothing keel writes from it can change a byte by accident.
 */
export function decodeFile(bytes: Buffer): DecodedText | Undecodable {
  const encoding = detectEncoding(bytes);
  const reason = binaryReason(bytes, encoding);
  if (reason) return { binary: reason };
  const text = decodeBody(bytes.subarray(bomBytes(encoding).length), encoding);
  if (!encodeText(text, encoding, false).equals(bytes)) {
    return { binary: `its bytes do not read back exactly as ${encodingLabel(encoding)}` };
  }
  return { encoding, text };
}

/** Decode bytes (without a BOM) in the given encoding. */
export function decodeBody(bytes: Buffer, encoding: TextEncoding): string {
  switch (encoding) {
    case 'utf-16le':
      return bytes.toString('utf16le');
    case 'utf-16be':
      // swap16 works in place: swap a copy, never the caller's buffer
      return Buffer.from(bytes).swap16().toString('utf16le');
    case 'latin1':
      return bytes.toString('latin1');
    default:
      return bytes.toString('utf8');
  }
}

/**
 * The first character of `text` the encoding cannot store, described as `"€" (U+20AC)`, or null.
 * UTF-8 cannot store a lone surrogate (it would become U+FFFD); UTF-16 stores every code unit.
 */
export function unrepresentable(text: string, encoding: TextEncoding): string | null {
  if (isUtf16(encoding)) return null;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (encoding === 'latin1') {
      if (unit <= 0xff) continue;
      const point = text.codePointAt(i) ?? unit;
      return `"${String.fromCodePoint(point)}" (${codePoint(point)})`;
    }
    if (unit < 0xd800 || unit > 0xdfff) continue;
    const next = text.charCodeAt(i + 1);
    if (unit <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
      i++;
      continue;
    }
    return `a lone surrogate (${codePoint(unit)})`;
  }
  return null;
}

/** Encode text (BOM added when the encoding has one); throws EncodingError for a character it cannot store. */
export function encodeText(text: string, encoding: TextEncoding, check = true): Buffer {
  const bad = check ? unrepresentable(text, encoding) : null;
  if (bad) throw new EncodingError(`${encodingLabel(encoding)} cannot hold ${bad}`);
  const bom = bomBytes(encoding);
  switch (encoding) {
    case 'utf-16le':
      return Buffer.concat([bom, Buffer.from(text, 'utf16le')]);
    case 'utf-16be':
      return Buffer.concat([bom, Buffer.from(text, 'utf16le').swap16()]);
    case 'latin1':
      return Buffer.from(text, 'latin1');
    default:
      return Buffer.concat([bom, Buffer.from(text, 'utf8')]);
  }
}

/** True for the UTF-16 encodings, whose text has NUL bytes and whose newline is two bytes. */
export function isUtf16(encoding: TextEncoding): boolean {
  return encoding === 'utf-16le' || encoding === 'utf-16be';
}

/** The first `max` bytes of an open file (fewer when it is shorter), without reading the rest. */
export async function readHead(
  handle: FileHandle,
  max: number,
): Promise<{ bytes: Buffer; complete: boolean }> {
  const buf = Buffer.alloc(max + 1);
  let got = 0;
  while (got < buf.length) {
    const { bytesRead } = await handle.read(buf, got, buf.length - got, got);
    if (bytesRead === 0) break;
    got += bytesRead;
  }
  // one byte past `max` tells a file of exactly `max` bytes from a longer one
  return { bytes: buf.subarray(0, Math.min(got, max)), complete: got <= max };
}

function startsWith(bytes: Uint8Array, prefix: Uint8Array): boolean {
  return bytes.length >= prefix.length && prefix.every((b, i) => bytes[i] === b);
}

function codePoint(point: number): string {
  return `U+${point.toString(16).toUpperCase().padStart(4, '0')}`;
}
