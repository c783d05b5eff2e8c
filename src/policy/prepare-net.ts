/**
 * A session's safety net, prepared in a worker thread as the session starts: the snapshot's git processes
 * (about nine) then run while the model thinks, not between its answer and the first write. A worker that
 * fails or cannot start leaves the first write to take the snapshot itself, as it would without this.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { NetWorkerInput, NetWorkerMessage } from './net-worker.js';
import type { PreparedNet } from './safety-net.js';

/** Beside this module when compiled by tsc, at the bundle's top when bundled, the built one under tests. */
function workerFile(): string | undefined {
  return ['./net-worker.js', '../net-worker.js', '../../dist/policy/net-worker.js']
    .map((p) => fileURLToPath(new URL(p, import.meta.url)))
    .find((p) => existsSync(p));
}

/** The prepared net, or undefined when the worker could not do it (the first write then does it all). */
export function prepareNetInWorker(input: NetWorkerInput): Promise<PreparedNet | undefined> {
  const file = workerFile();
  if (!file) return Promise.resolve(undefined);
  return new Promise((resolve) => {
    let worker: Worker;
    try {
      worker = new Worker(file, { workerData: input });
    } catch {
      resolve(undefined);
      return;
    }
    let settled = false;
    const finish = (prepared: PreparedNet | undefined) => {
      if (settled) return;
      settled = true;
      resolve(prepared);
    };
    worker.on('message', (message: NetWorkerMessage) =>
      finish(message.type === 'done' ? message.prepared : undefined),
    );
    worker.on('error', () => finish(undefined));
    worker.on('exit', () => finish(undefined));
  });
}
