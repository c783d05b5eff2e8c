/**
 * The chain's checks in the verdict. A check (lint, type check, audit) that passed at baseline and fails
 * after the change makes the change not verified, named as a failed check and never as a test regression;
 * a check that already failed at baseline is listed and does not count, since the change did not break it.
 * A check that passed at baseline and cannot run after the change for a reason outside the code (the
 * network, a missing tool) is an environment problem: keel cannot vouch for a change when part of the user's
 * test command did not run. One that failed at baseline too is listed as already failing, whatever the cause.
 */
import type { CheckRun, SuiteRun } from './types.js';
import type { Verdict } from './verifier.js';

/** A check at baseline and after the change. */
export interface CheckVerdict {
  name: string;
  command: string;
  before: 'passed' | 'failed';
  after: 'passed' | 'failed' | 'not run';
  /** Passed at baseline and fails now: this blocks "verified". */
  broken: boolean;
}

/** Add the checks of `before` and `after` to a verdict; a newly failing check makes it not verified. */
export function judgeChecks(verdict: Verdict, before: SuiteRun, after: SuiteRun): Verdict {
  const baseChecks = before.checks ?? [];
  if (baseChecks.length === 0) return verdict;
  const afterByName = new Map((after.checks ?? []).map((check) => [check.name, check]));
  const checks: CheckVerdict[] = baseChecks.map((base) => {
    const now = afterByName.get(base.name);
    const afterState = now === undefined ? 'not run' : now.passed ? 'passed' : 'failed';
    return {
      name: base.name,
      command: base.command,
      before: base.passed ? 'passed' : 'failed',
      after: afterState,
      broken: base.passed && afterState === 'failed',
    };
  });
  // keel cannot vouch for a change when part of the user's own test command that ran at baseline could not
  // run here; one that already failed at baseline (an audit that needs the network) says nothing either way
  const passedBefore = new Set(baseChecks.filter((check) => check.passed).map((check) => check.name));
  const unrunnable = (after.checks ?? []).find(
    (check) => !check.passed && check.environmentProblem && passedBefore.has(check.name),
  );
  if (unrunnable?.environmentProblem !== undefined) {
    const problem = `${label(unrunnable)} could not run: ${unrunnable.environmentProblem}`;
    return {
      ...verdict,
      checks,
      checksBroken: [],
      status: 'failed',
      environmentProblem: problem,
      reason: `not verified: environment problem: ${problem}`,
    };
  }
  const broken = checks.filter((check) => check.broken);
  const alreadyFailing = checks.filter((check) => check.before === 'failed');
  const notes: string[] = [];
  if (alreadyFailing.length > 0) {
    notes.push(
      `${alreadyFailing.map(label).join(', ')} already failed at baseline and ${alreadyFailing.length === 1 ? 'does' : 'do'} not count`,
    );
  }
  const withChecks = { ...verdict, checks, checksBroken: broken.map((check) => check.name) };
  if (broken.length === 0) {
    return notes.length === 0
      ? withChecks
      : { ...withChecks, reason: `${verdict.reason}; ${notes.join('; ')}` };
  }
  const brokenText = broken
    .map((check) => `${label(check)} passed before and fails after the change`)
    .join('; ');
  const rest = verdict.reason.replace(/^(not )?verified: /, '');
  const reason =
    verdict.status === 'verified'
      ? `not verified: ${brokenText} (the tests alone would verify: ${rest})`
      : `${verdict.reason}; ${brokenText}`;
  return { ...withChecks, status: 'failed', reason: [reason, ...notes].join('; ') };
}

/** `check \`lint\` (xo)`: the step's name and the program it runs. */
function label(check: Pick<CheckRun, 'name' | 'command'>): string {
  const program = check.command.trim().split(/\s+/).slice(0, 3).join(' ');
  return `check \`${check.name}\` (${program})`;
}
