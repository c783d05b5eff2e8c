/** What a fix run asks the model: a plan, an attempt, and why its test edits were set aside. */

import { describeRun } from '../verify/suite.js';
import type { SuiteRun } from '../verify/types.js';

export function planPrompt(issue: string, before: SuiteRun, targets: string[]): string {
  return [
    'Investigate this issue in the repository and write a short plan (at most 6 steps) for the smallest fix.',
    '',
    `Issue:\n${issue}`,
    '',
    `Failing tests to make pass:\n${targets.map((t) => `- ${t}`).join('\n')}`,
    '',
    `Test results now:\n${describeRun(before)}`,
  ].join('\n');
}

export function attemptPrompt(issue: string, plan: string, targets: string[], feedback: string): string {
  return [
    'Fix this issue by editing the code. Do not edit the tests unless they are wrong.',
    'Use run_tests to check your change. When you are done, reply with one paragraph: what was wrong and what you changed.',
    '',
    `Issue:\n${issue}`,
    '',
    `Plan:\n${plan}`,
    '',
    `These tests must pass, and every test that passes now must still pass:\n${targets.map((t) => `- ${t}`).join('\n')}`,
    ...(feedback ? ['', feedback] : []),
  ].join('\n');
}

/** Tell the model its test edits did not count, so its next attempt fixes the code instead. */
export function testEditFeedback(edits: string[]): string {
  return `\nYour edits to existing tests (${edits.join(', ')}) were set aside: the verdict uses the repository's tests as they were before your change. Fix the code, not the tests.`;
}
