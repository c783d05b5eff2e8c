/**
 * Fix runs the server started, in its own process: `POST /v1/fix` and the A2A fix skill both start
 * them here, so `/v1/runs` shows either as running until its verdict. Each has its own controller;
 * a server that stops cancels them.
 */
import { realpathSync } from 'node:fs';
import type { SessionEvent } from '../agent/events.js';
import type { Runtime } from '../agent/runtime.js';
import { newSessionId } from '../agent/session.js';
import type { LoadedConfig } from '../config/load.js';
import { type FixResult, runFix } from '../fix/run.js';
import { appendAudited } from '../store/audit-entries.js';
import { BuildRuns } from './builds.js';

export interface FixStart {
  task: string;
  testCommand?: string;
  loaded: LoadedConfig;
  /** Cancels the run (with the server's own cancel). */
  signal?: AbortSignal;
  onEvent?(event: SessionEvent): void;
}

export class FixRuns {
  private readonly running = new Map<string, { controller: AbortController; done: Promise<unknown> }>();
  /** `keel build` runs (`POST /v1/build`): each ends in a fix run of the same id once its tests are approved. */
  readonly builds: BuildRuns;

  constructor(
    private readonly opts: {
      project: string;
      /** The server's runtime: each run's sessions start in it. */
      runtime: Runtime;
      maxAttempts?: number;
      /** Seconds a build's tests wait for a person before it is a no (keel serve --approval-timeout). */
      approvalTimeoutS?: number;
      onEvent?(event: SessionEvent): void;
    },
  ) {
    this.builds = new BuildRuns({
      project: opts.project,
      runtime: opts.runtime,
      approvalTimeoutS: opts.approvalTimeoutS ?? 600,
      ...(opts.maxAttempts ? { maxAttempts: opts.maxAttempts } : {}),
      ...(opts.onEvent ? { onEvent: opts.onEvent } : {}),
    });
  }

  /** Start a run; its id is known at once, its result when `done` resolves (or rejects, before attempt one). */
  start(req: FixStart): { runId: string; done: Promise<FixResult> } {
    const runId = newSessionId();
    const controller = new AbortController();
    const onAbort = () => controller.abort(req.signal?.reason);
    req.signal?.addEventListener('abort', onAbort, { once: true });
    const done = runFix({
      repo: realpathSync(this.opts.project),
      issue: req.task,
      targetTests: [],
      ...(req.testCommand ? { testCommand: req.testCommand } : {}),
      maxAttempts: this.opts.maxAttempts ?? 3,
      loaded: req.loaded,
      env: this.opts.runtime.env,
      runtime: this.opts.runtime,
      signal: controller.signal,
      runId,
      onEvent: (event) => {
        this.opts.onEvent?.(event);
        req.onEvent?.(event);
      },
    }).finally(() => {
      this.running.delete(runId);
      req.signal?.removeEventListener('abort', onAbort);
    });
    this.running.set(runId, { controller, done: done.catch(() => {}) });
    return { runId, done };
  }

  /** Record an event of a run in its log and the audit chain (a verified fix applied from the page). */
  record(runId: string, type: string, data: Record<string, unknown>): void {
    appendAudited(this.opts.runtime.log, this.opts.runtime.audit, runId, type, data);
  }

  isRunning(runId: string): boolean {
    return this.running.has(runId) || this.builds.isRunning(runId);
  }

  /** Cancel every run still going and wait for each to record its end (the server is stopping). */
  async close(): Promise<void> {
    const runs = [...this.running.values()];
    for (const run of runs) run.controller.abort(new Error('the server stopped'));
    await Promise.all([...runs.map((run) => run.done), this.builds.close()]);
  }
}
