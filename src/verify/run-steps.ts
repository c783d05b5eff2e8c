/**
 * Running a followed script chain: every test step with its runner's reporter (per-test results), every
 * other step (lint, type check, audit) as a named check judged by its exit code. All steps run, in order,
 * through the same exec as a plain suite run, so a failing lint at baseline cannot hide the tests.
 */
import { dirname, join } from 'node:path';
import { buildInvocation } from './reporters.js';
import { joinId } from './result-ids.js';
import { type RunSuiteOptions, runSuite } from './run.js';
import { shellQuote } from './shell-quote.js';
import type { CheckRun, CommandStep, DetectedCommand, SuiteRun, TestResult } from './types.js';

export interface StepsRunOptions extends RunSuiteOptions {
  /** Each step's report goes to `<reportFile>.<n>`. */
  reportFile: string;
  /** A test name or file: only the test steps run, with the filter. */
  filter?: string;
}

/** Run the steps of `detected` in `root` and combine them into one suite run with its checks. */
export async function runSteps(
  root: string,
  detected: DetectedCommand,
  steps: CommandStep[],
  opts: StepsRunOptions,
): Promise<SuiteRun> {
  const tests: Array<{ step: CommandStep; run: SuiteRun }> = [];
  const checks: CheckRun[] = [];
  let durationMs = 0;
  for (const [index, step] of steps.entries()) {
    if (opts.signal.aborted) break;
    const isTest = step.runner !== 'unknown';
    // the model asked for some tests: the checks say nothing about them
    if (!isTest && opts.filter !== undefined) continue;
    const invocation = buildInvocation(
      { command: step.command, runner: step.runner, source: detected.source },
      {
        reportFile: `${opts.reportFile}.${index + 1}`,
        ...(isTest && opts.filter !== undefined ? { filter: opts.filter } : {}),
      },
    );
    const run = await runSuite(
      root,
      { ...invocation, command: `${packageBinPath(root)}\n${invocation.command}` },
      opts,
    );
    durationMs += run.durationMs;
    if (isTest) tests.push({ step, run });
    else checks.push(toCheck(step, run));
  }
  return combine(detected, tests, checks, durationMs);
}

/**
 * What npm puts on PATH before a script runs: every `node_modules/.bin` from the package up to `/`. The
 * steps run without npm, so they get it here.
 */
function packageBinPath(root: string): string {
  const dirs: string[] = [];
  for (let dir = root; ; dir = dirname(dir)) {
    dirs.push(join(dir, 'node_modules', '.bin'));
    if (dirname(dir) === dir) break;
  }
  return `PATH=${dirs.map(shellQuote).join(':')}:"$PATH"; export PATH`;
}

function toCheck(step: CommandStep, run: SuiteRun): CheckRun {
  return {
    name: step.name,
    command: step.command,
    passed: run.exitCode === 0 && !run.timedOut,
    exitCode: run.exitCode,
    timedOut: run.timedOut,
    durationMs: run.durationMs,
    output: run.output,
    ...(run.environmentProblem === undefined ? {} : { environmentProblem: run.environmentProblem }),
  };
}

function combine(
  detected: DetectedCommand,
  tests: Array<{ step: CommandStep; run: SuiteRun }>,
  checks: CheckRun[],
  durationMs: number,
): SuiteRun {
  // two runs of the same tests (`test:node && test:edge`) must stay two sets of results
  const prefix = tests.length > 1;
  const results: TestResult[] = tests.flatMap(({ step, run }) =>
    prefix ? run.results.map((r) => ({ ...r, id: joinId([step.name, r.id]) })) : run.results,
  );
  const runs = tests.map((t) => t.run);
  const parsed = runs.length > 0 && runs.every((run) => run.parsed);
  const counted = runs.map((run) => run.collected);
  const exitCodes = runs.map((run) => run.exitCode);
  const notes = tests.flatMap(({ step, run }) =>
    run.note === undefined ? [] : [`${step.name}: ${run.note}`],
  );
  const environmentProblem = runs.find((run) => run.environmentProblem !== undefined)?.environmentProblem;
  return {
    command: detected.command,
    runner: detected.runner,
    exitCode: exitCodes.includes(null) ? null : (exitCodes.find((code) => code !== 0) ?? 0),
    timedOut: runs.some((run) => run.timedOut),
    durationMs,
    results,
    output: tests
      .map(({ step, run }) => (prefix ? `--- ${step.name}: ${run.command}\n${run.output}` : run.output))
      .join('\n'),
    parsed,
    collected: parsed
      ? results.length
      : counted.every((n) => n !== null)
        ? counted.reduce((a, b) => (a ?? 0) + (b ?? 0), 0)
        : null,
    ...(notes.length === 0 ? {} : { note: notes.join('; ') }),
    ...(environmentProblem === undefined ? {} : { environmentProblem }),
    checks,
  };
}
