/** Every run ends with exactly one of these codes. */
export const TERMINAL_CODES = [
  'COMPLETED',
  'BUDGET_EXCEEDED',
  'SCOPE_VIOLATION',
  'HOOK_DENIED',
  'LOOP_DETECTED',
  'NO_TEST_PROGRESS',
  'VERIFICATION_FAILED',
  'MODEL_ERROR',
  'CONFIG_ERROR',
  'ENVIRONMENT_ERROR',
  'CANCELLED',
  /** A resumed run met an effect it cannot check (see agent/effect-resume.ts): a person must look. */
  'BLOCKED_UNCERTAIN',
] as const;

export type TerminalCode = (typeof TERMINAL_CODES)[number];

export type BudgetName =
  | 'max_rounds'
  | 'max_tokens'
  | 'max_cost_usd'
  | 'max_wall_s'
  | 'max_diff_lines'
  /** A run's --cost-cap, held against the team store's ledger before each call (model/call-ledger.ts). */
  | 'cost_cap';

/** A failure that ends a run, carrying its terminal code. Only cli/ turns it into an exit status. */
export class RunError extends Error {
  constructor(
    readonly code: TerminalCode,
    message: string,
    readonly detail?: Record<string, unknown>,
  ) {
    super(message);
    this.name = 'RunError';
  }
}

/** What every face says when a run's last answer was cut at the output limit (its `finish: "length"`). */
export function cutOffSentence(maxOutputTokens?: number): string {
  const limit =
    maxOutputTokens === undefined ? 'max_output_tokens' : `max_output_tokens = ${maxOutputTokens}`;
  return `the answer was cut at the output limit (${limit}); raise max_output_tokens for the whole answer`;
}

/** `1 round`, `3 rounds`: a count in words for people, on every face. */
export function count(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}
