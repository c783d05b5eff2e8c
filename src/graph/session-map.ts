/** The repo map a session starts with: index (incrementally, time-capped), rank for the task, fit the budget. */
import { openDb } from '../store/db.js';
import { buildRepoMap } from './map.js';
import { IndexError, runIndexWorker } from './run-index.js';
import { sourceFiles } from './source-files.js';
import { GraphStore } from './store.js';

/** Up to this many indexed files, a session refreshes the index in its own thread (unchanged files cost a hash). */
const IN_PROCESS_FILES = 300;

/** How long a session waits for the index before it starts without a map. */
export const MAP_INDEX_TIMEOUT_MS = 3000;

/** What a session records about its map (the shape of agent/'s repo_map events; graph/ never imports agent/). */
export type RepoMapEvent =
  | { type: 'repo_map'; text: string; tokens: number; files: string[] }
  | { type: 'repo_map_skipped'; reason: string };

/** The event to record at session start: the map, or why there is none; undefined when maps are off. */
export async function sessionRepoMap(opts: {
  dbPath: string;
  root: string;
  task: string;
  budget: number;
  signal: AbortSignal;
  timeoutMs?: number;
  /** Files done of total, when the index runs in a worker (a first index, or more than IN_PROCESS_FILES files). */
  onLargeIndex?(done: number, total: number): void;
  /**
   * With this, a workspace's first index (no index yet) is not waited for: it runs in its worker thread while
   * the session goes on (the first request leaves without a map), and its promise is handed here for the
   * session to await before it ends. Without it, the first index is waited for, up to the time cap.
   */
  background?(indexing: Promise<void>): void;
}): Promise<RepoMapEvent | undefined> {
  if (opts.budget <= 0 || !opts.task) return undefined;
  let symbols = 0;
  // a first index of a few files is over before anyone could read about it
  const progress = opts.onLargeIndex
    ? {
        onProgress: (done: number, total: number) =>
          total > IN_PROCESS_FILES && opts.onLargeIndex?.(done, total),
      }
    : {};
  try {
    const db = openDb(opts.dbPath);
    let known: number;
    try {
      known = new GraphStore(db, opts.root).counts().files;
      // a workspace with no source the graph reads has no map: found out without starting a worker
      if (known === 0 && (await sourceFiles(opts.root, opts.signal)).files.length === 0) return undefined;
      // a small index already built is brought up to date in-process: a worker costs more than the work
      // (the indexer and its parser load only then: a workspace with no source never loads tree-sitter)
      if (known > 0 && known <= IN_PROCESS_FILES)
        ({ symbols } = await (await import('./index.js')).indexWorkspace(db, opts.root, opts));
    } finally {
      db.close();
    }
    if (known === 0 && opts.background) {
      opts.background(
        runIndexWorker(opts.dbPath, opts.root, {
          signal: opts.signal,
          timeoutMs: opts.timeoutMs ?? MAP_INDEX_TIMEOUT_MS,
          ...progress,
        }).then(
          () => undefined,
          () => undefined, // a first index cut short keeps what it wrote; the next session goes on from there
        ),
      );
      return {
        type: 'repo_map_skipped',
        reason:
          'the first index of this workspace is built while the session runs; later sessions start with a map',
      };
    }
    if (known === 0 || known > IN_PROCESS_FILES)
      ({ symbols } = await runIndexWorker(opts.dbPath, opts.root, {
        signal: opts.signal,
        timeoutMs: opts.timeoutMs ?? MAP_INDEX_TIMEOUT_MS,
        ...progress,
      }));
  } catch (err) {
    if (opts.signal.aborted) return { type: 'repo_map_skipped', reason: 'indexing was interrupted' };
    if (!(err instanceof IndexError)) throw err;
    // a cancelled session ends on its own; the index written so far stays for the next one
    return { type: 'repo_map_skipped', reason: err.message };
  }
  // a workspace with no source the graph reads has no map to send, and nothing to note
  if (symbols === 0) return undefined;
  const db = openDb(opts.dbPath);
  try {
    const map = await buildRepoMap(db, opts.root, opts.task, opts.budget);
    if (!map) return { type: 'repo_map_skipped', reason: `no definitions fit in ${opts.budget} tokens` };
    return { type: 'repo_map', text: map.text, tokens: map.tokens, files: map.files };
  } finally {
    db.close();
  }
}
