/** Writing a file change safely (atomic replace) and measuring it in lines, shared by edit_file and write_file. */
import { createHash, randomBytes } from 'node:crypto';
import { constants, readFileSync } from 'node:fs';
import { open, rename, unlink } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import { HeldDir } from '../policy/held-path.js';

const { O_CREAT, O_EXCL, O_NOFOLLOW, O_WRONLY } = constants;

/**
 * Replace `path` (absolute and canonical, as the scope returned it) with `content` atomically: write a temp
 * file in the same folder, flush it, rename it over the target, so a crash or a concurrent reader never
 * sees half a file. The folder is held (see held-path.ts) and the temp file and the rename are made in it,
 * so a folder on the way swapped for a symlink cannot send the write outside the scope. `makeParents`
 * creates missing folders, each in its held parent. A string is written as UTF-8; callers that keep a
 * file's own encoding pass the encoded bytes.
 */
export async function writeAtomic(
  path: string,
  content: string | Uint8Array,
  mode = 0o644,
  makeParents = false,
): Promise<void> {
  const name = basename(path);
  const dir = HeldDir.walk(dirname(path), makeParents);
  const temp = `.${name}.keel-${randomBytes(4).toString('hex')}.tmp`;
  try {
    const handle = await open(dir.at(temp), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode);
    try {
      await (typeof content === 'string' ? handle.writeFile(content, 'utf8') : handle.writeFile(content));
      // the temp file gets `mode` minus the umask at creation; chmod makes an existing file keep its bits
      await handle.chmod(mode);
      await handle.sync();
    } finally {
      await handle.close();
    }
    // renames the entry itself: a symlink put at `name` meanwhile is replaced, never followed
    await rename(dir.at(temp), dir.at(name));
  } catch (err) {
    await unlink(dir.at(temp)).catch(() => undefined);
    throw dir.named(dir.named(err, temp), name);
  } finally {
    dir.close();
  }
}

export interface LineDiff {
  added: number;
  removed: number;
}

/**
 * Count lines added and removed between two texts: common head and tail are trimmed, then the middle
 * is compared as multisets. Cheap and exact for ordinary edits; a moved line counts as unchanged.
 * Both texts must be decoded the same way (the file's own encoding, BOM left out), or untouched lines
 * would count as changed.
 */
export function countDiffLines(before: string, after: string): LineDiff {
  if (before === after) return { added: 0, removed: 0 };
  const a = splitLines(before);
  const b = splitLines(after);
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let endA = a.length;
  let endB = b.length;
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) {
    endA--;
    endB--;
  }
  const pending = new Map<string, number>();
  for (let i = start; i < endA; i++) {
    const line = a[i] ?? '';
    pending.set(line, (pending.get(line) ?? 0) + 1);
  }
  let added = 0;
  for (let i = start; i < endB; i++) {
    const line = b[i] ?? '';
    const left = pending.get(line) ?? 0;
    if (left > 0) pending.set(line, left - 1);
    else added++;
  }
  let removed = 0;
  for (const left of pending.values()) removed += left;
  return { added, removed };
}

// A final newline ends the last line; it does not start another one
function splitLines(text: string): string[] {
  if (text === '') return [];
  const lines = text.split('\n');
  if (text.endsWith('\n')) lines.pop();
  return lines;
}

/** The sha256 of bytes, hex: how a write's intent names a file's content. */
export function sha256(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/**
 * The sha256 of the file at `path` (absolute, canonical) as it is now, or null when nothing is there. A
 * folder or other non-file is named, not hashed: it is neither a write's before nor its after.
 */
export function fileSha256(path: string): string | null {
  try {
    return sha256(readFileSync(path));
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return null;
    if (code === 'EISDIR') return 'not-a-file';
    throw err;
  }
}
