/**
 * The workspace's files the code graph reads, apart from the indexer: a session asks whether there are
 * any before it loads the parser (tree-sitter) at all.
 */
import { pinWorkspace } from '../policy/git-runner.js';
import { hasBinaryExtension } from '../tools/binary.js';
import { listFiles } from '../tools/files.js';
import { languageOf } from './queries.js';

// build output and dependencies, whatever the ignore files say
const SKIPPED_DIRS = new Set(['node_modules', '.git', 'dist', 'build', 'target', 'vendor', '__pycache__']);

/** The workspace's files the graph reads: source languages it knows, outside skipped folders. */
export async function sourceFiles(
  root: string,
  signal?: AbortSignal,
): Promise<{ files: string[]; truncated: boolean }> {
  pinWorkspace(root);
  const listing = await listFiles(root, signal ? { signal } : {});
  const files = listing.files.filter(
    (f) =>
      languageOf(f) !== undefined &&
      !hasBinaryExtension(f) &&
      !f.split('/').some((part, i, parts) => i < parts.length - 1 && SKIPPED_DIRS.has(part)),
  );
  return { files, truncated: listing.truncated };
}
