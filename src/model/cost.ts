/** What a model call cost in USD, from the user's own price table; unknown prices stay unknown. */
import type { Usage } from './types.js';

/** USD per million tokens, as in the config's `[pricing.<model>]`. */
export interface Price {
  input_per_mtok: number;
  output_per_mtok: number;
}

/** The cost of `usage` on `model`, or null when the price table has no entry for it (never a guess). */
export function costUsd(model: string, usage: Usage, pricing: Record<string, Price>): number | null {
  const price = Object.hasOwn(pricing, model) ? pricing[model] : undefined;
  if (!price) return null;
  return (usage.inputTokens * price.input_per_mtok + usage.outputTokens * price.output_per_mtok) / 1_000_000;
}
