/** Shared shapes of the verify part: runners, invocations, per-test results and suite runs. */

/** The test runners keel can read per-test results from; `unknown` is judged by exit code. */
export type RunnerKind =
  | 'vitest'
  | 'jest'
  | 'node-test'
  | 'tap'
  | 'ava'
  | 'uvu'
  | 'mocha'
  | 'pytest'
  | 'go'
  | 'cargo'
  | 'unknown';

/** A project's test command and why keel chose it. */
export interface DetectedCommand {
  /** The shell command that runs the whole suite, as a person would type it. */
  command: string;
  runner: RunnerKind;
  /** Where the command came from, e.g. "package.json scripts.test". */
  source: string;
  /** For a package script: the script's text, which `npm test -- ARGS` appends to. */
  script?: string;
  /**
   * The commands the package scripts were followed to, in order, when that is more than the script's
   * own text (a chain, `pre`/`post` scripts, a nested `npm run`); each runs on its own.
   */
  steps?: CommandStep[];
}

/** One command of a followed script chain: a test runner's run, or another command run as a named check. */
export interface CommandStep {
  /** A name unique within the chain: the package script, with the program when a script has several. */
  name: string;
  command: string;
  /** `unknown` makes the step a check (lint, type check, audit), judged by its exit code. */
  runner: RunnerKind;
}

/** How per-test results are read back after a run; `exit-code` means they cannot be. */
export type ParseFormat =
  | 'vitest-json'
  | 'jest-json'
  | 'node-events'
  | 'tap'
  | 'ava-tap'
  | 'uvu-events'
  | 'junit'
  | 'go-json'
  | 'cargo'
  | 'mocha-json'
  | 'exit-code';

/** A ready-to-run suite command and where its results will be. */
export interface Invocation {
  /** The complete shell text: environment exports, the test command, output into `logFile`. */
  command: string;
  /** The test command with keel's flags, as a person would read it. */
  display: string;
  runner: RunnerKind;
  parse: ParseFormat;
  /** Where the runner writes its machine-readable report (file-based formats only). */
  reportFile: string;
  /** Where the command's combined stdout and stderr go; stdout-based formats are parsed from it. */
  logFile: string;
  /** Keep only results matching this, when the runner itself could not be told to filter. */
  resultFilter?: string;
  /** What keel could not do for this runner, in words for the user and the model. */
  note?: string;
}

export type TestStatus = 'passed' | 'failed' | 'skipped';

/** One test's outcome; `id` is stable across runs (`file > suite > test`, paths relative to the root). */
export interface TestResult {
  id: string;
  name: string;
  file?: string;
  status: TestStatus;
  durationMs?: number;
  message?: string;
}

/** The outcome of one run of the suite. */
export interface SuiteRun {
  /** The test command as shown to people (`Invocation.display`). */
  command: string;
  runner: RunnerKind;
  exitCode: number | null;
  timedOut: boolean;
  durationMs: number;
  results: TestResult[];
  /** The tail of the combined output, ANSI codes removed. */
  output: string;
  /** Whether per-test results were read; false means only the exit code speaks. */
  parsed: boolean;
  /** How many tests the run collected; null when unknown (exit-code mode without a summary line). */
  collected: number | null;
  note?: string;
  /** Set when the run failed for a reason outside the code under test: what is missing. */
  environmentProblem?: string;
  /** The chain's other steps (lint, type check, audit), each judged by its exit code. */
  checks?: CheckRun[];
}

/** One run of a check: a step of the test command that is not a test runner. */
export interface CheckRun {
  name: string;
  command: string;
  passed: boolean;
  exitCode: number | null;
  timedOut: boolean;
  durationMs: number;
  /** The tail of its output. */
  output: string;
  environmentProblem?: string;
}
