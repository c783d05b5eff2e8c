/**
 * Expired items leave the database for `KEEL_HOME/memory-archive/YYYY-MM-DD.jsonl` (the day they were
 * archived), one exported item a line: moved, never silently lost. The line is on disk before the row goes.
 */
import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { MemoryItem } from './items.js';

const DAY_FILE = /^\d{4}-\d{2}-\d{2}\.jsonl$/;

/** The archive folder inside keel's state folder. */
export function archiveDir(stateDir: string): string {
  return join(stateDir, 'memory-archive');
}

/** Append items to today's archive file; the name comes from the date alone, never from an item. */
export function archiveItems(dir: string, items: MemoryItem[], now: Date): void {
  if (!items.length) return;
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const file = join(dir, `${now.toISOString().slice(0, 10)}.jsonl`);
  appendFileSync(
    file,
    items.map((i) => `${JSON.stringify({ ...i, archived_at: now.toISOString() })}\n`).join(''),
    {
      mode: 0o600,
    },
  );
}

/** How many items of `project` the archive holds. */
export function countArchived(dir: string, project: string): number {
  if (!existsSync(dir)) return 0;
  let n = 0;
  for (const name of readdirSync(dir).filter((f) => DAY_FILE.test(f))) {
    for (const line of readFileSync(join(dir, name), 'utf8').split('\n')) {
      if (!line) continue;
      try {
        if ((JSON.parse(line) as { project?: unknown }).project === project) n++;
      } catch {
        // a torn last line from a crash: not an item
      }
    }
  }
  return n;
}
