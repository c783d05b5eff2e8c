/**
 * `keel review [--staged | --since REV]`: a read-only session in which the model (or `[roles.review]`)
 * reviews the current diff and answers APPROVE (exit 0) or REVISE (exit 2, with the reasons on stdout).
 */
import { statSync } from 'node:fs';
import type { SessionOutcome } from '../agent/session.js';
import { recordEvent } from '../agent/stored-sessions.js';
import { count, RunError } from '../agent/terminal.js';
import { parseReview, type Review, reviewPrompt, VERDICT_FORMAT } from '../fix/review.js';
import { createModelClient, createRoleModelClient } from '../model/create.js';
import { emptyTree, findRepo, GitError, git, gitTry, noRepoReason, worktreeTree } from '../policy/git.js';
import { EXIT, exitCodeFor } from '../term/exit-codes.js';
import { inertLine } from '../term/inert.js';
import { type CommonFlags, ConfigError, load } from '../term/options.js';
import { dim, red, renderEvent } from './render.js';

export interface ReviewFlags extends CommonFlags {
  staged?: boolean;
  since?: string;
  /** What the change is for, as the person typed it after `keel review`. */
  task?: string;
}

/** The diff under review, in git's words and in a person's. */
interface Change {
  patch: string;
  files: string[];
  /** `the working tree against HEAD`, `the staged changes`, `the working tree since v1.2`. */
  describe: string;
  kind: 'working-tree' | 'staged' | 'since';
  base: string;
}

const DIFF = ['--no-color', '--no-ext-diff', '--no-textconv'];

/** Run `keel review`; returns the exit status. */
export async function runReview(flags: ReviewFlags): Promise<number> {
  const fail = (code: 'CONFIG_ERROR' | 'ENVIRONMENT_ERROR' | 'MODEL_ERROR', message: string, extra = {}) => {
    const exit = exitCodeFor(code);
    if (flags.json)
      process.stdout.write(
        `${JSON.stringify({ code, exit_code: exit, error: message, ...extra }, null, 2)}\n`,
      );
    else process.stderr.write(`${red('keel review:')} ${inertLine(message)}\n`);
    return exit;
  };
  if (flags.staged && flags.since !== undefined)
    return fail('CONFIG_ERROR', '--staged and --since name different diffs; give one');
  let setup: ReturnType<typeof load>;
  try {
    setup = load(flags);
  } catch (err) {
    if (err instanceof ConfigError) return fail('CONFIG_ERROR', err.message);
    throw err;
  }
  if (!statSync(setup.cwd, { throwIfNoEntry: false })?.isDirectory())
    return fail('CONFIG_ERROR', `workspace ${setup.cwd} is not a folder`);
  const repo = findRepo(setup.cwd);
  if (!repo) return fail('ENVIRONMENT_ERROR', noRepoReason(setup.cwd, "keel review reviews git's diff"));
  let change: Change | string;
  try {
    change = currentChange(repo, flags);
  } catch (err) {
    if (err instanceof GitError) return fail('ENVIRONMENT_ERROR', err.message.split('\n')[0] ?? err.message);
    throw err;
  }
  if (typeof change === 'string') return fail('CONFIG_ERROR', change);
  if (!change.files.length) {
    const summary = `nothing to review: no changes (${change.describe})`;
    if (flags.json)
      process.stdout.write(
        `${JSON.stringify({ verdict: null, reasons: [], files: [], session_id: null, code: 'COMPLETED', exit_code: EXIT.ok, summary }, null, 2)}\n`,
      );
    else process.stderr.write(`${summary}\n`);
    return EXIT.ok;
  }
  for (const warning of setup.loaded.warnings)
    process.stderr.write(`${red('keel: warning:')} ${inertLine(warning)}\n`);

  const { config } = setup.loaded;
  let outcome: SessionOutcome;
  let reviewer: string;
  const controller = new AbortController();
  const onSigint = () => controller.abort();
  process.on('SIGINT', onSigint);
  process.on('SIGTERM', onSigint);
  try {
    // `[roles.review]` when the config names one, as `keel loop` does; else the configured model
    const model = config.roles.review
      ? createRoleModelClient(config, config.roles.review, process.env, { cwd: repo })
      : createModelClient(config, process.env, { cwd: repo });
    reviewer = model.currentModel();
    if (!flags.json)
      process.stderr.write(
        dim(
          `keel review: ${change.describe}, ${count(change.files.length, 'file')}, asking ${inertLine(reviewer)}\n`,
        ),
      );
    const { withRuntime } = await import('../agent/runtime.js');
    // the review is a run of its own in the team store's ledger: a store keel cannot reach stops it here
    const { LedgerStoreError, openRunLedger, PER_SESSION } = await import('../model/open-ledger.js');
    let runLedger: Awaited<ReturnType<typeof openRunLedger>>;
    try {
      runLedger = await openRunLedger(config, PER_SESSION);
    } catch (err) {
      if (err instanceof LedgerStoreError) throw new RunError('ENVIRONMENT_ERROR', err.message);
      throw err;
    }
    // `ask`: the reviewer may read the repository with its tools and can change nothing
    try {
      outcome = await withRuntime(
        process.env,
        (runtime) =>
          runtime.start({
            mode: 'ask',
            prompt: reviewTask(change, flags.task),
            loaded: setup.loaded,
            cwd: repo,
            signal: controller.signal,
            model,
            ...(flags.json ? {} : { onEvent: renderEvent }),
          }),
        { calls: runLedger.calls },
      );
    } finally {
      await runLedger.close();
    }
  } catch (err) {
    if (err instanceof ConfigError) return fail('CONFIG_ERROR', err.message);
    if (err instanceof RunError && (err.code === 'ENVIRONMENT_ERROR' || err.code === 'CONFIG_ERROR'))
      return fail(err.code, err.message);
    throw err;
  } finally {
    process.off('SIGINT', onSigint);
    process.off('SIGTERM', onSigint);
  }

  const used = {
    session_id: outcome.sessionId,
    files: change.files,
    diff: { kind: change.kind, base: change.base },
    model: reviewer,
    rounds: outcome.rounds,
    tokens: { ...outcome.tokens, total: outcome.tokens.input + outcome.tokens.output },
    cost_usd: outcome.costUsd,
  };
  if (outcome.code !== 'COMPLETED') {
    // no verdict without a finished review: the session's own code says why (a budget, the model gone)
    const exit = exitCodeFor(outcome.code);
    const message = `the review did not finish (${outcome.code}): ${outcome.reason}`;
    if (flags.json)
      process.stdout.write(
        `${JSON.stringify({ code: outcome.code, exit_code: exit, error: message, verdict: null, ...used }, null, 2)}\n`,
      );
    else process.stderr.write(`${red('keel review:')} ${inertLine(message)}\n`);
    return exit;
  }
  const review: Omit<Review, 'model'> = parseReview(outcome.summary);
  recordEvent(outcome.sessionId, 'review_verdict', {
    verdict: review.verdict,
    readable: review.readable,
    reasons: review.findings,
    kind: change.kind,
    base: change.base,
    files: change.files,
  });
  // REVISE exits 2 by contract (like a usage error, a gate that stays shut); an unreadable answer is REVISE
  const exit = review.verdict === 'APPROVE' ? EXIT.ok : EXIT.usage;
  if (flags.json) {
    process.stdout.write(
      `${JSON.stringify(
        {
          verdict: review.verdict,
          reasons: review.findings,
          readable: review.readable,
          code: outcome.code,
          exit_code: exit,
          ...used,
        },
        null,
        2,
      )}\n`,
    );
    return exit;
  }
  process.stdout.write(`${review.verdict}\n`);
  for (const reason of review.findings) process.stdout.write(`- ${inertLine(reason)}\n`);
  const tokens = outcome.tokens.input + outcome.tokens.output;
  const cost = outcome.costUsd === null ? '' : ` · $${outcome.costUsd.toFixed(4)}`;
  process.stderr.write(
    dim(
      `session ${outcome.sessionId} · ${count(outcome.rounds, 'round')} · ${tokens} tokens${cost} · ${inertLine(reviewer)}\n`,
    ),
  );
  return exit;
}

/** The change `--staged`, `--since REV` or (default) the working tree names, or why it cannot be read. */
function currentChange(repo: string, flags: ReviewFlags): Change | string {
  const head = gitTry(repo, ['rev-parse', '--verify', '-q', 'HEAD^{commit}'])?.trim();
  if (flags.staged) {
    const base = head ?? emptyTree(repo);
    return {
      patch: git(repo, ['diff', ...DIFF, '--cached', base]),
      files: names(git(repo, ['diff', '--cached', '--name-only', '-z', base])),
      describe: 'the staged changes',
      kind: 'staged',
      base,
    };
  }
  let base = head ?? emptyTree(repo);
  let describe = 'the working tree against HEAD';
  if (flags.since !== undefined) {
    // a revision is data, never an option
    const rev = flags.since.trim();
    const found =
      rev && !rev.startsWith('-')
        ? gitTry(repo, ['rev-parse', '--verify', '-q', `${rev}^{commit}`])
        : undefined;
    if (!found) return `--since ${flags.since}: no such commit in ${repo}`;
    base = found.trim();
    describe = `the working tree since ${rev}`;
  }
  // the working tree as git would commit it (untracked files too, ignored ones not), without touching the index
  const tree = worktreeTree(repo, head ?? null);
  return {
    patch: git(repo, ['diff', ...DIFF, base, tree]),
    files: names(git(repo, ['diff', '--name-only', '-z', base, tree])),
    describe,
    kind: flags.since === undefined ? 'working-tree' : 'since',
    base,
  };
}

function names(out: string): string[] {
  return out.split('\0').filter(Boolean);
}

/** The reviewer's task: read-only, the verdict format, then the change as data. */
function reviewTask(change: Change, task: string | undefined): string {
  return [
    `Review this code change (${change.describe}). You may read the repository's files with your tools to check it; you cannot change anything.`,
    `Judge whether it is correct and complete${task === undefined ? '' : ' for the task'}: wrong behaviour, broken edge cases, missing pieces. End with your verdict.`,
    VERDICT_FORMAT,
    '',
    reviewPrompt({
      patch: change.patch,
      files: change.files,
      describe: change.describe,
      ...(task === undefined ? {} : { task }),
    }),
  ].join('\n');
}
