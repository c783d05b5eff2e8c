/** `keel fix`: fix an issue in a snapshot and report "verified" only when the repository's tests prove it. */
import { existsSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { newSessionId } from '../agent/session.js';
import { dieWithWorker } from '../fix/parent-watch.js';
import type { FixResult } from '../fix/run.js';
import type { CallContext } from '../model/call-ledger.js';
import { unpricedUnderCap } from '../model/open-ledger.js';
import { scopeProblem } from '../policy/scope.js';
import { EXIT, exitCodeFor } from '../term/exit-codes.js';
import { inertLine } from '../term/inert.js';
import { type CommonFlags, ConfigError, load, workspace } from '../term/options.js';
import { dim, renderEvent } from './render.js';
import { abortOnInterrupt, openVerbLedger, verbFailure, warn } from './run-verb.js';

export interface FixFlags extends CommonFlags {
  repo?: string;
  issue?: string;
  targetTest?: string[];
  testCommand?: string;
  maxAttempts?: number;
  allowTestEdits?: boolean;
  /** keel batch's: go on with this fix run, killed before it ended (see FixOptions.resumeRun). */
  resumeRun?: string;
  /** USD the run may spend on model calls, held against the team store's ledger before each call. */
  costCap?: number;
  /** keel goal's: the writable scope of the fix's sessions (paths in the repository; default: all of it). */
  scope?: string[];
  /** keel goal's: the commit the fix branches from instead of HEAD. */
  base?: string;
}

/** Run `keel fix`; returns the exit status. */
export async function runFixCommand(flags: FixFlags): Promise<number> {
  const fail = verbFailure('fix', flags.json, { status: true });
  // from a subfolder, the repository's root (as every verb finds it), so its keel.toml applies
  const given = workspace({ cwd: flags.repo ?? flags.cwd });
  if (!statSync(given, { throwIfNoEntry: false })?.isDirectory())
    return fail('CONFIG_ERROR', `--repo ${given} is not a folder`);
  // git answers with real paths: a path through a link would not lie inside the repository git names
  const repo = realpathSync(given);
  if (flags.resumeRun !== undefined && !resumeRun(flags.resumeRun).resumeRun)
    return fail(
      'CONFIG_ERROR',
      `--resume-run ${flags.resumeRun} is not a fix run id (20261205-024000-1a2b3c)`,
    );
  const issue = readIssue(flags.issue);
  if (issue instanceof Error) return fail('CONFIG_ERROR', issue.message);
  for (const path of flags.scope ?? []) {
    const problem = scopeProblem(path);
    if (problem) return fail('CONFIG_ERROR', `--scope ${problem}`);
  }
  if (flags.base !== undefined && !/^[A-Za-z0-9][A-Za-z0-9._/@^~-]*$/.test(flags.base))
    return fail('CONFIG_ERROR', `--base ${JSON.stringify(flags.base)} is not a commit id or a ref name`);

  let loaded: ReturnType<typeof load>['loaded'];
  try {
    loaded = load({ ...flags, cwd: repo }).loaded;
  } catch (err) {
    if (err instanceof ConfigError) return fail('CONFIG_ERROR', err.message);
    throw err;
  }
  for (const warning of loaded.warnings) warn(warning);
  // a model keel cannot use is said before any snapshot: no branch or worktree is made for nothing
  try {
    const { createModelClient } = await import('../model/create.js');
    const { fixRouting } = await import('../fix/routing.js');
    const { scoreDifficulty } = await import('../model/difficulty.js');
    // routed: every tier must be usable, and a calibration file readable, before anything starts
    const routed = fixRouting(loaded, process.env, () => scoreDifficulty(issue));
    createModelClient(loaded.config, process.env, {
      cwd: repo,
      ...(routed ? { routing: routed.routing } : {}),
    });
  } catch (err) {
    if (err instanceof ConfigError) return fail('CONFIG_ERROR', err.message);
    throw err;
  }

  // a cap is held to the cent: every model the run may call needs a price before anything starts
  const unpriced = unpricedUnderCap(loaded, flags.costCap);
  if (unpriced) return fail('CONFIG_ERROR', unpriced);

  // the snapshot is a branch and a worktree of this repository: a git folder keel cannot write is said now
  const { unwritable } = await import('./writable.js');
  const why = unwritable(repo, { workTree: false });
  if (why)
    return fail(
      'ENVIRONMENT_ERROR',
      `this repository cannot take a fix branch: ${why}. keel fix adds a branch and a worktree to the repository's git folder; make it writable`,
    );

  // every model call lands in the team store's ledger as it ends: a store keel cannot reach stops the run
  // here, before any call. In a batch the calls go under the batch's run and task (batch/worker.ts)
  if (flags.resumeRun !== undefined && !RUN_ID.test(flags.resumeRun))
    return fail('CONFIG_ERROR', `--resume-run: not a fix run id: ${JSON.stringify(flags.resumeRun)}`);
  const { runId, ledgerContext } = runIds(flags.resumeRun);
  const runLedger = await openVerbLedger(
    loaded.config,
    ledgerContext,
    flags.costCap !== undefined ? { costCapUsd: flags.costCap } : {},
  );
  if ('error' in runLedger) return fail('ENVIRONMENT_ERROR', runLedger.error);

  // Ctrl+C or a kill ends the run CANCELLED, with its log ended and no branch or worktree left behind
  const interrupt = abortOnInterrupt();
  // a batch worker's fix dies with its worker (stdin's end says it is gone), its log left to resume
  dieWithWorker();
  // progress quotes test output, test ids and the model's reasons: one inert line each
  const ticker = new Ticker(process.stderr);
  const progress = (message: string) => {
    ticker.clear();
    process.stderr.write(`${dim('keel fix:')} ${inertLine(message)}\n`);
  };
  const { runFix } = await import('../fix/run.js');
  let result: FixResult;
  try {
    result = await runFix({
      repo,
      issue,
      targetTests: flags.targetTest ?? [],
      ...(flags.testCommand ? { testCommand: flags.testCommand } : {}),
      maxAttempts: flags.maxAttempts ?? 3,
      runId,
      calls: runLedger.calls,
      ...resumeRun(flags.resumeRun),
      allowTestEdits: flags.allowTestEdits === true,
      ...(flags.scope?.length ? { scope: flags.scope } : {}),
      ...(flags.base !== undefined ? { base: flags.base } : {}),
      loaded,
      signal: interrupt.signal,
      onProgress: progress,
      onWaiting: (label) => ticker.start(label),
      ...(flags.json ? {} : { onEvent: renderEvent }),
    });
  } catch (err) {
    // a run to resume that is not this repository's and issue's, or whose earlier process will not stop
    const { RunError } = await import('../agent/terminal.js');
    if (err instanceof RunError && (err.code === 'CONFIG_ERROR' || err.code === 'ENVIRONMENT_ERROR'))
      return fail(err.code, err.message);
    throw err;
  } finally {
    ticker.stop();
    interrupt.release();
    await runLedger.close();
  }
  const exit = exitCodeFor(result.code);
  if (flags.json) {
    process.stdout.write(`${JSON.stringify(fixDocument(result, exit), null, 2)}\n`);
    return exit;
  }
  if (process.stdout.isTTY && result.paths) await printRationale(result.paths.rationale);
  printVerdict(result);
  return exit;
}

/**
 * The fix's run id and what its model calls are recorded under. A `keel batch` worker chooses the fix's
 * run id (KEEL_BATCH_FIX_RUN_ID), so its journal names the fix's worktree and branch before the fix ends
 * (only keel's own id shape is taken: it names a folder), and hands its batch run and task
 * (KEEL_BATCH_RUN_ID, KEEL_BATCH_TASK_ID): the ledger's run is then the batch's. Alone, it is the fix's:
 * the resumed run's own id when it goes on with one.
 */
function runIds(resume: string | undefined): { runId: string; ledgerContext: CallContext } {
  const given = resume ?? process.env.KEEL_BATCH_FIX_RUN_ID;
  const runId = given && RUN_ID.test(given) ? given : newSessionId();
  const batchRun = process.env.KEEL_BATCH_RUN_ID;
  const task = process.env.KEEL_BATCH_TASK_ID;
  return {
    runId,
    ledgerContext: batchRun ? { runId: batchRun, ...(task ? { taskId: task } : {}) } : { runId },
  };
}

/** keel's own shape of a fix run id (`20261205-024000-1a2b3c`): it names a folder, so nothing else is taken. */
const RUN_ID = /^\d{8}-\d{6}-[0-9a-f]{6}$/;

/** The fix run to go on with (its shape checked before). */
function resumeRun(id: string | undefined): { resumeRun?: string } {
  return id ? { resumeRun: id } : {};
}

/**
 * A test run's label with the time it has taken, redrawn each second on a terminal's stderr; a pipe
 * gets only the line that says how long it took when it ends.
 */
class Ticker {
  private timer: NodeJS.Timeout | undefined;
  private label = '';
  private started = 0;
  constructor(private readonly out: NodeJS.WriteStream) {}

  start(label: string): () => void {
    this.stop();
    if (!this.out.isTTY || process.env.TERM === 'dumb') return () => {};
    this.label = label;
    this.started = Date.now();
    this.draw();
    this.timer = setInterval(() => this.draw(), 1000);
    this.timer.unref();
    return () => this.stop();
  }

  /** Take the line away for a moment (a progress line is about to be printed); the next tick draws it again. */
  clear(): void {
    if (this.timer) this.out.write('\r\x1b[K');
  }

  stop(): void {
    if (!this.timer) return;
    clearInterval(this.timer);
    this.timer = undefined;
    this.out.write('\r\x1b[K');
  }

  private draw(): void {
    const secs = Math.floor((Date.now() - this.started) / 1000);
    this.out.write(`\r${dim(`keel fix: ${inertLine(this.label)} · ${secs} s`)}\x1b[K`);
  }
}

/** The rationale the run wrote (rationale.md), drawn as Markdown for a person at a terminal. */
async function printRationale(path: string): Promise<void> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return;
  }
  const { renderMarkdown } = await import('./markdown.js');
  process.stdout.write(`\n${renderMarkdown(text)}`);
}

function readIssue(issue: string | undefined): string | Error {
  if (!issue?.trim())
    return new Error('--issue is required: the bug report as text, or @FILE to read it from a file');
  if (!issue.startsWith('@')) return issue.trim();
  const path = resolve(issue.slice(1));
  if (!existsSync(path)) return new Error(`--issue ${issue}: no such file ${path}`);
  const text = readFileSync(path, 'utf8').trim();
  return text || new Error(`--issue ${issue}: the file is empty`);
}

/** The `--json` document for a fix: the session contract plus the fix fields (DESIGN.md). */
export function fixDocument(r: FixResult, exit: number): Record<string, unknown> {
  return {
    session_id: r.runId,
    mode: 'fix',
    code: r.code,
    ...(r.budget ? { budget: r.budget } : {}),
    exit_code: exit,
    reason: r.reason,
    summary: r.summary,
    // a run that ended on a usage, environment or model error is also the one error shape
    ...(isError(exit) ? { error: r.reason } : {}),
    rounds: r.rounds,
    tokens: { ...r.tokens, total: r.tokens.input + r.tokens.output },
    cost_usd: r.costUsd,
    files_changed: r.files,
    status: r.status,
    attempts: r.attempts,
    branch: r.branch,
    commit: r.commit,
    verification: r.verification,
    test_command: r.testCommand,
    snapshot: r.snapshot,
    worktree: r.worktree,
    run_dir: r.paths?.runDir ?? null,
    trace: r.paths?.trace ?? null,
    rationale: r.paths?.rationale ?? null,
    pr_description: r.paths?.pr ?? null,
    diff: r.paths?.diff ?? null,
  };
}

/** The human verdict, one line no summary can extend into a forged one; file names are the repository's, so inert too. */
function printVerdict(r: FixResult): void {
  const head = r.status === 'verified' ? 'VERIFIED' : `NOT VERIFIED (${r.code})`;
  process.stdout.write(`\n${head}: ${inertLine(r.summary)}\n`);
  if (r.branch)
    process.stdout.write(
      `branch:    ${inertLine(r.branch)}${r.commit ? ` @ ${r.commit.slice(0, 12)}` : ''}\n`,
    );
  if (r.files.length) process.stdout.write(`changed:   ${r.files.map(inertLine).join(', ')}\n`);
  const edits = r.verification?.testEdits ?? [];
  if (edits.length) {
    const how = r.verification?.testEditsCounted
      ? 'COUNTED (--allow-test-edits)'
      : "set aside: judged with the baseline's tests";
    process.stdout.write(`test edits: ${edits.map(inertLine).join(', ')} (${how})\n`);
  }
  if (r.paths) {
    const { rationale, pr, diff } = r.paths;
    process.stdout.write(
      `rationale: ${inertLine(rationale)}\npr:        ${inertLine(pr)}\ndiff:      ${inertLine(diff)}\n`,
    );
  }
  // only a kept attempt is named: an interrupted run or one that never attempted leaves nothing behind
  if (r.status !== 'verified' && r.worktree) {
    process.stdout.write(dim(`the attempt is kept for inspection in ${inertLine(r.worktree)}\n`));
  }
}

export { EXIT };

function isError(exit: number): boolean {
  return exit === EXIT.usage || exit === EXIT.environment || exit === EXIT.model;
}
