/**
 * The log of a fix or loop run: one session row of its own, the parent of the sessions it starts.
 * Its events (the baseline, each attempt, the verdict) go through the same recorder as a session's:
 * into the event log and, for those that decide something, into the audit chain.
 */
import { openRuntime, type Runtime } from '../agent/runtime.js';
import { newSessionId } from '../agent/session.js';
import type { KeelPaths } from '../config/paths.js';
import type { Config } from '../config/schema.js';
import { appendAudited } from '../store/audit-entries.js';
import type { EventLog } from '../store/event-log.js';

export interface RunLog {
  runId: string;
  /** The runtime the run's sessions start in (the caller's, or one opened for the run). */
  runtime: Runtime;
  paths: KeelPaths;
  log: EventLog;
  /** Append one of the run's own events (fix_baseline, loop_round, ...). */
  record(type: string, data: Record<string, unknown>): void;
  /** Close the runtime if the run opened it; a caller's runtime stays open. */
  close(): void;
}

/** Record the run's session row (mode `fix` or `loop`) in `runtime`, or in one opened for the run. */
export function openRunLog(opts: {
  env: NodeJS.ProcessEnv;
  /** A runtime to run in (keel serve's); default: one opened now and closed with the run. */
  runtime?: Runtime;
  mode: 'fix' | 'loop';
  cwd: string;
  config: Config;
  prompt: string;
  /** The run's id when the caller must know it before the run ends (keel serve answers with it). */
  runId?: string;
  /** The run's log exists already (a killed run resumed): it goes on, with a fix_resume event. */
  resume?: boolean;
}): RunLog {
  const runtime = opts.runtime ?? openRuntime(opts.env);
  const { paths, log, audit } = runtime;
  const runId = opts.runId ?? newSessionId();
  const record = (type: string, data: Record<string, unknown>) =>
    appendAudited(log, audit, runId, type, data);
  if (opts.resume) {
    log.reopenSession(runId);
    // `keel runs prune` leaves a run alone while its newest process lives
    record('fix_resume', { pid: process.pid });
  } else {
    log.createSession({
      id: runId,
      mode: opts.mode,
      cwd: opts.cwd,
      provider: opts.config.provider,
      model: opts.config.model || 'scripted',
      prompt: opts.prompt,
    });
    record('run_start', {
      mode: opts.mode,
      cwd: opts.cwd,
      provider: opts.config.provider,
      model: opts.config.model,
      // `keel runs prune` leaves a run alone while its process lives
      pid: process.pid,
    });
  }
  return {
    runId,
    runtime,
    paths,
    log,
    record,
    close: () => {
      if (!opts.runtime) runtime.close();
    },
  };
}
