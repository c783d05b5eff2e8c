/**
 * `keel build` runs the server started (`POST /v1/build`). The written tests wait as the run's pending
 * question, in the shape a session's approvals take (pending_approvals, answered by id over HTTP with
 * the person's token); no answer within the server's approval timeout is a no, and a no builds nothing.
 * What a build is before its fix run starts (writing tests, waiting, rejected) is known here, in this
 * process; from then on the fix run's own log says the rest.
 */
import { realpathSync } from 'node:fs';
import type { SessionEvent } from '../agent/events.js';
import type { Runtime } from '../agent/runtime.js';
import { newSessionId } from '../agent/session.js';
import type { LoadedConfig } from '../config/load.js';
import { type BuildResult, runBuild } from '../fix/build.js';
import { appendAudited } from '../store/audit-entries.js';
import type { Approval } from './sessions.js';

export interface BuildStart {
  feature: string;
  testCommand?: string;
  loaded: LoadedConfig;
}

export interface BuildState {
  runId: string;
  feature: string;
  startedAt: string;
  endedAt: string | null;
  /** writing the tests, waiting for the person's answer, building (the fix run), ended. */
  phase: 'writing' | 'waiting' | 'building' | 'ended';
  tests: string[];
  testsSession: string | null;
  pending: { approval: Approval; settle(allow: boolean, reason: string): void } | null;
  result: BuildResult | null;
  /** Why it ended before a result (it could not start). */
  error: string | null;
}

/** The one question a build asks: keel's own id for it, as a session's approvals have one. */
export const TESTS_QUESTION = 'tests';

export class BuildRuns {
  private readonly builds = new Map<string, BuildState>();
  private readonly running = new Map<string, { controller: AbortController; done: Promise<unknown> }>();

  constructor(
    private readonly opts: {
      project: string;
      runtime: Runtime;
      /** Seconds the tests wait for a person before it is a no. */
      approvalTimeoutS: number;
      maxAttempts?: number;
      onEvent?(event: SessionEvent): void;
    },
  ) {}

  start(req: BuildStart): { runId: string; done: Promise<BuildResult> } {
    const runId = newSessionId();
    const controller = new AbortController();
    const state: BuildState = {
      runId,
      feature: req.feature,
      startedAt: new Date().toISOString(),
      endedAt: null,
      phase: 'writing',
      tests: [],
      testsSession: null,
      pending: null,
      result: null,
      error: null,
    };
    this.builds.set(runId, state);
    const done = runBuild({
      repo: realpathSync(this.opts.project),
      feature: req.feature,
      ...(req.testCommand ? { testCommand: req.testCommand } : {}),
      maxAttempts: this.opts.maxAttempts ?? 3,
      loaded: req.loaded,
      env: this.opts.runtime.env,
      runtime: this.opts.runtime,
      runId,
      signal: controller.signal,
      approve: (tests) => this.ask(state, tests, controller.signal),
      ...(this.opts.onEvent ? { onEvent: this.opts.onEvent } : {}),
    })
      .then(
        (result) => {
          state.result = result;
          state.testsSession = result.testsSession;
          return result;
        },
        (err: unknown) => {
          state.error = err instanceof Error ? err.message : String(err);
          throw err;
        },
      )
      .finally(() => {
        state.phase = 'ended';
        state.endedAt = new Date().toISOString();
        this.running.delete(runId);
      });
    this.running.set(runId, { controller, done: done.catch(() => {}) });
    return { runId, done };
  }

  /** The build `runId` this server started, or undefined. */
  get(runId: string): BuildState | undefined {
    return this.builds.get(runId);
  }

  /** Every build this server started, newest first. */
  list(): BuildState[] {
    return [...this.builds.values()].reverse();
  }

  isRunning(runId: string): boolean {
    return this.running.has(runId);
  }

  /** The person's answer to a build's waiting question: false when that question does not wait. */
  answer(runId: string, questionId: string, decision: 'allow' | 'deny', reason?: string): boolean {
    const pending = this.builds.get(runId)?.pending;
    if (!pending || pending.approval.id !== questionId) return false;
    pending.settle(
      decision === 'allow',
      decision === 'allow'
        ? 'approved through keel serve'
        : `the tests were not approved; nothing built${reason ? `: ${reason}` : ''}`,
    );
    return true;
  }

  async close(): Promise<void> {
    const runs = [...this.running.values()];
    for (const run of runs) run.controller.abort(new Error('the server stopped'));
    await Promise.all(runs.map((run) => run.done));
  }

  /** The tests as the run's pending question, until a person answers, the timeout passes, or the run stops. */
  private ask(
    state: BuildState,
    tests: { files: string[]; patch: string; session: string },
    signal: AbortSignal,
  ): Promise<{ approved: boolean; reason: string }> {
    state.tests = tests.files;
    state.testsSession = tests.session;
    state.phase = 'waiting';
    if (signal.aborted)
      return Promise.resolve({ approved: false, reason: 'the build was cancelled; nothing built' });
    return new Promise((resolve) => {
      const approval: Approval = {
        id: TESTS_QUESTION,
        call_id: TESTS_QUESTION,
        tool: 'keel build',
        args: { files: tests.files },
        question: `the acceptance tests the feature will be built against (${tests.files.join(', ')}); approved, they are frozen`,
        diff: tests.patch,
        agent: null,
      };
      const settle = (allow: boolean, reason: string) => {
        if (!state.pending) return;
        state.pending = null;
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        // the answer is in the log (and the audit chain), with the session that wrote the tests
        appendAudited(this.opts.runtime.log, this.opts.runtime.audit, tests.session, 'gate_decision', {
          call_id: TESTS_QUESTION,
          tool: 'keel build',
          decision: allow ? 'allow' : 'deny',
          reason,
          question_id: TESTS_QUESTION,
          run_id: state.runId,
        });
        state.phase = allow ? 'building' : 'ended';
        resolve({ approved: allow, reason });
      };
      const timer = setTimeout(
        () =>
          settle(
            false,
            `the tests were not approved: no one answered within ${this.opts.approvalTimeoutS} s; nothing built`,
          ),
        this.opts.approvalTimeoutS * 1000,
      );
      const onAbort = () =>
        settle(false, 'the tests were not approved: the build was cancelled; nothing built');
      signal.addEventListener('abort', onAbort, { once: true });
      state.pending = { approval, settle };
    });
  }
}
