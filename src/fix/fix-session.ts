/** The model sessions of a fix run (its plan and each attempt), and the budgets each is given. */
import type { Runtime } from '../agent/runtime.js';
import type { BudgetName, TerminalCode } from '../agent/terminal.js';
import type { LoadedConfig } from '../config/load.js';
import type { ModelClient } from '../model/chain.js';
import type { TestSuite } from '../verify/suite.js';
import { sessionTotals } from './resume.js';
import type { FixOptions } from './run.js';
import type { Snapshot } from './snapshot.js';
import { worktreeJournal } from './worktree-journal.js';

export type SessionRun = (
  mode: 'plan' | 'edit',
  prompt: string,
  maxRounds: number,
  /** A session a killed run of the fix started: read back when it ended, else resumed where it stopped. */
  earlier?: string,
) => Promise<{
  code: TerminalCode;
  reason: string;
  summary: string;
  budget?: BudgetName;
  budgetSpent?: true;
}>;

/** What the run has used so far, which the next session's budgets are taken from. */
export type Spent = () => { tokens: number; cost: number | null; wallS: number };

/**
 * Each plan and attempt is an ordinary session in the snapshot, sharing one model client. The token,
 * cost and wall budgets are the run's: each session gets what the sessions before it left.
 */
export function sessionRunner(
  opts: FixOptions,
  runtime: Runtime,
  model: ModelClient,
  runId: string,
  snapshot: Snapshot,
  suite: TestSuite,
  tokens: { input: number; output: number },
  spent: Spent,
  add: (rounds: number, cost: number | null) => void,
): SessionRun {
  const journal = worktreeJournal(snapshot);
  return async (mode, prompt, maxRounds, earlier) => {
    const before = earlier === undefined ? undefined : sessionTotals(runtime.log, earlier);
    if (earlier !== undefined && before?.ended) {
      // it ended before the kill: its outcome and spend are read from its log, nothing is asked again
      const end = runtime.log.events(earlier).findLast((e) => e.type === 'session_end')?.data ?? {};
      tokens.input += before.tokens.input;
      tokens.output += before.tokens.output;
      add(before.rounds, before.cost);
      return {
        code: String(end.code ?? 'COMPLETED') as TerminalCode,
        reason: String(end.reason ?? ''),
        summary: String(end.summary ?? ''),
      };
    }
    const base = opts.loaded.config;
    const left = remainingBudgets(base.budgets, spent());
    if ('spent' in left)
      return { code: 'BUDGET_EXCEEDED', reason: left.spent, summary: '', budgetSpent: true };
    const config = {
      ...base,
      scope: opts.scope?.length ? opts.scope : ['.'],
      test_command: suite.detected.command,
      budgets: { ...base.budgets, ...left, max_rounds: maxRounds },
    };
    const outcome = await runtime.start({
      mode,
      // a resumed session goes on from its log: no new message
      prompt: earlier === undefined ? prompt : '',
      ...(earlier === undefined ? {} : { resume: earlier }),
      worktree: journal,
      loaded: { ...opts.loaded, config },
      cwd: snapshot.dir,
      signal: opts.signal,
      model,
      parentId: runId,
      safetyNet: false,
      // the linked dependency folders live in the user's checkout: visible, never writable
      readOnlyDirs: snapshot.linkedFrom,
      ...(opts.onText ? { onText: opts.onText } : {}),
      ...(opts.onEvent ? { onEvent: opts.onEvent } : {}),
    });
    // a resumed session's totals are its whole life's (its spend carries over); its rounds are counted from its log
    tokens.input += outcome.tokens.input;
    tokens.output += outcome.tokens.output;
    add(earlier === undefined ? outcome.rounds : sessionTotals(runtime.log, earlier).rounds, outcome.costUsd);
    return outcome;
  };
}

/** The run's token, cost and wall budgets less what it has used, or which one is used up. */
function remainingBudgets(
  budgets: LoadedConfig['config']['budgets'],
  used: ReturnType<Spent>,
): { max_tokens?: number; max_cost_usd?: number; max_wall_s?: number } | { spent: string } {
  const left: { max_tokens?: number; max_cost_usd?: number; max_wall_s?: number } = {};
  if (budgets.max_tokens !== undefined) {
    const rest = budgets.max_tokens - used.tokens;
    if (rest < 1)
      return { spent: `max_tokens: the run has used ${used.tokens} of ${budgets.max_tokens} tokens` };
    left.max_tokens = rest;
  }
  if (budgets.max_cost_usd !== undefined && used.cost !== null) {
    const rest = budgets.max_cost_usd - used.cost;
    if (rest <= 0)
      return {
        spent: `max_cost_usd: the run has spent $${used.cost.toFixed(4)} of $${budgets.max_cost_usd}`,
      };
    left.max_cost_usd = rest;
  }
  if (budgets.max_wall_s !== undefined) {
    const rest = budgets.max_wall_s - used.wallS;
    if (rest <= 0)
      return { spent: `max_wall_s: the run has taken ${Math.round(used.wallS)} of ${budgets.max_wall_s} s` };
    left.max_wall_s = rest;
  }
  return left;
}
