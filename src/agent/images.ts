/**
 * Images a person attaches to a message (`@screenshot.png` in chat): read from inside the workspace
 * only, bounded in size, and checked to be the format their name says. The log keeps each one by
 * path, hash and size, never its bytes; a request re-reads the file and sends it only while its hash
 * still matches, so a resumed session sends the same picture or says it cannot.
 */
import { createHash } from 'node:crypto';
import { closeSync, constants, fstatSync, openSync, readSync, realpathSync } from 'node:fs';
import { extname, relative, resolve } from 'node:path';
import type { ChatMessage, ImageAttachment } from '../model/types.js';
import { isInside } from '../policy/scope.js';

/** The largest image keel attaches: checked on the open file before it is read. */
export const MAX_IMAGE_BYTES = 10 * 1024 * 1024;

/** Formats by file name, each with the bytes its files start with. */
const FORMATS: Record<string, { mime: ImageAttachment['mime']; magic: (head: Buffer) => boolean }> = {
  '.png': { mime: 'image/png', magic: (h) => h.subarray(0, 8).equals(PNG) },
  '.jpg': { mime: 'image/jpeg', magic: (h) => h[0] === 0xff && h[1] === 0xd8 && h[2] === 0xff },
  '.jpeg': { mime: 'image/jpeg', magic: (h) => h[0] === 0xff && h[1] === 0xd8 && h[2] === 0xff },
  '.gif': {
    mime: 'image/gif',
    magic: (h) => ['GIF87a', 'GIF89a'].includes(h.subarray(0, 6).toString('latin1')),
  },
  '.webp': {
    mime: 'image/webp',
    magic: (h) =>
      h.subarray(0, 4).toString('latin1') === 'RIFF' && h.subarray(8, 12).toString('latin1') === 'WEBP',
  },
};
const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** An image that may not be attached (or sent again): what and where, in words. */
export class ImageError extends Error {
  override name = 'ImageError';
}

/** Whether a name is one of the image formats keel attaches (by its extension). */
export function isImageName(name: string): boolean {
  return extname(name).toLowerCase() in FORMATS;
}

/**
 * Read the image at `path` (relative to the workspace `root`, or absolute inside it): one open with
 * O_NOFOLLOW and O_NONBLOCK (a FIFO named x.png does not hang the chat), then every check on that
 * open file, so the path cannot be swapped between check and read.
 */
export function readImage(root: string, path: string): Required<ImageAttachment> {
  const canonicalRoot = realpathSync(root);
  const given = resolve(canonicalRoot, path);
  const format = FORMATS[extname(given).toLowerCase()];
  if (!format) throw new ImageError(`@${path} is not an image keel attaches (png, jpg, jpeg, gif, webp)`);
  if (!isInside(given, canonicalRoot))
    throw new ImageError(`@${path} is outside the workspace ${canonicalRoot}`);
  let real: string;
  try {
    real = realpathSync(given);
  } catch {
    throw new ImageError(`@${path}: no such file in the workspace`);
  }
  if (!isInside(real, canonicalRoot))
    throw new ImageError(`@${path} is a link that leads outside the workspace (to ${real}); not attached`);
  const shown = relative(canonicalRoot, real);
  let fd: number;
  try {
    fd = openSync(real, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    throw new ImageError(`@${shown} could not be opened: ${(err as NodeJS.ErrnoException).code ?? err}`);
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) throw new ImageError(`@${shown} is not a file`);
    if (stat.size > MAX_IMAGE_BYTES)
      throw new ImageError(
        `@${shown} is ${mib(stat.size)}, over the ${mib(MAX_IMAGE_BYTES)} an image may be; not attached`,
      );
    const bytes = Buffer.alloc(stat.size);
    let read = 0;
    while (read < stat.size) {
      const n = readSync(fd, bytes, read, stat.size - read, read);
      if (n === 0) break;
      read += n;
    }
    const body = bytes.subarray(0, read);
    if (!format.magic(body))
      throw new ImageError(
        `@${shown} is not a ${format.mime.slice(6)} image (its first bytes say otherwise); not attached`,
      );
    return {
      path: shown,
      mime: format.mime,
      bytes: body.length,
      sha256: createHash('sha256').update(body).digest('hex'),
      data: body.toString('base64'),
    };
  } finally {
    closeSync(fd);
  }
}

/** What the log keeps of an image: everything but its bytes. */
export function imageRef(image: ImageAttachment): ImageAttachment {
  const { data: _bytes, ...ref } = image;
  return ref;
}

/** Bytes read this run, by hash, and the images already said to be missing. */
export interface ImageCache {
  data: Map<string, string>;
  told: Set<string>;
}

export function imageCache(seed: ImageAttachment[] = []): ImageCache {
  const data = new Map<string, string>();
  for (const image of seed) if (image.data !== undefined) data.set(image.sha256, image.data);
  return { data, told: new Set() };
}

/**
 * The messages a request sends: each image of the history with its bytes, read again from the
 * workspace (or from `cache`, by hash). An image whose file is gone or changed since it was attached
 * is not sent; the message says so in its text instead, and `onMissing` is told once per image.
 */
export function withImages(
  messages: ChatMessage[],
  root: string,
  cache: ImageCache,
  onMissing?: (image: ImageAttachment, why: string) => void,
): ChatMessage[] {
  if (!messages.some((m) => m.role === 'user' && m.images?.length)) return messages;
  return messages.map((m) => {
    if (m.role !== 'user' || !m.images?.length) return m;
    const sent: ImageAttachment[] = [];
    const notes: string[] = [];
    for (const image of m.images) {
      let data = image.data ?? cache.data.get(image.sha256);
      let why: string | undefined;
      if (data === undefined) {
        try {
          const now = readImage(root, image.path);
          if (now.sha256 === image.sha256) data = now.data;
          else
            why = `the file changed since it was attached (sha256 ${image.sha256.slice(0, 12)}…, now ${now.sha256.slice(0, 12)}…)`;
        } catch (err) {
          why = err instanceof ImageError ? err.message : String(err);
        }
        if (data !== undefined) cache.data.set(image.sha256, data);
      }
      if (data !== undefined) sent.push({ ...image, data });
      else {
        const reason = why ?? 'it could not be read';
        notes.push(`[image ${image.path} was attached here but is not sent again: ${reason}]`);
        if (!cache.told.has(image.sha256)) {
          cache.told.add(image.sha256);
          onMissing?.(image, reason);
        }
      }
    }
    const content = notes.length ? `${m.content}\n\n${notes.join('\n')}` : m.content;
    return { role: 'user', content, ...(sent.length ? { images: sent } : {}) };
  });
}

function mib(n: number): string {
  return `${(n / (1024 * 1024)).toFixed(1)} MiB`;
}
