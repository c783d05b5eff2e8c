/** Running a suite: execute an invocation, read its results, and tell failing tests from a broken environment. */
import { closeSync, existsSync, fstatSync, mkdirSync, openSync, readSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { ExecResult } from '../policy/effects.js';
import { runCommand } from '../policy/exec.js';
import { findEnvironmentProblem } from './environment.js';
import { goJsonText } from './parse-go-json.js';
import { countFromSummary, filterResults, parseResults } from './parse-results.js';
import { stripAnsi } from './result-ids.js';
import type { Invocation, SuiteRun } from './types.js';

/** Runs shell text in the project root, e.g. the session's sandboxed exec. */
export type SuiteExec = (
  command: string,
  opts: { timeoutS: number; signal: AbortSignal },
) => Promise<ExecResult>;

export interface RunSuiteOptions {
  timeoutS: number;
  signal: AbortSignal;
  /** The complete environment for the default runner; defaults to this process's. */
  env?: NodeJS.ProcessEnv;
  /** Run the command some other way (a sandbox); it must run in `root` and need not capture much. */
  exec?: SuiteExec;
}

/** How much of the output a SuiteRun keeps: the tail, where failures and summaries are. */
export const OUTPUT_TAIL_CHARS = 1024 * 1024;
// Reports and logs larger than this are read from their end; results at the start are then lost
const READ_CAP_BYTES = 64 * 1024 * 1024;
// The command's own stdout and stderr carry only what escaped the log redirect (a shell error)
const DIRECT_CAPTURE_BYTES = 64 * 1024;

/** Run an invocation in `root` and return its per-test results, or its exit code and a note why not. */
export async function runSuite(
  root: string,
  invocation: Invocation,
  opts: RunSuiteOptions,
): Promise<SuiteRun> {
  // a report left by an earlier run must never be read as this run's
  rmSync(invocation.reportFile, { force: true });
  rmSync(invocation.logFile, { force: true });
  mkdirSync(dirname(invocation.reportFile), { recursive: true });
  mkdirSync(dirname(invocation.logFile), { recursive: true });

  const exec: SuiteExec =
    opts.exec ??
    ((command, o) =>
      runCommand(
        { shell: command },
        { ...o, cwd: root, maxOutputBytes: DIRECT_CAPTURE_BYTES, ...envOf(opts) },
      ));
  const started = performance.now();
  let exit: ExecResult;
  try {
    exit = await exec(invocation.command, { timeoutS: opts.timeoutS, signal: opts.signal });
  } catch (err) {
    return startFailure(invocation, `could not start the test command: ${(err as Error).message}`);
  }
  const durationMs = Math.round(performance.now() - started);

  const log = stripAnsi(readCapped(invocation.logFile) ?? '');
  const report = readCapped(invocation.reportFile);
  rmSync(invocation.logFile, { force: true });

  const outcome = parseResults(invocation.parse, { log, root, ...(report === undefined ? {} : { report }) });
  const results = !outcome.parsed
    ? []
    : invocation.resultFilter === undefined
      ? outcome.results
      : filterResults(outcome.results, invocation.resultFilter);
  const shown = invocation.parse === 'go-json' ? goJsonText(log) : log;
  const direct = stripAnsi(`${exit.stdout}${exit.stderr}`);
  const output = keepTail(direct === '' ? shown : `${shown}\n${direct}`);

  const notes: string[] = [];
  if (invocation.note !== undefined) notes.push(invocation.note);
  if (!outcome.parsed && invocation.parse !== 'exit-code') {
    notes.push(`per-test results unavailable (${outcome.why}); the run is judged by its exit code`);
  }
  if (exit.timedOut) notes.push(`the suite timed out after ${opts.timeoutS}s and was killed`);
  if (opts.signal.aborted) notes.push('the run was cancelled');

  const environmentProblem = findEnvironmentProblem({
    exitCode: exit.exitCode,
    output: `${log}\n${direct}`,
    results,
    isLocalModule: (name) => isLocalModule(root, name),
  });
  return {
    command: invocation.display,
    runner: invocation.runner,
    exitCode: exit.exitCode,
    timedOut: exit.timedOut,
    durationMs,
    results,
    output,
    parsed: outcome.parsed,
    collected: outcome.parsed ? results.length : countFromSummary(`${log}\n${direct}`),
    ...(notes.length === 0 ? {} : { note: notes.join('; ') }),
    ...(environmentProblem === undefined ? {} : { environmentProblem }),
  };
}

/** A `rerun` for `verify` that runs the whole suite again; no runner-neutral way filters by id. */
export function wholeSuiteRerun(
  root: string,
  invocation: Invocation,
  opts: RunSuiteOptions,
): (ids: string[]) => Promise<SuiteRun> {
  return () => runSuite(root, invocation, opts);
}

function envOf(opts: RunSuiteOptions): { env?: NodeJS.ProcessEnv } {
  return opts.env === undefined ? {} : { env: opts.env };
}

function startFailure(invocation: Invocation, problem: string): SuiteRun {
  return {
    command: invocation.display,
    runner: invocation.runner,
    exitCode: null,
    timedOut: false,
    durationMs: 0,
    results: [],
    output: '',
    parsed: false,
    collected: null,
    environmentProblem: problem,
  };
}

function readCapped(path: string): string | undefined {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch {
    return undefined;
  }
  try {
    const size = fstatSync(fd).size;
    const length = Math.min(size, READ_CAP_BYTES);
    const buffer = Buffer.alloc(length);
    readSync(fd, buffer, 0, length, size - length);
    return buffer.toString('utf8');
  } finally {
    closeSync(fd);
  }
}

function keepTail(text: string): string {
  if (text.length <= OUTPUT_TAIL_CHARS) return text;
  const dropped = text.length - OUTPUT_TAIL_CHARS;
  return `[... ${dropped} chars omitted ...]\n${text.slice(dropped)}`;
}

/** A Python module that exists in the project is code under test, not a missing dependency. */
function isLocalModule(root: string, name: string): boolean {
  return ['.', 'src', 'lib'].some(
    (dir) => existsSync(join(root, dir, name)) || existsSync(join(root, dir, `${name}.py`)),
  );
}
