/** How a run stops from inside the loop, and how whatever ended it becomes one terminal code. */
import { CallRefused } from '../model/call-ledger.js';
import { type BudgetName, RunError, type TerminalCode } from './terminal.js';

/** Thrown inside a run to end it with this code (a budget, a hook, a loop, a violation, Ctrl+C). */
export class Stop extends Error {
  constructor(
    readonly code: TerminalCode,
    readonly reason: string,
    readonly budget?: BudgetName,
  ) {
    super(reason);
  }
}

/** The terminal code and reason for whatever ended a run (a Stop, a model error, a fault of keel). */
export function classify(
  err: unknown,
  signal: AbortSignal,
): { code: TerminalCode; reason: string; budget?: BudgetName } {
  const cause = signal.aborted && !(err instanceof Stop) ? signal.reason : err;
  if (cause instanceof Stop)
    return { code: cause.code, reason: cause.reason, ...(cause.budget ? { budget: cause.budget } : {}) };
  if (cause instanceof RunError) return { code: cause.code, reason: cause.message };
  // a call the ledger would not let start: the cost cap, a model it cannot price under a cap, the store away
  if (cause instanceof CallRefused)
    return cause.why === 'cost_cap'
      ? { code: 'BUDGET_EXCEEDED', reason: cause.message, budget: 'cost_cap' }
      : { code: cause.why === 'unpriced' ? 'CONFIG_ERROR' : 'ENVIRONMENT_ERROR', reason: cause.message };
  if (cause instanceof Error && cause.name === 'ModelError')
    return { code: 'MODEL_ERROR', reason: cause.message };
  // a fault of keel or of this machine (a bug, a full disk): the run still ends with one terminal code,
  // and the log says what threw and where
  const stack = cause instanceof Error ? (cause.stack ?? cause.message) : String(cause);
  const where = stack
    .split('\n')
    .find((line) => line.trim().startsWith('at '))
    ?.trim();
  const what = cause instanceof Error ? `${cause.name}: ${cause.message}` : String(cause);
  return { code: 'ENVIRONMENT_ERROR', reason: `unexpected error: ${what}${where ? ` (${where})` : ''}` };
}
