/**
 * `keel loop`: edit, test and (optionally) review in the user's own checkout, round after round, until the
 * tests pass and the reviewer approves, or the loop stops making progress. Every round is an ordinary edit
 * session under the safety net; the loop's own snapshot undoes all of them at once.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SessionEvent, TokenCount } from '../agent/events.js';
import type { Runtime } from '../agent/runtime.js';
import type { SessionOutcome } from '../agent/session.js';
import { count, RunError, type TerminalCode } from '../agent/terminal.js';
import { ConfigError, type LoadedConfig } from '../config/load.js';
import { protectedStatePaths } from '../config/paths.js';
import type { CallLedger } from '../model/call-ledger.js';
import type { ModelClient } from '../model/chain.js';
import { createModelClient, createRoleModelClient } from '../model/create.js';
import { diffTrees, findRepo, git, noRepoReason, worktreeTree } from '../policy/git.js';
import { SafetyNet } from '../policy/safety-net.js';
import { createSandbox, type Sandbox, SandboxError } from '../policy/sandbox.js';
import { counts, describeRun, findSuite } from '../verify/suite.js';
import type { SuiteRun } from '../verify/types.js';
import { askReviewer, type Review } from './review.js';
import { openRunLog } from './run-log.js';

export interface LoopOptions {
  /** The workspace: the loop edits it in place. */
  cwd: string;
  task: string;
  maxIterations: number;
  testCommand?: string;
  loaded: LoadedConfig;
  env?: NodeJS.ProcessEnv;
  signal: AbortSignal;
  /** Where the loop is, in words (stderr). */
  onProgress?(message: string): void;
  onText?(text: string): void;
  onEvent?(event: SessionEvent): void;
  /** The team store's ledger the loop's model calls are recorded to, under the loop's run. */
  calls?: CallLedger;
}

/** One round of the loop: its edit session, the tests after it, and the review when there was one. */
export interface LoopIteration {
  round: number;
  sessionId: string;
  sessionCode: TerminalCode;
  /** Files that differ from the state before the loop, after this round. */
  files: string[];
  /** Test ids failing after this round (empty when the tests were not run: a repeated diff). */
  failing: string[];
  passed: number;
  failed: number;
  review?: Review;
}

export interface LoopResult {
  runId: string;
  code: TerminalCode;
  reason: string;
  summary: string;
  iterations: LoopIteration[];
  /** Model rounds over every session and review. */
  modelRounds: number;
  tokens: TokenCount;
  costUsd: number | null;
  files: string[];
  testCommand: string | null;
  /** The commit `keel undo <run id>` returns the work tree to. */
  snapshot: { ref: string; commit: string } | null;
}

// rounds whose edit session ended so are not the loop's to judge: the host refused, or the model is gone
const FATAL_SESSION_CODES: ReadonlySet<TerminalCode> = new Set([
  'MODEL_ERROR',
  'CANCELLED',
  'CONFIG_ERROR',
  'ENVIRONMENT_ERROR',
  'SCOPE_VIOLATION',
  'HOOK_DENIED',
]);

/** How many rounds in a row may fail without fewer failing tests before the loop gives up. */
const STALL_LIMIT = 2;

/** Run the loop to its terminal code. Never throws for a loop that ends badly: the code says it. */
export async function runLoop(opts: LoopOptions): Promise<LoopResult> {
  const env = opts.env ?? process.env;
  const progress = opts.onProgress ?? (() => {});
  const config = opts.loaded.config;
  const { runId, runtime, paths, log, record, close } = openRunLog({
    env,
    mode: 'loop',
    cwd: opts.cwd,
    config,
    prompt: opts.task,
  });
  const tokens: TokenCount = { input: 0, output: 0 };
  let cost: number | null = 0;
  let modelRounds = 0;
  const iterations: LoopIteration[] = [];
  let testCommand: string | null = null;
  let snapshot: LoopResult['snapshot'] = null;
  const reportsDir = mkdtempSync(join(tmpdir(), 'keel-loop-'));
  let sandbox: Sandbox | undefined;

  const add = (used: { tokens: TokenCount; costUsd: number | null }) => {
    tokens.input += used.tokens.input;
    tokens.output += used.tokens.output;
    cost = cost === null || used.costUsd === null ? null : cost + used.costUsd;
  };
  const finish = (code: TerminalCode, reason: string, summary = reason): LoopResult => {
    const files = iterations.at(-1)?.files ?? [];
    record('loop_end', { code, reason, iterations: iterations.length, files, cost_usd: cost });
    log.finishSession(runId, code, summary.slice(0, 2000), cost);
    return {
      runId,
      code,
      reason,
      summary,
      iterations,
      modelRounds,
      tokens,
      costUsd: cost,
      files,
      testCommand,
      snapshot,
    };
  };

  try {
    const repo = findRepo(opts.cwd);
    if (!repo) {
      throw new RunError(
        'ENVIRONMENT_ERROR',
        noRepoReason(opts.cwd, "keel loop compares each round's changes with git"),
      );
    }
    const suite = findSuite(opts.cwd, reportsDir, opts.testCommand ?? config.test_command);
    if (!suite) {
      throw new RunError(
        'ENVIRONMENT_ERROR',
        'no test command found (looked at package.json, pytest, go.mod, Cargo.toml); pass --test-command',
      );
    }
    testCommand = suite.detected.command;

    // the loop's own snapshot, before any round writes: `keel undo <run id>` undoes every round at once
    const [saved] = new SafetyNet({ root: opts.cwd, sessionId: runId, undoDir: paths.undoDir }).beforeWrite(
      [],
    );
    if (saved?.kind !== 'git') throw new RunError('ENVIRONMENT_ERROR', 'could not snapshot the work tree');
    record('safety_net', saved);
    snapshot = { ref: saved.ref, commit: saved.commit };
    const base = saved.commit;

    sandbox = await createSandbox({
      kind: config.sandbox,
      root: opts.cwd,
      writable: [repo, reportsDir],
      network: config.sandbox_network,
      passEnv: config.sandbox_env,
      limits: config.sandbox_limits,
      env,
      protectedDirs: protectedStatePaths(paths),
    });
    const box = sandbox;
    const runTests = () => suite.run({ signal: opts.signal, exec: (command, o) => box.run(command, o) });
    progress(
      `baseline: running \`${suite.detected.command}\` (${suite.detected.source}) ${box.kind === 'none' ? 'without a sandbox' : `in ${box.kind}`}`,
    );
    const before = await runTests();
    if (before.environmentProblem) {
      throw new RunError(
        'ENVIRONMENT_ERROR',
        `the tests cannot run: ${before.environmentProblem}. Make them runnable, or pass --test-command CMD`,
      );
    }
    let failing = failingIds(before);
    record('loop_baseline', { command: before.command, failing, ...counts(before) });
    progress(`baseline: ${countsLine(before)}`);

    // every call in the ledger under the loop's run: its edit sessions' and its reviewer's
    const calls = (opts.calls ?? runtime.calls)?.with({ runId });
    const made = { cwd: opts.cwd, ...(calls ? { calls } : {}) };
    const model = createModelClient(config, env, made);
    const reviewRef = config.roles.review;
    const reviewer = reviewRef ? createRoleModelClient(config, reviewRef, env, made) : undefined;
    const edit = editRunner(opts, runtime, model, runId, suite.detected.command);

    const trees: string[] = [];
    let stalled = 0;
    let feedback = failing.length ? `Test results now:\n${describeRun(before)}` : '';
    let lastReview: Review | undefined;
    for (let round = 1; round <= opts.maxIterations; round++) {
      progress(`loop: round ${round} of ${opts.maxIterations}: editing`);
      record('loop_round', { round });
      const outcome = await edit(roundPrompt(opts.task, round, feedback));
      modelRounds += outcome.rounds;
      add(outcome);
      const tree = worktreeTree(repo, base);
      const files = diffTrees(repo, `${base}^{tree}`, tree).map((c) => c.path);
      const iteration: LoopIteration = {
        round,
        sessionId: outcome.sessionId,
        sessionCode: outcome.code,
        files,
        failing: [],
        passed: 0,
        failed: 0,
      };
      iterations.push(iteration);
      if (FATAL_SESSION_CODES.has(outcome.code)) {
        return finish(outcome.code, `round ${round}: ${outcome.reason}`);
      }

      const earlier = trees.indexOf(tree);
      trees.push(tree);
      if (earlier >= 0) {
        const reason = `round ${round} left the same changes as round ${earlier + 1} (${count(files.length, 'file')}); stopping instead of repeating it`;
        record('loop_verdict', { round, code: 'LOOP_DETECTED', reason });
        progress(`loop: ${reason}`);
        return finish('LOOP_DETECTED', reason);
      }

      progress(
        `loop: round ${round} of ${opts.maxIterations}: testing (${count(files.length, 'file')} changed)`,
      );
      const after = await runTests();
      if (opts.signal.aborted) return finish('CANCELLED', `round ${round}: interrupted while testing`);
      const now = failingIds(after);
      const c = counts(after);
      Object.assign(iteration, { failing: now, passed: c.passed, failed: c.failed });
      record('loop_tests', { round, failing: now, ...c, exit_code: after.exitCode });
      progress(`tests: ${countsLine(after)}`);

      if (now.length) {
        stalled = shrunk(now, failing) ? 0 : stalled + 1;
        failing = now;
        feedback = `The tests fail after your last round:\n${describeRun(after)}`;
        if (stalled >= STALL_LIMIT) {
          const reason = `the failing tests have not got fewer for ${STALL_LIMIT} rounds (${now.length} still failing: ${preview(now)})`;
          record('loop_verdict', { round, code: 'NO_TEST_PROGRESS', reason });
          return finish('NO_TEST_PROGRESS', reason);
        }
        continue;
      }
      stalled = 0;
      failing = now;
      if (!reviewer) {
        const reason = `the tests pass after ${count(round, 'round')} (${c.passed} passed)`;
        record('loop_verdict', { round, code: 'COMPLETED', reason });
        return finish('COMPLETED', reason);
      }

      progress(`review: asking ${reviewer.currentModel()}`);
      record('loop_review_request', { round, model: reviewer.currentModel(), files });
      const patch = git(repo, ['diff', '--no-color', '--no-ext-diff', '--no-textconv', base, tree]);
      const reviewed = await reviewRound(reviewer, {
        task: opts.task,
        patch,
        files,
        tests: describeRun(after),
      });
      if (reviewed instanceof RunError) return finish(reviewed.code, `round ${round}: ${reviewed.message}`);
      modelRounds += 1;
      add(reviewed);
      const { review } = reviewed;
      iteration.review = review;
      lastReview = review;
      record('loop_review', { round, ...review });
      progress(
        `review: ${review.verdict} (${review.findings.length} finding${review.findings.length === 1 ? '' : 's'})`,
      );
      if (review.verdict === 'APPROVE') {
        const reason = `the tests pass and ${review.model} approved after ${count(round, 'round')}`;
        record('loop_verdict', { round, code: 'COMPLETED', reason });
        return finish('COMPLETED', reason);
      }
      feedback = [
        'The tests pass now, but a reviewer asks for changes. Address each finding and keep the tests passing:',
        ...review.findings.map((f) => `- ${f}`),
      ].join('\n');
    }
    const still = lastReview?.verdict === 'REVISE' && !iterations.at(-1)?.failing.length;
    const reason = `used all ${count(opts.maxIterations, 'round')} (--max-iterations)${
      still
        ? `; the reviewer still asks for changes: ${preview(lastReview?.findings ?? [])}`
        : failing.length
          ? `; ${failing.length} test(s) still failing: ${preview(failing)}`
          : ''
    }`;
    record('loop_verdict', { code: 'BUDGET_EXCEEDED', reason });
    return finish('BUDGET_EXCEEDED', reason);
  } catch (err) {
    if (err instanceof RunError) return finish(err.code, err.message);
    if (err instanceof ConfigError) return finish('CONFIG_ERROR', err.message);
    if (err instanceof SandboxError) return finish('ENVIRONMENT_ERROR', err.message);
    if (err instanceof Error && err.name === 'GitError') return finish('ENVIRONMENT_ERROR', err.message);
    throw err;
  } finally {
    await sandbox?.close();
    rmSync(reportsDir, { recursive: true, force: true });
    close();
  }

  async function reviewRound(
    reviewer: ModelClient,
    input: Parameters<typeof askReviewer>[1],
  ): Promise<Awaited<ReturnType<typeof askReviewer>> | RunError> {
    try {
      return await askReviewer(reviewer, input, {
        signal: opts.signal,
        pricing: config.pricing,
        ...(config.temperature === undefined ? {} : { temperature: config.temperature }),
      });
    } catch (err) {
      if (opts.signal.aborted) return new RunError('CANCELLED', 'interrupted during the review');
      if (err instanceof Error && err.name === 'ModelError')
        return new RunError('MODEL_ERROR', `the reviewer failed: ${err.message}`);
      throw err;
    }
  }
}

/** Each round is an edit session in the workspace, under the safety net, sharing one model client. */
function editRunner(
  opts: LoopOptions,
  runtime: Runtime,
  model: ModelClient,
  runId: string,
  testCommand: string,
): (prompt: string) => Promise<SessionOutcome> {
  const config = { ...opts.loaded.config, test_command: testCommand };
  return (prompt) =>
    runtime.start({
      mode: 'edit',
      prompt,
      loaded: { ...opts.loaded, config },
      cwd: opts.cwd,
      signal: opts.signal,
      model,
      parentId: runId,
      safetyNet: true,
      ...(opts.onText ? { onText: opts.onText } : {}),
      ...(opts.onEvent ? { onEvent: opts.onEvent } : {}),
    });
}

/** The ids of the tests that fail; a run that cannot say per test counts as one failing pseudo-test. */
export function failingIds(run: SuiteRun): string[] {
  if (run.environmentProblem) return [`(the tests could not run: ${run.environmentProblem})`];
  if (run.timedOut) return ['(the suite timed out)'];
  const failed = run.results.filter((r) => r.status === 'failed').map((r) => r.id);
  if (failed.length) return failed;
  if (run.parsed ? run.results.length === 0 : run.collected === 0) return ['(no tests were collected)'];
  return run.exitCode === 0 ? [] : [`(the suite exited with code ${run.exitCode ?? 'none'})`];
}

/** Progress means fewer failing tests and no new ones. */
function shrunk(now: string[], before: string[]): boolean {
  return now.length < before.length && now.every((id) => before.includes(id));
}

function countsLine(run: SuiteRun): string {
  if (!run.parsed) return describeRun(run).split('\n')[0] ?? '';
  const c = counts(run);
  return `${c.passed} passed, ${c.failed} failed${c.skipped ? `, ${c.skipped} skipped` : ''}`;
}

function preview(items: string[], n = 3): string {
  return items.length <= n
    ? items.join('; ')
    : `${items.slice(0, n).join('; ')} and ${items.length - n} more`;
}

function roundPrompt(task: string, round: number, feedback: string): string {
  return [
    'Do this task by editing the code in this repository. Use run_tests to check your work.',
    'When you are done, reply with one short paragraph: what you changed and why.',
    '',
    `Task:\n${task}`,
    ...(round > 1 ? ['', `This is round ${round}; your earlier changes are still in the files.`] : []),
    ...(feedback ? ['', feedback] : []),
  ].join('\n');
}
