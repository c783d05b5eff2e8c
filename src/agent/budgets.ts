/** Budgets: the limits a session runs under, checked between steps. */
import type { Config } from '../config/schema.js';
import type { BudgetName } from './terminal.js';

export interface Usage {
  rounds: number;
  tokens: number;
  costUsd: number | null;
  wallS: number;
  diffLines: number;
}

export interface BudgetBreach {
  budget: BudgetName;
  reason: string;
}

/** The first budget `usage` has used up, if any. Rounds are checked before a new round starts. */
export function exceeded(budgets: Config['budgets'], usage: Usage): BudgetBreach | undefined {
  if (usage.rounds >= budgets.max_rounds) {
    return { budget: 'max_rounds', reason: `reached max_rounds (${budgets.max_rounds}) without finishing` };
  }
  if (budgets.max_tokens !== undefined && usage.tokens >= budgets.max_tokens) {
    return {
      budget: 'max_tokens',
      reason: `used ${usage.tokens} tokens, max_tokens is ${budgets.max_tokens}`,
    };
  }
  if (budgets.max_cost_usd !== undefined && usage.costUsd !== null && usage.costUsd >= budgets.max_cost_usd) {
    return {
      budget: 'max_cost_usd',
      reason: `spent $${usage.costUsd.toFixed(4)}, max_cost_usd is $${budgets.max_cost_usd}`,
    };
  }
  if (budgets.max_wall_s !== undefined && usage.wallS >= budgets.max_wall_s) {
    return {
      budget: 'max_wall_s',
      reason: `ran ${usage.wallS.toFixed(1)} s, max_wall_s is ${budgets.max_wall_s}`,
    };
  }
  if (budgets.max_diff_lines !== undefined && usage.diffLines > budgets.max_diff_lines) {
    return {
      budget: 'max_diff_lines',
      reason: `changed ${usage.diffLines} lines, max_diff_lines is ${budgets.max_diff_lines}`,
    };
  }
  return undefined;
}
