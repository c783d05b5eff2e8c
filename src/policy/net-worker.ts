/** The worker thread's entry: prepare a session's safety net (src/policy/prepare-net.ts) and post it. */
import { parentPort, workerData } from 'node:worker_threads';
import { pinWorkspace } from './git-runner.js';
import { type PreparedNet, prepareSafetyNet } from './safety-net.js';

export interface NetWorkerInput {
  root: string;
  sessionId: string;
  /** A later run snapshots again (SafetyNetOptions.everyRun). */
  everyRun?: boolean;
}

export type NetWorkerMessage = { type: 'done'; prepared: PreparedNet } | { type: 'error'; message: string };

const input = workerData as NetWorkerInput;
const post = (message: NetWorkerMessage) => parentPort?.postMessage(message);
// the same pin as the session's: git runs only against the repository found from the workspace root
pinWorkspace(input.root);
try {
  post({ type: 'done', prepared: prepareSafetyNet(input) });
} catch (err) {
  post({ type: 'error', message: (err as Error).message });
}
