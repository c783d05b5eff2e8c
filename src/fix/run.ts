/** `keel fix`: snapshot, baseline, plan, attempts, verification, output. Only the verifier mints "verified". */

import { execFileSync } from 'node:child_process';
import { appendFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import type { SessionEvent } from '../agent/events.js';
import { openRuntime, type Runtime } from '../agent/runtime.js';
import { type BudgetName, count, RunError, type TerminalCode } from '../agent/terminal.js';
import { ConfigError, type LoadedConfig } from '../config/load.js';
import type { CallLedger } from '../model/call-ledger.js';
import { createModelClient } from '../model/create.js';
import { difficultyOfRun } from '../model/difficulty.js';
import { routingInForce, withTierPrices } from '../model/routing.js';
import { GitError } from '../policy/git.js';
import { type Sandbox, SandboxError } from '../policy/sandbox.js';
import type { EventLog, StoredEvent } from '../store/event-log.js';
import { describeRun, findSuite, type TestSuite } from '../verify/suite.js';
import { resolveTargets } from '../verify/targets.js';
import type { SuiteRun } from '../verify/types.js';
import { baseline as summarizeBaseline, type Verdict, verify, withTestEdits } from '../verify/verifier.js';
import { runBaseline, suiteRunner } from './baseline.js';
import { type SessionRun, type Spent, sessionRunner } from './fix-session.js';
import { observeFix } from './observe.js';
import { attemptPrompt, planPrompt, testEditFeedback } from './prompts.js';
import { writeReport } from './report.js';
import {
  discardLeftover,
  madeCommit,
  type PriorRun,
  readPriorRun,
  recordedAttempt,
  recordedBaseline,
  recordedResult,
  recordedSnapshot,
  sessionTotals,
  stopEarlierRuns,
} from './resume.js';
import { fixRouting } from './routing.js';
import { openRunLog } from './run-log.js';
import {
  attemptDiff,
  commitAttempt,
  createSnapshot,
  discardSnapshot,
  removeWorktree,
  rollback,
  type Snapshot,
  slugify,
} from './snapshot.js';
import {
  baselineDoctestModules,
  baselineTestPaths,
  changedFrozen,
  type FrozenTest,
  guardTests,
} from './test-guard.js';
import { testSandbox } from './test-sandbox.js';

export interface FixOptions {
  repo: string;
  issue: string;
  targetTests: string[];
  testCommand?: string;
  maxAttempts: number;
  /** Let the model's edits to existing tests count toward the verdict (an issue about a wrong test). */
  allowTestEdits?: boolean;
  loaded: LoadedConfig;
  env?: NodeJS.ProcessEnv;
  /** The runtime its sessions run in (keel serve's); default: one opened for the run and closed at its end. */
  runtime?: Runtime;
  signal: AbortSignal;
  /** Where the fix is, in words, as it goes (stderr). */
  onProgress?(message: string): void;
  /** A long step (a test run) begins: a face shows `label` with the time it has taken; call the result when it ends. */
  onWaiting?(label: string): () => void;
  onText?(text: string): void;
  onEvent?(event: SessionEvent): void;
  /** The run's id (default: a fresh one), for a caller that answers with it before the run ends. */
  runId?: string;
  /**
   * Go on with this run, killed before it ended (a `keel batch` task's next attempt): what its log says is
   * done (snapshot, baseline, plan, judged attempts, calls with results) is not done again, its sessions
   * continue from their logs, and its spend carries over. A run with no log yet starts under this id.
   */
  resumeRun?: string;
  /** The team store's ledger every model call of the run is recorded to (and a cost cap checked against). */
  calls?: CallLedger;
  /**
   * The attempt is this patch (git diff text), not a model's: no model is called, and the patch is judged
   * exactly as an attempt is (test guard, verifier). keel eval's self-check.
   */
  patch?: string;
  /**
   * Tests a person approved and keel froze by hash (keel build's acceptance tests, committed at the
   * snapshot's base): recorded in the run log, guarded like the baseline's tests, and re-checked against
   * their hashes before each verdict; a mismatch is never verified.
   */
  frozenTests?: FrozenTest[];
  /** The repository whose memory learns the verdict, when `repo` is a checkout keel made of it (keel build's). */
  memoryRepo?: string;
  /**
   * The writable scope of the run's sessions, paths relative to `repo` (default: all of it): the gate
   * refuses a write elsewhere, and an attempt that changed a file elsewhere anyway is never verified.
   */
  scope?: string[];
  /** The commit the fix branches from instead of HEAD (keel goal's base holding a task's dependencies). */
  base?: string;
}

export interface FixResult {
  runId: string;
  code: TerminalCode;
  /** With BUDGET_EXCEEDED: which budget (`cost_cap` when the run's --cost-cap stopped it). */
  budget?: BudgetName;
  /** `blocked_uncertain`: a resumed run met an effect it cannot check, and stopped for a person to look. */
  status: 'verified' | 'failed' | 'blocked_uncertain';
  reason: string;
  summary: string;
  attempts: number;
  branch: string | null;
  commit: string | null;
  verification: Verdict | null;
  files: string[];
  rounds: number;
  tokens: { input: number; output: number };
  costUsd: number | null;
  paths: { runDir: string; trace: string; rationale: string; pr: string; diff: string } | null;
  snapshot: { kind: string; dir: string; linked: string[] } | null;
  /** Where the kept attempt is to look at (a worktree or a copy), or null when nothing was kept there. */
  worktree: string | null;
  testCommand: string | null;
  /** The run had ended before it was resumed: this is its recorded result, and nothing ran again. */
  replayed?: true;
}

/**
 * Run a fix to its verdict, and keep the verdict in the project's memory for later sessions.
 * Throws RunError only for problems before there is anything to report.
 */
export async function runFix(given: FixOptions): Promise<FixResult> {
  // a routed call is costed at its tier's price
  const opts = routingInForce(given.loaded)
    ? { ...given, loaded: { ...given.loaded, config: withTierPrices(given.loaded.config) } }
    : given;
  const result = await runToVerdict(opts);
  if (result.replayed) return result;
  const env = opts.env ?? process.env;
  // a given patch (keel eval's self-check) is no fix a later session should learn from
  if (opts.patch === undefined)
    await observeFix({
      repo: opts.memoryRepo ?? opts.repo,
      issue: opts.issue,
      result,
      config: opts.loaded.config,
      env,
    });
  return result;
}

async function runToVerdict(opts: FixOptions): Promise<FixResult> {
  // the wall budget is the whole run's, baseline included
  const runStarted = Date.now();
  const env = opts.env ?? process.env;
  const progress = opts.onProgress ?? (() => {});
  // a test run can take minutes: shown while it runs, and its time said when it ends
  const waiting = (label: string): (() => string) => {
    const started = Date.now();
    const stop = opts.onWaiting?.(label);
    return () => {
      stop?.();
      return seconds(Date.now() - started);
    };
  };
  const config = opts.loaded.config;
  // a killed run resumed: its log says what is done; its earlier process is stopped before anything is touched
  const own = opts.runtime ? undefined : openRuntime(env);
  const shared = opts.runtime ?? (own as Runtime);
  let prior: PriorRun | undefined;
  try {
    prior = opts.resumeRun ? readPriorRun(shared.log, opts.resumeRun, opts.repo, opts.issue) : undefined;
    if (prior) await stopEarlierRuns(prior.pids);
  } catch (err) {
    own?.close();
    throw err;
  }
  // the wall budget carries over too: the killed processes' time is the run's
  const ranBefore = prior?.wallMs ?? 0;
  const {
    runId,
    runtime,
    paths,
    log,
    record,
    close: closeLog,
  } = openRunLog({
    env,
    runtime: shared,
    mode: 'fix',
    cwd: opts.repo,
    config,
    prompt: opts.issue,
    ...(opts.resumeRun ? { runId: opts.resumeRun } : opts.runId ? { runId: opts.runId } : {}),
    ...(prior ? { resume: true } : {}),
  });
  const close = () => {
    closeLog();
    own?.close();
  };
  if (prior?.end) {
    // it ended before it was killed: its recorded result, nothing done again
    const replayed = recordedResult(runId, prior.end);
    log.finishSession(runId, replayed.code, replayed.reason, replayed.costUsd);
    close();
    return replayed;
  }
  const tokens = { input: 0, output: 0 };
  let cost: number | null = 0;
  let rounds = 0;
  const reportsDir = mkdtempSync(join(tmpdir(), 'keel-fix-'));
  let sandbox: Sandbox | undefined;
  let snapshot: Snapshot | undefined;
  // the branch and worktree outlive the run only when they hold a result: a verified fix or a kept attempt
  let keep = false;
  // the command a user can rerun (detected or given), not keel's invocation with its reporter plumbing
  let userCommand: string | null = null;

  const result = (r: Partial<FixResult> & Pick<FixResult, 'code' | 'status' | 'reason'>): FixResult => {
    // nothing worth keeping (no attempt ran, or it was interrupted): leave no branch or worktree behind
    const discard = snapshot !== undefined && !keep;
    if (snapshot && discard) discardSnapshot(snapshot);
    const worktree = snapshot && !discard && existsSync(snapshot.top) ? snapshot.dir : null;
    const out: FixResult = {
      runId,
      summary: r.reason,
      attempts: 0,
      branch: discard ? null : (snapshot?.branch ?? null),
      commit: null,
      verification: null,
      files: [],
      rounds,
      tokens,
      costUsd: cost,
      paths: null,
      snapshot: snapshot ? { kind: snapshot.kind, dir: snapshot.dir, linked: snapshot.linked } : null,
      worktree,
      testCommand: userCommand,
      ...r,
    };
    // the whole result: a run resumed after this is recorded reads it back (recordedResult)
    record('fix_end', {
      code: out.code,
      status: out.status,
      reason: out.reason,
      attempts: out.attempts,
      branch: out.branch,
      commit: out.commit,
      worktree: out.worktree,
      cost_usd: out.costUsd,
      summary: out.summary,
      files: out.files,
      verification: out.verification,
      rounds: out.rounds,
      tokens: out.tokens,
      paths: out.paths,
      snapshot: out.snapshot,
      test_command: out.testCommand,
    });
    log.finishSession(runId, out.code, out.reason, out.costUsd);
    return out;
  };

  if (opts.frozenTests?.length && !prior)
    record('build_frozen_tests', {
      tests: opts.frozenTests.map((t) => ({ path: t.path, sha256: t.sha256 })),
    });

  try {
    if (prior?.snapshot) {
      snapshot = recordedSnapshot(prior.snapshot, opts.repo);
      progress(`resuming run ${runId}: its snapshot at ${snapshot.dir}`);
    } else {
      // a run killed between making its worktree and logging it left one behind: removed, made afresh
      if (prior) discardLeftover(opts.repo, runId, slugify(opts.issue), paths.worktreesDir);
      progress('snapshot: creating a worktree (your checkout is not touched)');
      snapshot = createSnapshot(opts.repo, runId, slugify(opts.issue), paths.worktreesDir, opts.base);
      const linked = snapshot.linked.length
        ? `; linked ${snapshot.linked.join(', ')} from your checkout`
        : '';
      progress(
        `snapshot: ${snapshot.branch ? `branch ${snapshot.branch}` : 'a copy'} at ${snapshot.dir}${linked}`,
      );
      record('fix_snapshot', {
        kind: snapshot.kind,
        dir: snapshot.dir,
        top: snapshot.top,
        repo: snapshot.repo ?? null,
        branch: snapshot.branch,
        base: snapshot.base,
        linked: snapshot.linked,
        linked_from: snapshot.linkedFrom,
        module_shadows: snapshot.moduleShadows,
      });
    }

    const found = findSuite(snapshot.dir, reportsDir, opts.testCommand ?? config.test_command);
    if (!found) {
      throw new RunError(
        'ENVIRONMENT_ERROR',
        'no test command found (looked at package.json, pytest, go.mod, Cargo.toml); pass --test-command',
      );
    }
    userCommand = found.detected.command;
    sandbox = await testSandbox(snapshot, reportsDir, opts.loaded);
    const recorded = prior?.baseline
      ? recordedBaseline(prior.baseline, found, snapshot, reportsDir)
      : undefined;
    const baselineDone = recorded
      ? {
          ...recorded,
          runTests: (() => {
            const box = sandbox;
            const shot = snapshot;
            return suiteRunner(opts.signal, recorded.suite, shot, box);
          })(),
          took: 'recorded',
        }
      : await runBaseline({
          opts,
          found,
          snapshot,
          sandbox,
          reportsDir,
          progress,
          waiting,
          chose: (command) => {
            userCommand = command;
          },
        });
    const { suite, before, runTests, took: baselineTook } = baselineDone;
    if (recorded) userCommand = recorded.suite.detected.command;
    if (opts.signal.aborted)
      return result({
        code: 'CANCELLED',
        status: 'failed',
        reason: 'interrupted while running the baseline',
      });
    const base = summarizeBaseline(before);
    // the whole run and the suite it settled on are kept: a resumed run judges against them, not a new baseline
    if (!recorded)
      record('fix_baseline', {
        command: before.command,
        exit_code: before.exitCode,
        passing: base.passing,
        failing: base.failing,
        problem: base.problem,
        duration_ms: before.durationMs,
        parsed: before.parsed,
        ...(before.checks === undefined
          ? {}
          : { checks: before.checks.map((c) => ({ name: c.name, command: c.command, passed: c.passed })) }),
        suite_command: suite.detected.command,
        run: before,
        ...(snapshot.writableCopies?.size
          ? { writable_copies: [...snapshot.writableCopies].map(([shadow, names]) => [shadow, [...names]]) }
          : {}),
      });
    if (base.problem) {
      throw new RunError(
        'ENVIRONMENT_ERROR',
        `the tests cannot run in the snapshot: ${base.problem}. Make them runnable, or pass --test-command CMD`,
      );
    }
    // a suite that cannot even be loaded tells nothing about the code, unless the user named the target
    if (base.collectionError && !opts.targetTests.length) {
      throw new RunError(
        'ENVIRONMENT_ERROR',
        `the test suite cannot be collected in the snapshot: ${base.collectionError}. No model was called; make the tests loadable, or name the target with --target-test if this is the bug`,
      );
    }
    progress(`baseline: ${describeRun(before).split('\n')[0]} (${baselineTook})`);
    const testPaths = baselineTestPaths(snapshot, before);
    for (const t of opts.frozenTests ?? []) testPaths.add(t.path);
    const frozen = opts.frozenTests ?? [];
    const tamperedAtBase = changedFrozen(snapshot.top, frozen);
    if (tamperedAtBase.length)
      throw new RunError(
        'ENVIRONMENT_ERROR',
        `the frozen tests are not the approved ones in the snapshot (${tamperedAtBase.join(', ')}); nothing is judged with them`,
      );
    const doctestModules = baselineDoctestModules(snapshot, before);
    const countEdits = opts.allowTestEdits === true;

    const targets = resolveTargetIds(before, opts.targetTests, base.failing);
    const stillPassing = targets.filter((id) => base.passing.includes(id));
    if (opts.targetTests.length && stillPassing.length === targets.length) {
      const reason = `the target already passes before any change (${stillPassing.join(', ')}); nothing to fix, no model called`;
      progress(reason);
      return result({ code: 'COMPLETED', status: 'verified', reason });
    }
    // without per-test results there are no failing ids: a failing suite is the target as a whole, and
    // the verifier judges it by its exit code (an empty target list), never as "nothing to fix"
    const wholeSuite = !before.parsed && before.exitCode !== 0;
    if (!targets.length && !wholeSuite) {
      const reason =
        'every test passes at baseline and no --target-test was given: nothing to verify, no model called';
      progress(reason);
      return result({ code: 'COMPLETED', status: 'verified', reason });
    }
    const shown = targets.length
      ? targets
      : [`the whole suite: \`${before.command}\` exits ${before.exitCode} and must exit 0`];
    progress(`target: ${shown.join(', ')}`);

    const spent = () => ({
      tokens: tokens.input + tokens.output,
      cost,
      wallS: (Date.now() - runStarted + ranBefore) / 1000,
    });
    // a given patch is the attempt: applied to the snapshot, then judged like any model's edit
    const session: SessionRun =
      opts.patch !== undefined
        ? patchSession(opts.patch, snapshot)
        : modelSession(opts, env, log, runId, record, runtime, snapshot, suite, tokens, spent, (n, c) => {
            rounds += n;
            cost = cost === null || c === null ? null : cost + c;
          });

    /** A session of the killed run that is done: its spend carries over, nothing in it runs again. */
    const carry = (id: string) => {
      const t = sessionTotals(log, id);
      tokens.input += t.tokens.input;
      tokens.output += t.tokens.output;
      rounds += t.rounds;
      cost = cost === null || t.cost === null ? null : cost + t.cost;
    };
    let plan: string;
    if (prior?.plan !== undefined) {
      plan = prior.plan;
      // the plan session's spend carries over
      if (prior.planSession) carry(prior.planSession);
    } else {
      progress(
        opts.patch !== undefined ? 'plan: the given patch' : 'plan: asking the model for a short plan',
      );
      const planOutcome = await session(
        'plan',
        planPrompt(opts.issue, before, shown),
        Math.min(config.budgets.max_rounds, 8),
        prior?.planSession,
      );
      if (endsRun(planOutcome) || planOutcome.code === 'BLOCKED_UNCERTAIN') {
        return result({
          code: planOutcome.code,
          ...(planOutcome.budget ? { budget: planOutcome.budget } : {}),
          status: planOutcome.code === 'BLOCKED_UNCERTAIN' ? 'blocked_uncertain' : 'failed',
          reason: planOutcome.reason,
        });
      }
      plan = planOutcome.summary;
      record('fix_plan', { plan });
    }

    let feedback = '';
    let last: {
      verdict?: Verdict;
      after?: SuiteRun;
      patch: string;
      files: string[];
      summary: string;
      why: string;
    } = {
      patch: '',
      files: [],
      summary: '',
      why: 'no attempt was made',
    };
    let attempts = 0;
    for (let attempt = 1; attempt <= opts.maxAttempts; attempt++) {
      attempts = attempt;
      const earlier = prior?.attempts.get(attempt);
      const judged = earlier?.verdict;
      if (judged) {
        // judged before the kill: the verdict stands, the attempt's spend carries over, nothing is redone
        const sessionId = prior?.attemptSessions[attempt - 1];
        if (sessionId) carry(sessionId);
        last = recordedAttempt(judged);
        feedback = typeof judged.feedback === 'string' ? judged.feedback : '';
        const verdict = last.verdict;
        if (verdict?.environmentProblem !== undefined)
          return finish('ENVIRONMENT_ERROR', 'failed', last.why, attempts, last, before, plan, shown);
        if (verdict?.status === 'verified')
          return finish('COMPLETED', 'verified', verdict.reason, attempts, last, before, plan, shown);
        // the rollback after it happened before the next attempt was logged
        if (attempt < opts.maxAttempts && !prior?.attempts.has(attempt + 1)) rollback(snapshot);
        continue;
      }
      progress(`attempt ${attempt} of ${opts.maxAttempts}: editing in the snapshot`);
      if (!earlier) record('fix_attempt', { attempt });
      const outcome = await session(
        'edit',
        attemptPrompt(opts.issue, plan, shown, feedback),
        config.budgets.max_rounds,
        earlier ? prior?.attemptSessions[attempt - 1] : undefined,
      );
      if (outcome.code === 'BLOCKED_UNCERTAIN') {
        // the worktree is left as it is, for the person to look at
        keep = true;
        return result({ code: outcome.code, status: 'blocked_uncertain', reason: outcome.reason, attempts });
      }
      if (endsRun(outcome)) {
        rollback(snapshot);
        const end = finish(outcome.code, 'failed', outcome.reason, attempts, last, before, plan, shown);
        return outcome.budget ? { ...end, budget: outcome.budget } : end;
      }
      if (outcome.budgetSpent) {
        // the run's budget is gone before this attempt could start: the last attempt stands as it was judged
        return finish('BUDGET_EXCEEDED', 'failed', outcome.reason, attempt - 1, last, before, plan, shown);
      }
      const diff = attemptDiff(snapshot);
      if (!diff.files.length) {
        const why = `attempt ${attempt} changed no files (the model said: ${firstLine(outcome.summary)})`;
        progress(`verdict: not verified: ${why}`);
        last = { patch: '', files: [], summary: outcome.summary, why };
        feedback = `Your previous attempt changed no files. ${why}`;
        record('fix_verdict', {
          attempt,
          status: 'failed',
          reason: why,
          files: [],
          patch: '',
          summary: outcome.summary,
          feedback,
        });
        continue;
      }
      const outside = outsideScope(snapshot, opts.scope, diff.files);
      if (outside.length) {
        // the gate refuses such writes: a change there anyway is never judged, and never kept
        const why = `attempt ${attempt} changed files outside the run's writable scope (${outside.join(', ')}; scope: ${opts.scope?.join(', ')})`;
        progress(`verdict: refused: ${why}`);
        rollback(snapshot);
        record('fix_verdict', { attempt, status: 'failed', reason: why, files: diff.files, patch: '' });
        return result({ code: 'SCOPE_VIOLATION', status: 'failed', reason: why, attempts: attempt });
      }
      const guard = guardTests(snapshot, testPaths, diff.files, countEdits, doctestModules);
      if (guard.edits.length) {
        progress(
          `verifying: the attempt edits existing tests (${guard.edits.join(', ')}); ${countEdits ? '--allow-test-edits: they count' : "judging with the baseline's versions"}`,
        );
      }
      progress(`verifying: ${count(diff.files.length, 'file')} changed; running the tests`);
      let after: SuiteRun;
      let verdict: Verdict;
      const verifyDone = waiting(`verifying attempt ${attempt}: running \`${suite.detected.command}\``);
      // judged with the approved tests only: their bytes are checked against the hashes first
      const tampered = changedFrozen(snapshot.top, frozen);
      const unsafe =
        guard.unsafe ??
        (tampered.length
          ? `the frozen tests (${tampered.join(', ')}) are not the approved ones (sha256 mismatch)`
          : undefined);
      try {
        after = await runTests();
        verdict = await verify({ baseline: before, after, targets, rerun: () => runTests() });
      } finally {
        // the attempt's diff stays what the model wrote
        guard.restore();
        progress(`verifying attempt ${attempt}: the tests ran in ${verifyDone()}`);
      }
      if (opts.signal.aborted) {
        rollback(snapshot);
        const why = `interrupted while verifying attempt ${attempt}`;
        return finish('CANCELLED', 'failed', why, attempts - 1, last, before, plan, shown);
      }
      verdict = withTestEdits(verdict, guard.edits, countEdits, unsafe);
      // how many tests passed and failed after the attempt (the run page charts them per attempt)
      const tests = {
        passed: after.results.filter((r) => r.status === 'passed').length,
        failed: after.results.filter((r) => r.status === 'failed').length,
      };
      last = {
        verdict,
        after,
        patch: diff.patch,
        files: diff.files,
        summary: outcome.summary,
        why: verdict.reason,
      };
      // what the model is told next, worked out now: a run resumed after the verdict goes on from it
      const setAside = guard.edits.length && !countEdits ? testEditFeedback(guard.edits) : '';
      feedback = `Your previous attempt did not pass verification: ${verdict.reason}\n${describeRun(after)}${setAside}`;
      record('fix_verdict', {
        attempt,
        ...verdict,
        files: diff.files,
        tests,
        patch: diff.patch,
        summary: outcome.summary,
        after,
        feedback,
      });
      if (verdict.environmentProblem !== undefined) {
        // the machine, not the attempt, failed: another attempt would be judged by the same broken machine
        const why = `the tests could not run after attempt ${attempt}: ${verdict.environmentProblem}. The attempt is kept, not verified because of the environment`;
        progress(`verdict: ${why}`);
        return finish('ENVIRONMENT_ERROR', 'failed', why, attempts, last, before, plan, shown);
      }
      if (verdict.status === 'verified') {
        progress(`verdict: ${verdict.reason}`);
        return finish('COMPLETED', 'verified', verdict.reason, attempts, last, before, plan, shown);
      }
      // the verifier's reason starts with its verdict: said once, not 'not verified: not verified:'
      progress(`verdict: ${verdict.reason}`);
      if (attempt < opts.maxAttempts) rollback(snapshot);
    }
    return finish('VERIFICATION_FAILED', 'failed', last.why, attempts, last, before, plan, shown);
  } catch (err) {
    if (err instanceof RunError) return result({ code: err.code, status: 'failed', reason: err.message });
    // a routing calibration that went bad since the run was checked
    if (err instanceof ConfigError)
      return result({ code: 'CONFIG_ERROR', status: 'failed', reason: err.message });
    if (err instanceof SandboxError)
      return result({ code: 'ENVIRONMENT_ERROR', status: 'failed', reason: err.message });
    // git refusing (a broken repository, a locked index) is the environment, said in one line
    if (err instanceof GitError)
      return result({ code: 'ENVIRONMENT_ERROR', status: 'failed', reason: firstLine(err.message) });
    throw err;
  } finally {
    await sandbox?.close();
    rmSync(reportsDir, { recursive: true, force: true });
    close();
  }

  function finish(
    code: TerminalCode,
    status: 'verified' | 'failed',
    reason: string,
    attempts: number,
    last: { verdict?: Verdict; after?: SuiteRun; patch: string; files: string[]; summary: string },
    before: SuiteRun,
    plan: string,
    targets: string[],
  ): FixResult {
    if (!snapshot) throw new Error('finish before snapshot');
    // a resumed run may find the commit made already (killed after it): it is taken, not made twice
    let commit: string | null = prior ? madeCommit(snapshot) : null;
    if (commit) {
      // committed before the kill
    } else if (last.files.length && status === 'verified') {
      commit = commitAttempt(
        snapshot,
        last.files,
        `${firstLine(opts.issue).slice(0, 60)}\n\nFixed by keel run ${runId}; ${reason}`,
      );
    } else if (last.files.length && (code === 'VERIFICATION_FAILED' || code === 'ENVIRONMENT_ERROR')) {
      // kept for inspection, and labelled so nobody mistakes it for a fix
      const label = code === 'ENVIRONMENT_ERROR' ? 'UNVERIFIED: environment' : 'UNVERIFIED';
      try {
        commit = commitAttempt(
          snapshot,
          last.files,
          `keel (${label}): ${firstLine(opts.issue).slice(0, 48)}\n\n${reason}`,
        );
      } catch (err) {
        // an attempt git cannot commit (a path behind a link it made) is still reported; the worktree keeps it
        if (!(err instanceof GitError)) throw err;
        opts.onProgress?.(`the unverified attempt could not be committed: ${err.message.split('\n')[0]}`);
      }
    }
    // kept: a verified fix's commit, or an unverified attempt (committed, or left in the worktree when git could not)
    keep =
      commit !== null ||
      (last.files.length > 0 && (code === 'VERIFICATION_FAILED' || code === 'ENVIRONMENT_ERROR'));
    const runDir = join(paths.runsDir, runId);
    const events = traceEvents(log, runId);
    const report = writeReport({
      runDir,
      issue: opts.issue,
      status,
      plan,
      modelSummary: last.summary,
      patch: last.patch,
      files: last.files,
      baseline: before,
      ...(last.after ? { after: last.after } : {}),
      ...(last.verdict ? { verdict: last.verdict } : {}),
      targets,
      attempts,
      // a branch that is deleted when the run ends is named nowhere
      ...(snapshot.branch && keep ? { branch: snapshot.branch } : {}),
      ...(commit ? { commit } : {}),
      testCommand: userCommand ?? before.command,
      events,
      ...(status === 'failed' ? { failure: reason } : {}),
    });
    // a verified fix lives on its branch; the worktree folder is only scaffolding
    if (status === 'verified' && snapshot.kind === 'worktree' && existsSync(snapshot.top))
      removeWorktree(snapshot);
    const out = result({
      code,
      status,
      reason,
      summary:
        status === 'verified'
          ? `verified after ${count(attempts, 'attempt')}: ${reason.replace(/^verified: /, '')}`
          : reason,
      attempts,
      commit,
      verification: last.verdict ?? null,
      files: last.files,
      paths: { runDir, ...report },
    });
    // the run's last event (fix_end) is recorded after the report was written: the trace gets it too
    const end = log.events(runId).at(-1);
    if (end?.type === 'fix_end') appendFileSync(report.trace, `${JSON.stringify(end)}\n`);
    return out;
  }
}

/**
 * A session's end that ends the run: the model failing, Ctrl+C, or a call the ledger refused (the run's
 * cost cap, a model it cannot price under the cap, the team store away): another attempt would meet the same.
 */
function endsRun(outcome: { code: TerminalCode; budget?: BudgetName }): boolean {
  return (
    outcome.code === 'MODEL_ERROR' ||
    outcome.code === 'CANCELLED' ||
    outcome.code === 'CONFIG_ERROR' ||
    outcome.code === 'ENVIRONMENT_ERROR' ||
    outcome.budget === 'cost_cap'
  );
}

/** The model's sessions, routed when routing is on (each call's tier from the issue and the struggle so far), each call in the ledger. */
function modelSession(
  opts: FixOptions,
  env: NodeJS.ProcessEnv,
  log: EventLog,
  runId: string,
  record: (type: string, data: Record<string, unknown>) => void,
  ...rest: [
    Runtime,
    Snapshot,
    TestSuite,
    { input: number; output: number },
    Spent,
    (n: number, c: number | null) => void,
  ]
): SessionRun {
  const routed = fixRouting(opts.loaded, env, () => difficultyOfRun(log, runId));
  if (routed) record('fix_routing', routed.event);
  const [runtime, snapshot, suite, tokens, spent, add] = rest;
  // every call in the ledger under this run: the caller's (a batch's run and task), else the fix run itself
  const calls = opts.calls ?? runtime.calls?.with({ runId });
  const model = createModelClient(opts.loaded.config, env, {
    cwd: opts.repo,
    ...(routed ? { routing: routed.routing } : {}),
    ...(calls ? { calls } : {}),
  });
  return sessionRunner(opts, runtime, model, runId, snapshot, suite, tokens, spent, add);
}

/** Sessions that call no model: the plan is nothing, and each attempt applies the given patch (`git apply`). */
function patchSession(patch: string, snapshot: Snapshot): SessionRun {
  return async (mode) => {
    if (mode === 'plan')
      return { code: 'COMPLETED', reason: 'the given patch', summary: 'apply the given patch' };
    try {
      execFileSync('git', ['apply', '--whitespace=nowarn', '-'], {
        cwd: snapshot.top,
        input: patch,
        stdio: ['pipe', 'ignore', 'pipe'],
      });
    } catch (err) {
      const why = String((err as { stderr?: Buffer }).stderr ?? err)
        .trim()
        .split('\n')[0];
      throw new RunError('CONFIG_ERROR', `the patch does not apply: ${why}`);
    }
    return { code: 'COMPLETED', reason: 'the given patch', summary: 'applied the given patch' };
  };
}

/** `4.2 s`, `2 min 5 s`: a duration for people. */
function seconds(ms: number): string {
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(1)} s`;
  return `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;
}

function resolveTargetIds(run: SuiteRun, requested: string[], failing: string[]): string[] {
  if (!requested.length) return failing;
  const resolved = resolveTargets(run, requested);
  if (!resolved.ok) throw new RunError('CONFIG_ERROR', `--target-test: ${resolved.error}`);
  return resolved.ids;
}

/** The run's own events and its sessions', in time order: the trace. */
function traceEvents(log: EventLog, runId: string): StoredEvent[] {
  const children = log.childSessions(runId);
  const all = [log.events(runId), ...children.map((c) => log.events(c.id))].flat();
  return all.sort(
    (a, b) => a.ts.localeCompare(b.ts) || a.session_id.localeCompare(b.session_id) || a.seq - b.seq,
  );
}

function firstLine(text: string): string {
  return text.trim().split('\n')[0] ?? '';
}

/** The changed files (relative to the repository's top) that lie outside `scope` (relative to the snapshot's folder). */
function outsideScope(snapshot: Snapshot, scope: string[] | undefined, files: string[]): string[] {
  if (!scope?.length) return [];
  const dirs = scope.map((p) => relative(snapshot.top, resolve(snapshot.dir, p)));
  return files.filter(
    (f) => !dirs.some((d) => d === '' || d === '.' || f === d || f.startsWith(`${d.replace(/\/+$/, '')}/`)),
  );
}
