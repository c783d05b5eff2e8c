/** A unified diff of one file's change, for people: shown before a write is approved and after it lands. */
import { structuredPatch } from 'diff';

/** Past this many lines a diff is cut (the rest is counted, not shown): enough to judge a change. */
export const MAX_DIFF_SHOWN = 400;

/**
 * `--- a/path` / `+++ b/path` and its hunks with 3 lines of context; empty when nothing changed. A new
 * file is diffed against /dev/null. Texts are compared as decoded text, line endings included.
 */
export function unifiedDiff(
  path: string,
  before: string | null,
  after: string,
  maxLines = MAX_DIFF_SHOWN,
): string {
  if (before === after) return '';
  const patch = structuredPatch(path, path, before ?? '', after, '', '', { context: 3 });
  const lines = [before === null ? '--- /dev/null' : `--- a/${path}`, `+++ b/${path}`];
  let cut = 0;
  for (const hunk of patch.hunks) {
    const body = [
      // an empty side starts at the line before it, as diff(1) writes it (`@@ -0,0 +1,2 @@`)
      `@@ -${hunk.oldLines ? hunk.oldStart : hunk.oldStart - 1},${hunk.oldLines} +${hunk.newLines ? hunk.newStart : hunk.newStart - 1},${hunk.newLines} @@`,
      ...hunk.lines.filter((l) => !l.startsWith('\\')),
    ];
    for (const line of body) {
      if (lines.length >= maxLines) cut++;
      else lines.push(line);
    }
  }
  if (cut) lines.push(`… ${cut} more diff lines not shown`);
  return lines.join('\n');
}
