/** A project's test suite as the rest of keel uses it: found once, run many times, described in words. */
import { join } from 'node:path';
import { detectTestCommand, fromCommand } from './detect.js';
import { buildInvocation } from './reporters.js';
import { runSuite, type SuiteExec } from './run.js';
import { runSteps } from './run-steps.js';
import type { DetectedCommand, SuiteRun } from './types.js';
import { collectionError } from './verifier.js';

export interface SuiteRunOptions {
  filter?: string;
  signal: AbortSignal;
  /** Run the command this way (the session's sandbox); default: a plain process. */
  exec?: SuiteExec;
  timeoutS?: number;
}

/** The project's tests: which command, and how to run it with per-test results. */
export class TestSuite {
  private runs = 0;

  constructor(
    readonly root: string,
    readonly detected: DetectedCommand,
    /** A folder the test command may write its report into (writable in the sandbox too). */
    private readonly reportsDir: string,
  ) {}

  /** Run the suite (or the tests matching `filter`). */
  async run(opts: SuiteRunOptions): Promise<SuiteRun> {
    this.runs++;
    const reportFile = join(this.reportsDir, `run-${this.runs}.report`);
    const runOpts = {
      timeoutS: opts.timeoutS ?? 600,
      signal: opts.signal,
      ...(opts.exec ? { exec: opts.exec } : {}),
    };
    const { steps } = this.detected;
    if (steps !== undefined) {
      return runSteps(this.root, this.detected, steps, {
        ...runOpts,
        reportFile,
        ...(opts.filter ? { filter: opts.filter } : {}),
      });
    }
    const invocation = buildInvocation(this.detected, {
      reportFile,
      ...(opts.filter ? { filter: opts.filter } : {}),
    });
    return runSuite(this.root, invocation, runOpts);
  }
}

/** The suite for a workspace: the configured command, else the detected one, else undefined. */
export function findSuite(root: string, reportsDir: string, testCommand?: string): TestSuite | undefined {
  const detected = testCommand ? fromCommand(root, testCommand, 'test_command') : detectTestCommand(root);
  return detected ? new TestSuite(root, detected, reportsDir) : undefined;
}

/**
 * The `python -m pytest` form of a suite whose bare `pytest` could not import the project: `pytest` puts
 * the test files' folders on sys.path, `python -m` the current folder too, so a package at the root of a
 * `src`-less project is importable only that way. Undefined when the run says nothing of the kind.
 */
export function importableForm(suite: TestSuite, run: SuiteRun, reportsDir: string): TestSuite | undefined {
  const { detected } = suite;
  if (detected.runner !== 'pytest' || detected.steps !== undefined || detected.script !== undefined)
    return undefined;
  const bare = /^((?:\S*\/)?bin\/)?pytest(?=\s|$)/.exec(detected.command);
  if (bare === null) return undefined;
  const cannotImport = /\b(ModuleNotFoundError|ImportError)\b/.test(
    [run.output, ...run.results.map((r) => r.message ?? '')].join('\n'),
  );
  if (collectionError(run) === undefined || !cannotImport) return undefined;
  const python = bare[1] === undefined ? 'python3' : `${bare[1]}python`;
  const command = `${python} -m pytest${detected.command.slice(bare[0].length)}`;
  return new TestSuite(suite.root, { ...detected, command }, reportsDir);
}

/** Counts of a run: passed, failed, skipped. */
export function counts(run: SuiteRun): { passed: number; failed: number; skipped: number } {
  const n = (s: string) => run.results.filter((r) => r.status === s).length;
  return { passed: n('passed'), failed: n('failed'), skipped: n('skipped') };
}

/** A run in a few lines for the model or a person: the verdict, the counts, each failure with its message. */
export function describeRun(run: SuiteRun, maxFailures = 15): string {
  if (run.environmentProblem) {
    return `The tests could not run: ${run.environmentProblem}\n${tail(run.output, 40)}`;
  }
  if (!run.parsed) {
    const verdict = run.exitCode === 0 ? 'passed' : `failed (exit code ${run.exitCode ?? 'none'})`;
    const note = run.note ? ` (${run.note})` : '';
    return [`\`${run.command}\` ${verdict}${note}\n${tail(run.output, 60)}`, ...describeChecks(run)].join(
      '\n',
    );
  }
  const c = counts(run);
  const lines = [`\`${run.command}\`: ${c.passed} passed, ${c.failed} failed, ${c.skipped} skipped`];
  if (run.results.length === 0) lines.push('No tests were collected: this never counts as passing.');
  const failures = run.results.filter((r) => r.status === 'failed');
  for (const f of failures.slice(0, maxFailures)) {
    lines.push(`FAIL ${f.id}${f.message ? `\n  ${f.message.split('\n').slice(0, 8).join('\n  ')}` : ''}`);
  }
  if (failures.length > maxFailures) lines.push(`... and ${failures.length - maxFailures} more failures`);
  if (run.timedOut) lines.push('The suite timed out and was killed.');
  lines.push(...describeChecks(run));
  return lines.join('\n');
}

/** The chain's checks in a line each; a failing one with the end of its output. */
function describeChecks(run: SuiteRun): string[] {
  return (run.checks ?? []).map((check) => {
    if (check.passed) return `check \`${check.name}\` (\`${check.command}\`) passed`;
    const how = check.timedOut ? 'timed out' : `failed (exit code ${check.exitCode ?? 'none'})`;
    return `check \`${check.name}\` (\`${check.command}\`) ${how}\n${tail(check.output, 15)}`;
  });
}

function tail(text: string, lines: number): string {
  const all = text.trimEnd().split('\n');
  return all.length <= lines
    ? all.join('\n')
    : `[... ${all.length - lines} lines cut]\n${all.slice(-lines).join('\n')}`;
}
