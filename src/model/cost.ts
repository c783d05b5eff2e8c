/** What a model call cost in USD, from the user's own price table; unknown prices stay unknown. */
import type { Usage } from './types.js';

/**
 * As in the config's `[pricing.<model>]`: USD per million tokens, or USD per second of a call
 * (`gpu_second`, a model on your own hardware).
 */
export interface Price {
  input_per_mtok?: number | undefined;
  output_per_mtok?: number | undefined;
  gpu_second?: number | undefined;
}

/**
 * The cost of `usage` on `model`, or null when the price table has no entry for it (never a guess).
 * A model priced by `gpu_second` costs the call's `seconds`; unknown (null) when they are not known.
 */
export function costUsd(
  model: string,
  usage: Usage,
  pricing: Record<string, Price>,
  seconds?: number,
): number | null {
  const price = Object.hasOwn(pricing, model) ? pricing[model] : undefined;
  if (!price) return null;
  if (price.gpu_second !== undefined) return seconds === undefined ? null : seconds * price.gpu_second;
  if (price.input_per_mtok === undefined || price.output_per_mtok === undefined) return null;
  return (usage.inputTokens * price.input_per_mtok + usage.outputTokens * price.output_per_mtok) / 1_000_000;
}
