/**
 * The verifier gate: a change is verified only when its target tests pass and no test that passed at
 * baseline now fails (confirmed by a rerun, which separates flaky tests from regressions). Pure over
 * suite runs; running them is the caller's job.
 */
import { type CheckVerdict, judgeChecks } from './checks.js';
import { resolveTargets } from './targets.js';
import type { SuiteRun, TestResult, TestStatus } from './types.js';

/** What a baseline run says, and whether it can anchor a verification. */
export interface Baseline {
  mode: 'per-test' | 'exit-code';
  passing: string[];
  failing: string[];
  skipped: string[];
  /** Why this run cannot anchor a verification (environment, timeout, no tests); absent when it can. */
  problem?: string;
  environmentProblem?: string;
  /** Set when nothing passed and the suite could not even be loaded: what failed to load, and why. */
  collectionError?: string;
}

export interface VerifyInput {
  baseline: SuiteRun;
  after: SuiteRun;
  /** Ids, names, files or folders; empty means the tests that failed at baseline. */
  targets: string[];
  /** Run the suite again to tell flaky tests from regressions; given the suspect ids. */
  rerun?: (ids: string[]) => Promise<SuiteRun>;
}

/** The gate's decision, with the evidence behind it. */
export interface Verdict {
  status: 'verified' | 'failed';
  mode: 'per-test' | 'exit-code';
  targetsPassing: string[];
  targetsFailing: string[];
  /** Passed at baseline, fail (or no longer run) now, and again on rerun. */
  regressions: string[];
  /** Failed after the change, then passed on rerun. */
  flaky: string[];
  reason: string;
  environmentProblem?: string;
  /** Existing test files and test configuration the change edited (repository paths). */
  testEdits?: string[];
  /** Whether those edits took part in the verdict (`--allow-test-edits`); by default the baseline's tests judge. */
  testEditsCounted?: boolean;
  /** The test command's other steps (lint, type check, audit), before and after the change. */
  checks?: CheckVerdict[];
  /** Checks that passed at baseline and fail after the change, by name; any makes the verdict failed. */
  checksBroken?: string[];
}

/** Summarize a baseline run and say whether it can anchor a verification. */
export function baseline(run: SuiteRun): Baseline {
  const ids = (status: TestStatus): string[] =>
    run.results.filter((r) => r.status === status).map((r) => r.id);
  const problem = runProblem(run);
  const collection = collectionError(run);
  return {
    mode: run.parsed ? 'per-test' : 'exit-code',
    passing: ids('passed'),
    failing: ids('failed'),
    skipped: ids('skipped'),
    ...(problem === undefined ? {} : { problem }),
    ...(run.environmentProblem === undefined ? {} : { environmentProblem: run.environmentProblem }),
    ...(collection === undefined ? {} : { collectionError: collection }),
  };
}

/**
 * Why a run with no passing test could not load its tests (an ImportError while collecting, a test file
 * that crashed before running a test), or undefined when it did load them.
 */
export function collectionError(run: SuiteRun): string | undefined {
  if (run.results.some((r) => r.status === 'passed')) return undefined;
  // a file-level failure is the runner saying the file itself broke, not one of its tests
  const broken = run.results.filter(
    (r) => r.status === 'failed' && !r.id.includes(' > ') && (r.file === undefined || r.file === r.id),
  );
  const interrupted = /Interrupted: \d+ errors? during collection/.test(run.output);
  if (broken.length === 0 && !interrupted) return undefined;
  const text = [...broken.map((r) => r.message ?? ''), run.output].join('\n');
  const cause = /^(?:E\s+)?((?:\w+\.)*\w*(?:Error|Exception)\b:.*)$/m.exec(text)?.[1]?.trim();
  const files = broken.length > 0 ? list(broken.map((r) => r.id)) : 'the test files';
  return `0 tests passed and ${files} could not be loaded${cause === undefined ? '' : ` (${cause})`}`;
}

/** Name the test edits in a verdict: set aside by default (the baseline's tests judged), or counted. */
export function withTestEdits(verdict: Verdict, edits: string[], counted: boolean, unsafe?: string): Verdict {
  if (unsafe !== undefined) {
    return {
      ...verdict,
      status: 'failed',
      testEdits: edits,
      testEditsCounted: false,
      reason: `not verified: ${unsafe}`,
    };
  }
  if (edits.length === 0) return { ...verdict, testEdits: [], testEditsCounted: counted };
  const note = counted
    ? `; the change edits existing tests (${list(edits)}) and --allow-test-edits let those edits count`
    : `; judged with the baseline's tests: the change's edits to existing tests (${list(edits)}) were set aside and do not count`;
  return { ...verdict, testEdits: edits, testEditsCounted: counted, reason: `${verdict.reason}${note}` };
}

/** Decide whether the change between `baseline` and `after` is verified: its tests, then its checks. */
export async function verify(input: VerifyInput): Promise<Verdict> {
  const verdict = await verifyTests(input);
  // a run that could not run its tests says nothing about its checks either
  if (runProblem(input.after) !== undefined) return verdict;
  return judgeChecks(verdict, input.baseline, input.after);
}

/** The verdict of the tests alone: targets pass, nothing that passed fails. */
async function verifyTests(input: VerifyInput): Promise<Verdict> {
  const { after, targets } = input;
  const blocked = runProblem(after);
  if (blocked !== undefined) {
    return {
      ...empty(after.parsed ? 'per-test' : 'exit-code'),
      targetsFailing: targets,
      reason: `not verified: ${blocked}`,
      ...(after.environmentProblem === undefined ? {} : { environmentProblem: after.environmentProblem }),
    };
  }
  if (!after.parsed) return exitCodeVerdict(input);

  const before = input.baseline;
  let targetIds: string[];
  if (targets.length > 0) {
    const resolved = resolveTargets({ results: [...before.results, ...after.results] }, targets);
    if (!resolved.ok)
      return { ...empty('per-test'), targetsFailing: targets, reason: `not verified: ${resolved.error}` };
    targetIds = resolved.ids;
  } else if (before.parsed) {
    targetIds = before.results.filter((r) => r.status === 'failed').map((r) => r.id);
    if (targetIds.length === 0) {
      return {
        ...empty('per-test'),
        reason: 'not verified: no test failed at baseline and no target was named',
      };
    }
  } else {
    return wholeSuiteVerdict(after);
  }

  const afterStatus = statusMap(after.results);
  const targetsPassing = targetIds.filter((id) => afterStatus.get(id) === 'passed');
  const targetsFailing = targetIds.filter((id) => afterStatus.get(id) !== 'passed');
  const targetSet = new Set(targetIds);
  // a test that passed before and now fails, is skipped or no longer runs at all
  const suspects = before.parsed
    ? before.results.filter(
        (r) => r.status === 'passed' && !targetSet.has(r.id) && afterStatus.get(r.id) !== 'passed',
      )
    : [];

  let regressions = suspects.map((r) => r.id);
  let flaky: string[] = [];
  let rerunNote = '';
  // a rerun can only change the verdict when the targets pass; otherwise it is wasted time
  if (input.rerun !== undefined && regressions.length > 0 && targetsFailing.length === 0) {
    const again = await input.rerun(regressions);
    if (again.parsed && again.environmentProblem === undefined && !again.timedOut) {
      const againStatus = statusMap(again.results);
      flaky = regressions.filter((id) => againStatus.get(id) === 'passed');
      regressions = regressions.filter((id) => againStatus.get(id) !== 'passed');
    } else {
      rerunNote = '; the rerun gave no per-test results, so every suspect counts as a regression';
    }
  }

  const unexplainedExit = after.exitCode !== 0 && !after.results.some((r) => r.status === 'failed');
  const verified = targetsFailing.length === 0 && regressions.length === 0 && !unexplainedExit;
  const reason = verified
    ? verifiedReason(targetsPassing, before, flaky)
    : failedReason({
        targetsFailing,
        regressions,
        after,
        unexplainedExit,
        messages: messageMap(after.results),
      });
  return {
    status: verified ? 'verified' : 'failed',
    mode: 'per-test',
    targetsPassing,
    targetsFailing,
    regressions,
    flaky,
    reason: `${reason}${rerunNote}${newFailureNote(before, after)}`,
  };
}

/** Why a run cannot count as passing, whatever its tests say; undefined when nothing stands in the way. */
function runProblem(run: SuiteRun): string | undefined {
  if (run.environmentProblem !== undefined) return `environment problem: ${run.environmentProblem}`;
  if (run.timedOut) return 'the suite timed out';
  if (run.collected === 0) return 'the run collected no tests, and an empty run never counts as passing';
  if (run.exitCode === null) return 'the suite was stopped before it finished';
  return undefined;
}

function exitCodeVerdict(input: VerifyInput): Verdict {
  const { after, targets } = input;
  const why = after.note ?? 'per-test results are unavailable';
  if (targets.length === 0 && input.baseline.exitCode === 0 && !input.baseline.parsed) {
    return {
      ...empty('exit-code'),
      reason: 'not verified: the suite already passed at baseline and no target was named',
    };
  }
  const count = after.collected === null ? 'the test count is unknown' : `${after.collected} tests counted`;
  if (after.exitCode === 0) {
    return {
      ...empty('exit-code'),
      status: 'verified',
      targetsPassing: targets,
      reason: `verified by exit code only: the suite exited 0 (${count}); targets and regressions could not be checked one by one (${why})`,
    };
  }
  return {
    ...empty('exit-code'),
    targetsFailing: targets,
    reason: `not verified: the suite exited ${after.exitCode} (judged by exit code only: ${why})`,
  };
}

/** Without a per-test baseline, the whole suite is the target: everything must pass. */
function wholeSuiteVerdict(after: SuiteRun): Verdict {
  const failing = after.results.filter((r) => r.status === 'failed').map((r) => r.id);
  const passing = after.results.filter((r) => r.status === 'passed').map((r) => r.id);
  const ok = failing.length === 0 && after.exitCode === 0;
  const scope = 'the baseline had no per-test results, so the whole suite is the target';
  return {
    ...empty('per-test'),
    status: ok ? 'verified' : 'failed',
    targetsPassing: ok ? passing : [],
    targetsFailing: failing,
    reason: ok
      ? `verified: all ${passing.length} tests pass (${scope}; regressions cannot be told apart)`
      : `not verified: ${failing.length > 0 ? `failing: ${list(failing)}` : `the suite exited ${after.exitCode}`} (${scope})`,
  };
}

function verifiedReason(targetsPassing: string[], before: SuiteRun, flaky: string[]): string {
  const held = before.results.filter((r) => r.status === 'passed').length;
  const flakyText = flaky.length === 0 ? '' : `; flaky (failed, then passed on rerun): ${list(flaky)}`;
  const targets = targetsPassing.length === 1 ? '1 target passes' : `${targetsPassing.length} targets pass`;
  return `verified: ${targets} (${list(targetsPassing)}); none of the ${held} tests that passed at baseline fails${flakyText}`;
}

interface FailedFacts {
  targetsFailing: string[];
  regressions: string[];
  after: SuiteRun;
  unexplainedExit: boolean;
  messages: Map<string, string>;
}

function failedReason(facts: FailedFacts): string {
  const parts: string[] = [];
  if (facts.targetsFailing.length > 0) {
    parts.push(`target still failing: ${withMessages(facts.targetsFailing, facts.messages)}`);
  }
  if (facts.regressions.length > 0) {
    parts.push(
      `regressed (passed at baseline, fail now): ${withMessages(facts.regressions, facts.messages)}`,
    );
  }
  if (facts.unexplainedExit) {
    parts.push(
      `the suite exited ${facts.after.exitCode} though no test failed (a hook, a crash or a threshold?)`,
    );
  }
  return `not verified: ${parts.join('; ')}`;
}

function newFailureNote(before: SuiteRun, after: SuiteRun): string {
  const known = new Set(before.results.map((r) => r.id));
  const fresh = after.results.filter((r) => r.status === 'failed' && !known.has(r.id)).map((r) => r.id);
  return fresh.length === 0 || !before.parsed ? '' : `; new tests failing: ${list(fresh)}`;
}

function withMessages(ids: string[], messages: Map<string, string>): string {
  const shown = ids.slice(0, 3).map((id) => {
    const first = messages.get(id)?.split('\n')[0];
    return first === undefined ? `${id} (did not run)` : first === '' ? id : `${id} (${first})`;
  });
  return ids.length > 3 ? `${shown.join(', ')} and ${ids.length - 3} more` : shown.join(', ');
}

function messageMap(results: TestResult[]): Map<string, string> {
  return new Map(results.map((r) => [r.id, r.status === 'skipped' ? 'skipped' : (r.message ?? '')]));
}

function statusMap(results: TestResult[]): Map<string, TestStatus> {
  return new Map(results.map((r) => [r.id, r.status]));
}

function empty(mode: Verdict['mode']): Verdict {
  return {
    status: 'failed',
    mode,
    targetsPassing: [],
    targetsFailing: [],
    regressions: [],
    flaky: [],
    reason: '',
  };
}

function list(ids: string[]): string {
  return ids.length > 5 ? `${ids.slice(0, 5).join(', ')} and ${ids.length - 5} more` : ids.join(', ');
}
