/** Run the indexer in a worker thread: the session (or the CLI) stays responsive while a large repository is parsed. */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { IndexSummary } from './index.js';
import type { WorkerInput, WorkerMessage } from './worker.js';

/** An index run that did not finish: the worker failed, or the time cap or a signal stopped it. */
export class IndexError extends Error {
  override name = 'IndexError';
  constructor(
    message: string,
    readonly reason: 'failed' | 'timeout' | 'aborted',
  ) {
    super(message);
  }
}

/**
 * The worker's entry file: beside this module when compiled by tsc, at the bundle's top when bundled,
 * and the built one when tests run the sources (a worker thread cannot load TypeScript).
 */
function workerFile(): string {
  const candidates = [
    './worker.js',
    '../graph-worker.js',
    './graph-worker.js',
    '../../dist/graph/worker.js',
  ].map((p) => fileURLToPath(new URL(p, import.meta.url)));
  const found = candidates.find((p) => existsSync(p));
  if (!found)
    throw new IndexError(`the graph worker is missing (looked for ${candidates.join(', ')})`, 'failed');
  return found;
}

export interface RunIndexOptions {
  onProgress?(done: number, total: number): void;
  signal?: AbortSignal;
  /** Stop the worker after this long (what was written so far stays: the next run goes on from it). */
  timeoutMs?: number;
}

/** Index `root` into the database at `dbPath` in a worker thread. */
export function runIndexWorker(
  dbPath: string,
  root: string,
  opts: RunIndexOptions = {},
): Promise<IndexSummary> {
  const input: WorkerInput = { dbPath, root };
  const worker = new Worker(workerFile(), { workerData: input });
  return new Promise<IndexSummary>((resolve, reject) => {
    let settled = false;
    const finish = (fn: () => void) => {
      if (settled) return;
      settled = true;
      if (timer) clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onAbort);
      fn();
    };
    const stop = (reason: 'timeout' | 'aborted', message: string) =>
      finish(() => {
        void worker.terminate();
        reject(new IndexError(message, reason));
      });
    const onAbort = () => stop('aborted', 'indexing was interrupted');
    const timer =
      opts.timeoutMs !== undefined
        ? setTimeout(() => stop('timeout', `indexing took longer than ${opts.timeoutMs} ms`), opts.timeoutMs)
        : undefined;
    if (opts.signal?.aborted) return onAbort();
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    worker.on('message', (message: WorkerMessage) => {
      if (message.type === 'progress') opts.onProgress?.(message.done, message.total);
      else if (message.type === 'done') finish(() => resolve(message.summary));
      else finish(() => reject(new IndexError(message.message, 'failed')));
    });
    worker.on('error', (err) => finish(() => reject(new IndexError(err.message, 'failed'))));
    worker.on('exit', (code) =>
      finish(() => reject(new IndexError(`the graph worker exited (${code}) before it finished`, 'failed'))),
    );
  });
}
