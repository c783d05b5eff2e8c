/**
 * `@path` mentions: the file's content is attached to the message; an image (`@shot.png`, jpg, gif,
 * webp) goes as a picture, for a model that reads them (agent/images.ts checks and reads it). Only
 * files inside the workspace qualify, checked on the canonical path, so `@../x`, an absolute path
 * elsewhere, or a link that leads out are refused: a mention is typed by a person, but a path can
 * come from a pasted, hostile text.
 */
import { closeSync, constants, fstatSync, openSync, readSync, realpathSync } from 'node:fs';
import { isAbsolute, relative, resolve } from 'node:path';
import { ImageError, isImageName, readImage } from '../agent/images.js';
import type { ImageAttachment } from '../model/types.js';
import { isInside } from '../policy/scope.js';

const MAX_BYTES = 100 * 1024;

export interface Attached {
  /** The message to send: the text as typed, then each attached file. */
  text: string;
  files: string[];
  /** Pictures to send with the message, bytes included. */
  images: ImageAttachment[];
}

/** A mention that may not be attached; the message is not sent. */
export class MentionError extends Error {
  override name = 'MentionError';
}

// `@` at the start or after white space; the path runs to the next white space (trailing punctuation
// dropped), or is quoted when it holds a space (`@"my notes.md"`, as the file picker writes it)
const MENTION = /(?:^|\s)@(?:"([^"\n]+)"|([^\s]+))/g;

/** Attach the files the message mentions; a word after `@` that names no file stays plain text. */
export function attachMentions(text: string, workspace: string): Attached {
  const root = realpathSync(workspace);
  const files: string[] = [];
  const parts: string[] = [];
  const images: ImageAttachment[] = [];
  for (const match of text.matchAll(MENTION)) {
    const word = match[1] ?? (match[2] ?? '').replace(/[,.;:!?)]+$/, '');
    if (!word) continue;
    const given = resolve(root, word);
    let real: string;
    try {
      real = realpathSync(given);
    } catch {
      // nothing there: an e-mail handle, a decorator, a name; only an outside path is worth a refusal
      if (!isInside(given, root)) throw new MentionError(`@${word} is outside the workspace ${root}`);
      continue;
    }
    if (!isInside(real, root))
      throw new MentionError(
        isInside(given, root)
          ? `@${word} is a link that leads outside the workspace (to ${real}); not attached`
          : `@${word} is outside the workspace ${root}`,
      );
    const shown = relative(root, real) || '.';
    if (isImageName(real)) {
      if (images.some((i) => i.path === shown)) continue;
      try {
        images.push(readImage(root, shown));
      } catch (err) {
        throw err instanceof ImageError ? new MentionError(err.message) : err;
      }
      continue;
    }
    if (files.includes(shown)) continue;
    parts.push(readAttachment(real, shown));
    files.push(shown);
  }
  if (!files.length) return { text, files, images };
  return { text: `${text}\n\n${parts.join('\n\n')}`, files, images };
}

function readAttachment(path: string, shown: string): string {
  // one open, then checks on that open file: the path cannot be swapped for a link between check and read
  const fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) throw new MentionError(`@${shown} is not a file`);
    const size = Math.min(stat.size, MAX_BYTES);
    const buf = Buffer.alloc(size);
    const read = readSync(fd, buf, 0, size, 0);
    const body = buf.subarray(0, read);
    if (body.includes(0)) throw new MentionError(`@${shown} is a binary file; not attached`);
    const cut = stat.size > MAX_BYTES ? `\n[... cut at ${MAX_BYTES} bytes of ${stat.size}]` : '';
    return `<file path="${shown}">\n${body.toString('utf8')}${cut}\n</file>`;
  } finally {
    closeSync(fd);
  }
}

/** Whether a word looks like a path (a slash or a dot in it): `/src/app.ts` is a message, not a command. */
export function looksLikePath(word: string): boolean {
  return word.includes('/') || word.includes('.') || isAbsolute(word);
}
