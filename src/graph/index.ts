/**
 * Incremental indexing: list the workspace's files (gitignore respected), reparse only those whose
 * content hash changed, drop the ones that are gone. Runs in-process here; `run-index.ts` runs it in
 * a worker thread so a large repository does not block a session.
 */
import { createHash } from 'node:crypto';
import { lstatSync, readFileSync, realpathSync } from 'node:fs';
import { join, sep } from 'node:path';
import type { Db } from '../store/db.js';
import { looksBinary } from '../tools/binary.js';
import { extract, warmUp } from './extract.js';
import { languageOf } from './queries.js';
import { sourceFiles } from './source-files.js';
import { GraphStore } from './store.js';

/** Files larger than this are generated or vendored code, not worth a parse. */
export const MAX_FILE_BYTES = 1024 * 1024;
const BATCH = 200;

export { sourceFiles } from './source-files.js';

export interface IndexSummary {
  /** Source files in the index now. */
  files: number;
  symbols: number;
  /** Files parsed this time (new or changed). */
  parsed: number;
  removed: number;
  ms: number;
  /** The listing stopped at its cap: some files are not indexed. */
  truncated: boolean;
}

export interface IndexOptions {
  signal?: AbortSignal;
  onProgress?(done: number, total: number): void;
}

/** A file's bytes when it is a regular file inside the root (never through a symlink out), small and text. */
function readSource(root: string, rel: string): Buffer | undefined {
  const abs = join(root, rel);
  try {
    const info = lstatSync(abs);
    if (!info.isFile() || info.size > MAX_FILE_BYTES) return undefined;
    // a folder on the way may be a symlink: the file must really live under the root
    if (!realpathSync.native(abs).startsWith(root + sep)) return undefined;
    const buf = readFileSync(abs);
    return buf.length > MAX_FILE_BYTES || looksBinary(buf) ? undefined : buf;
  } catch {
    return undefined;
  }
}

/** Bring the index of `root` (a canonical folder) up to date with its files. */
export async function indexWorkspace(db: Db, root: string, opts: IndexOptions = {}): Promise<IndexSummary> {
  const started = Date.now();
  const store = new GraphStore(db, root);
  const known = store.hashes();
  // the parser runtime takes hundreds of ms to load: start it beside the listing only when this is a
  // first index (every file will be parsed); a session start with nothing changed never pays for it
  if (known.size === 0) warmUp();
  const { files, truncated } = await sourceFiles(root, opts.signal);
  // the count first, before any file is read: a face can say how much there is to do
  opts.onProgress?.(0, files.length);
  const present = new Set<string>();
  let parsed = 0;
  let pending: Array<() => void> = [];
  const flush = () => {
    const writes = pending;
    pending = [];
    // immediate: a session's event log shares the file, so take the write lock up front and wait for it
    db.transaction(() => {
      for (const write of writes) write();
    }).immediate();
  };
  for (const [i, rel] of files.entries()) {
    opts.signal?.throwIfAborted();
    const language = languageOf(rel);
    const buf = readSource(root, rel);
    if (language && buf) {
      present.add(rel);
      const hash = createHash('sha256').update(buf).digest('hex');
      if (known.get(rel) !== hash) {
        const found = await extract(language, buf.toString('utf8'));
        pending.push(() => store.put(rel, hash, language, found));
        parsed++;
        if (pending.length >= BATCH) flush();
      }
    }
    if (opts.onProgress && (i % 50 === 49 || i === files.length - 1)) opts.onProgress(i + 1, files.length);
  }
  const gone = [...known.keys()].filter((path) => !present.has(path));
  for (const path of gone) pending.push(() => store.remove(path));
  flush();
  return { ...store.counts(), parsed, removed: gone.length, ms: Date.now() - started, truncated };
}
