/**
 * `keel build` runs the server started (`POST /v1/build`). The written tests wait as the run's pending
 * question, in the shape a session's approvals take (pending_approvals, answered by id over HTTP with
 * the person's token); no answer within the server's approval timeout is a no, and a no builds nothing.
 * What a build is before its fix run starts (writing tests, waiting, rejected) is known here, in this
 * process; from then on the fix run's own log says the rest. Until it ends, a build also has a record on disk
 * (KEEL_HOME/builds/RUN.json): a server killed mid-build leaves it, and the next server of the project lists
 * that build as interrupted (nothing built; start it again) instead of losing it, and removes the worktree
 * and branch its tests were written in (the record names them; fix/build-leftovers.ts checks they are a
 * keel tests worktree of this project's repository before anything goes).
 */
import {
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import type { SessionEvent } from '../agent/events.js';
import type { Runtime } from '../agent/runtime.js';
import { newSessionId } from '../agent/session.js';
import type { LoadedConfig } from '../config/load.js';
import { keelPaths } from '../config/paths.js';
import { type BuildResult, runBuild } from '../fix/build.js';
import { discardLeftTests, type TestsSnapshotNames, testsSnapshotNames } from '../fix/build-leftovers.js';
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
  /** The server running it stopped before it ended (a crash, kill -9): read back from its record, with why. */
  interrupted: string | null;
  /** The worktree and branch its tests are written in. */
  testsSnapshot?: TestsSnapshotNames;
}

/** What is on disk of a build not ended yet; `interrupted_at` once a later server found it left over. */
interface BuildRecord {
  run_id: string;
  project: string;
  feature: string;
  started_at: string;
  phase: BuildState['phase'];
  tests: string[];
  tests_session: string | null;
  /** Where its tests are written (named before the worktree is made): what a later server removes. */
  tests_snapshot?: TestsSnapshotNames;
  /** The server running it: a record of a server still alive (another serve of the project) is its own. */
  pid: number;
  interrupted_at?: string;
}

/** The one question a build asks: keel's own id for it, as a session's approvals have one. */
export const TESTS_QUESTION = 'tests';

export class BuildRuns {
  private readonly builds = new Map<string, BuildState>();
  private readonly running = new Map<string, { controller: AbortController; done: Promise<unknown> }>();
  private readonly root: string;
  private readonly recordsDir: string;

  constructor(
    private readonly opts: {
      project: string;
      runtime: Runtime;
      /** Seconds the tests wait for a person before it is a no. */
      approvalTimeoutS: number;
      maxAttempts?: number;
      onEvent?(event: SessionEvent): void;
    },
  ) {
    this.root = realpathSync(opts.project);
    this.recordsDir = join(keelPaths(opts.runtime.env).stateDir, 'builds');
    this.readInterrupted();
  }

  start(req: BuildStart): { runId: string; done: Promise<BuildResult> } {
    const runId = newSessionId();
    const testsId = newSessionId();
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
      interrupted: null,
      testsSnapshot: testsSnapshotNames(req.feature, testsId, this.opts.runtime.paths.worktreesDir),
    };
    this.builds.set(runId, state);
    this.record(state);
    const done = runBuild({
      repo: this.root,
      feature: req.feature,
      ...(req.testCommand ? { testCommand: req.testCommand } : {}),
      maxAttempts: this.opts.maxAttempts ?? 3,
      loaded: req.loaded,
      env: this.opts.runtime.env,
      runtime: this.opts.runtime,
      runId,
      testsId,
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
        // ended here: what it became is in this process and, once its fix run started, in that run's log
        rmSync(this.recordFile(runId), { force: true });
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

  /** How many builds' tests wait for a person's answer now (the page's approvals alert counts them). */
  waiting(): number {
    let n = 0;
    for (const b of this.builds.values()) if (b.pending) n++;
    return n;
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

  private recordFile(runId: string): string {
    return join(this.recordsDir, `${runId}.json`);
  }

  /** Write the build's record (whole, through a rename): what a later server reads if this one dies. */
  private record(state: BuildState, interruptedAt?: string): void {
    const record: BuildRecord = {
      run_id: state.runId,
      project: this.root,
      feature: state.feature,
      started_at: state.startedAt,
      phase: state.phase,
      tests: state.tests,
      tests_session: state.testsSession,
      ...(state.testsSnapshot ? { tests_snapshot: state.testsSnapshot } : {}),
      pid: process.pid,
      ...(interruptedAt ? { interrupted_at: interruptedAt } : {}),
    };
    mkdirSync(this.recordsDir, { recursive: true, mode: 0o700 });
    const file = this.recordFile(state.runId);
    writeFileSync(`${file}.${process.pid}.tmp`, `${JSON.stringify(record)}\n`, { mode: 0o600 });
    renameSync(`${file}.${process.pid}.tmp`, file);
  }

  /**
   * The builds of this project a server before this one left unended (it was killed): each is listed as
   * interrupted, with what it was doing; found the first time, the record says so, so it reads the same later.
   */
  private readInterrupted(): void {
    let names: string[];
    try {
      names = readdirSync(this.recordsDir).filter((n) => n.endsWith('.json'));
    } catch {
      return;
    }
    const found: BuildState[] = [];
    for (const name of names) {
      let r: BuildRecord;
      try {
        r = JSON.parse(readFileSync(join(this.recordsDir, name), 'utf8')) as BuildRecord;
      } catch {
        continue;
      }
      if (r.project !== this.root || `${r.run_id}.json` !== name) continue;
      if (!r.interrupted_at && alive(r.pid)) continue;
      // its tests' worktree and branch went with no one to remove them: removed here, once they are checked
      discardLeftTests(this.root, this.opts.runtime.paths.worktreesDir, r.tests_snapshot);
      const endedAt = r.interrupted_at ?? new Date().toISOString();
      const doing =
        r.phase === 'building'
          ? 'its fix run worked against the approved tests; that run did not end and nothing was verified'
          : `${r.phase === 'waiting' ? 'the tests waited for approval' : 'it wrote the tests'}; nothing was built`;
      const reason = `keel serve stopped while ${doing}: the server was killed or crashed; start the build again (POST /v1/build or keel build)`;
      const state: BuildState = {
        runId: r.run_id,
        feature: r.feature,
        startedAt: r.started_at,
        endedAt,
        phase: 'ended',
        tests: Array.isArray(r.tests) ? r.tests : [],
        testsSession: r.tests_session ?? null,
        pending: null,
        result: {
          status: 'failed',
          code: 'CANCELLED',
          reason,
          tests: [],
          testsSession: r.tests_session ?? null,
          fix: null,
        },
        error: null,
        interrupted: reason,
      };
      if (!r.interrupted_at) {
        state.phase = r.phase;
        this.record(state, endedAt);
        state.phase = 'ended';
      }
      found.push(state);
    }
    found.sort((a, b) => a.startedAt.localeCompare(b.startedAt));
    for (const state of found) this.builds.set(state.runId, state);
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
    this.record(state);
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
        if (allow) this.record(state);
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

/** Whether a process of this id runs (a signal 0 reaches it, or it is another user's). */
function alive(pid: unknown): boolean {
  if (typeof pid !== 'number' || !Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
