/** `keel loop`: edit, test and review in the current repository until the work passes or stops progressing. */
import { statSync } from 'node:fs';
import type { LoopResult } from '../fix/loop.js';
import { EXIT, exitCodeFor } from '../term/exit-codes.js';
import { inertLine } from '../term/inert.js';
import { type CommonFlags, ConfigError, load } from '../term/options.js';
import { readPrompt } from './prompt-input.js';
import { dim, red, renderEvent } from './render.js';
import { abortOnInterrupt, openVerbLedger, verbFailure, warn } from './run-verb.js';

export interface LoopFlags extends CommonFlags {
  message?: string;
  maxIterations?: number;
  testCommand?: string;
}

/** Run `keel loop`; returns the exit status. */
export async function runLoopCommand(words: string[], flags: LoopFlags): Promise<number> {
  const fail = verbFailure('loop', flags.json, { status: false });
  const task = await readPrompt(words, flags.message);
  if (!task) return fail('CONFIG_ERROR', 'no task given; pass it with -m TEXT, as arguments, or on stdin');

  let setup: ReturnType<typeof load>;
  try {
    setup = load(flags);
  } catch (err) {
    if (err instanceof ConfigError) return fail('CONFIG_ERROR', err.message);
    throw err;
  }
  if (!statSync(setup.cwd, { throwIfNoEntry: false })?.isDirectory())
    return fail('CONFIG_ERROR', `workspace ${setup.cwd} is not a folder`);
  for (const warning of setup.loaded.warnings) warn(warning);

  // every call in the team store's ledger: a store keel cannot reach stops the loop here, before any call
  const { PER_SESSION } = await import('../model/open-ledger.js');
  const runLedger = await openVerbLedger(setup.loaded.config, PER_SESSION);
  if ('error' in runLedger) return fail('ENVIRONMENT_ERROR', runLedger.error);

  const interrupt = abortOnInterrupt();
  // progress quotes test output, test ids and the reviewer's words: one inert line each
  const progress = (message: string) => process.stderr.write(`${dim(inertLine(message))}\n`);
  const { runLoop } = await import('../fix/loop.js');
  let result: LoopResult;
  try {
    result = await runLoop({
      cwd: setup.cwd,
      task,
      maxIterations: flags.maxIterations ?? 5,
      ...(flags.testCommand ? { testCommand: flags.testCommand } : {}),
      loaded: setup.loaded,
      signal: interrupt.signal,
      calls: runLedger.calls,
      onProgress: progress,
      ...(flags.json ? {} : { onEvent: renderEvent }),
    });
  } catch (err) {
    if (err instanceof ConfigError) return fail('CONFIG_ERROR', err.message);
    throw err;
  } finally {
    interrupt.release();
    await runLedger.close();
  }
  const exit = exitCodeFor(result.code);
  if (flags.json) {
    process.stdout.write(`${JSON.stringify(loopDocument(result, exit), null, 2)}\n`);
    return exit;
  }
  const head = result.code === 'COMPLETED' ? 'COMPLETED' : red(result.code);
  process.stdout.write(`\n${head}: ${inertLine(result.summary)}\n`);
  if (result.files.length) process.stdout.write(`changed: ${result.files.map(inertLine).join(', ')}\n`);
  const tokens = result.tokens.input + result.tokens.output;
  const cost = result.costUsd === null ? '' : ` · $${result.costUsd.toFixed(4)}`;
  process.stderr.write(
    dim(
      `loop ${result.runId} · ${result.iterations.length} round${result.iterations.length === 1 ? '' : 's'} · ${tokens} tokens${cost}${
        result.snapshot && result.files.length ? ` · undo all rounds: keel undo ${result.runId}` : ''
      }\n`,
    ),
  );
  return exit;
}

/** The `--json` document for a loop: the session contract plus each round's failing tests and review. */
export function loopDocument(r: LoopResult, exit: number): Record<string, unknown> {
  return {
    session_id: r.runId,
    mode: 'loop',
    code: r.code,
    exit_code: exit,
    reason: r.reason,
    // a run that ended on a usage, environment or model error is also the one error shape
    ...(isError(exit) ? { error: r.reason } : {}),
    ...(r.code === 'BUDGET_EXCEEDED' ? { budget: 'max_iterations' } : {}),
    summary: r.summary,
    // `rounds` means model rounds everywhere in the --json contract; iterations are listed below
    rounds: r.modelRounds,
    tokens: { ...r.tokens, total: r.tokens.input + r.tokens.output },
    cost_usd: r.costUsd,
    files_changed: r.files,
    test_command: r.testCommand,
    snapshot: r.snapshot,
    iterations: r.iterations.map((it) => ({
      round: it.round,
      session_id: it.sessionId,
      session_code: it.sessionCode,
      files_changed: it.files,
      passed: it.passed,
      failed: it.failed,
      failing: it.failing,
      ...(it.review
        ? {
            review: {
              verdict: it.review.verdict,
              findings: it.review.findings,
              readable: it.review.readable,
              model: it.review.model,
            },
          }
        : {}),
    })),
  };
}

function isError(exit: number): boolean {
  return exit === EXIT.usage || exit === EXIT.environment || exit === EXIT.model;
}
