/** The worker thread's entry: index one workspace into keel.db, posting progress, then the summary. */
import { parentPort, workerData } from 'node:worker_threads';
import { openDb } from '../store/db.js';
import { indexWorkspace } from './index.js';

export interface WorkerInput {
  dbPath: string;
  root: string;
}

export type WorkerMessage =
  | { type: 'progress'; done: number; total: number }
  | { type: 'done'; summary: import('./index.js').IndexSummary }
  | { type: 'error'; message: string };

const { dbPath, root } = workerData as WorkerInput;
const post = (message: WorkerMessage) => parentPort?.postMessage(message);
const db = openDb(dbPath);
try {
  const summary = await indexWorkspace(db, root, {
    onProgress: (done, total) => post({ type: 'progress', done, total }),
  });
  post({ type: 'done', summary });
} catch (err) {
  post({ type: 'error', message: (err as Error).message });
} finally {
  db.close();
}
