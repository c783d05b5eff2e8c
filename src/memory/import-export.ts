/**
 * Export and import as JSONL, one item a line. Import validates every line before it adds any, and names
 * the first bad line. An imported item lands in the project imported into: its id, project and hash are
 * the file's claims and are never used (fresh ids, the hash recomputed), so a file cannot aim a write anywhere.
 */
import * as z from 'zod';
import { AUTHORS, KINDS, type MemoryItem } from './items.js';
import type { AddInput, Memory } from './memory.js';

const lineSchema = z.strictObject({
  id: z.string().optional(),
  project: z.string().optional(),
  hash: z.string().optional(),
  kind: z.enum(KINDS),
  text: z.string().min(1).max(10_000),
  tags: z.array(z.string().max(100)).max(50).default([]),
  session_id: z.string().max(100).nullable().optional(),
  author: z.enum(AUTHORS),
  created_at: z.iso.datetime().optional(),
  updated_at: z.iso.datetime().optional(),
  expires_at: z.iso.datetime().nullable().optional(),
  archived_at: z.iso.datetime().optional(),
  // where an item was shared from: a claim, never used (an import is the importing person's own act)
  origin: z.string().max(5000).nullable().optional(),
});

/** A line of an import that is not an item; `line` is 1-based. */
export class ImportError extends Error {
  override name = 'ImportError';
  constructor(
    message: string,
    readonly line: number,
  ) {
    super(message);
  }
}

/** The export of items: one JSON object a line. */
export function exportLines(items: MemoryItem[]): string {
  return items.map((i) => `${JSON.stringify(i)}\n`).join('');
}

/** Parse and validate every line of an export (blank lines skipped); throws ImportError naming the first bad one. */
export function parseImport(text: string, source: string): AddInput[] {
  const out: AddInput[] = [];
  text.split('\n').forEach((raw, index) => {
    const line = index + 1;
    if (!raw.trim()) return;
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch (err) {
      throw new ImportError(`${source} line ${line} is not JSON: ${(err as Error).message}`, line);
    }
    const parsed = lineSchema.safeParse(value);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const where = issue?.path.length ? `${issue.path.join('.')}: ` : '';
      throw new ImportError(
        `${source} line ${line} is not a memory item: ${where}${issue?.message ?? 'bad shape'}`,
        line,
      );
    }
    const item = parsed.data;
    out.push({
      kind: item.kind,
      text: item.text,
      tags: item.tags,
      author: item.author,
      sessionId: item.session_id ?? null,
      ...(item.created_at ? { createdAt: item.created_at } : {}),
    });
  });
  return out;
}

/** Add parsed items; returns how many were new and how many folded into items already there. */
export async function importItems(
  memory: Memory,
  items: AddInput[],
): Promise<{ imported: number; folded: number }> {
  let imported = 0;
  let folded = 0;
  for (const item of items) {
    const r = await memory.add(item);
    if (r.folded) folded++;
    else imported++;
  }
  return { imported, folded };
}
