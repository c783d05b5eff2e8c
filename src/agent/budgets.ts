/**
 * Budgets: the limits a session runs under, checked between steps. Tokens and cost are spent by a tree
 * of sessions (a session, its subagents, theirs): each answer is charged to its session and every one
 * above it as it arrives, so a budget holds for the whole tree whether or not anyone waits for a child.
 */
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

/** Tokens and cost; cost is null once any answer had no price (keel never invents one). */
export interface Spent {
  input: number;
  output: number;
  costUsd: number | null;
}

/** What one session and every session under it have spent: one node of the tree's one counter. */
export class Spend {
  input = 0;
  output = 0;
  costUsd: number | null = 0;

  constructor(
    /** This session's own token and cost budgets (a child's share of its parent's). */
    readonly limits: Pick<Config['budgets'], 'max_tokens' | 'max_cost_usd'>,
    /** The session that started this one, whose budgets this one's spending counts against too. */
    readonly parent?: Spend,
  ) {}

  get tokens(): number {
    return this.input + this.output;
  }

  /** Charge spending here and at every level above, as it happens. */
  add(spent: Spent): void {
    for (let node: Spend | undefined = this; node; node = node.parent) {
      node.input += spent.input;
      node.output += spent.output;
      node.costUsd = node.costUsd === null || spent.costUsd === null ? null : node.costUsd + spent.costUsd;
    }
  }

  /** The first token or cost budget used up, here or at any level above (a sibling may have spent it). */
  exceeded(): BudgetBreach | undefined {
    for (let node: Spend | undefined = this; node; node = node.parent) {
      const whose = node === this ? 'this session and its subagents' : 'the session tree above this one';
      const { max_tokens, max_cost_usd } = node.limits;
      if (max_tokens !== undefined && node.tokens >= max_tokens)
        return {
          budget: 'max_tokens',
          reason: `${whose} used ${node.tokens} tokens, max_tokens is ${max_tokens}`,
        };
      if (max_cost_usd !== undefined && node.costUsd !== null && node.costUsd >= max_cost_usd)
        return {
          budget: 'max_cost_usd',
          reason: `${whose} spent $${node.costUsd.toFixed(4)}, max_cost_usd is $${max_cost_usd}`,
        };
    }
    return undefined;
  }
}
