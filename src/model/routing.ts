/**
 * Routing by difficulty: `[[routing.tiers]]` lists models cheapest first, and each call of a fix goes
 * to the tier its difficulty score (src/model/difficulty.ts) falls in. An explicit `--model` always
 * wins: routing is then off for the run. With no tiers nothing changes.
 *
 * Each call's decision is recorded on its `model_request` event (`route`), so faces and the ledger
 * read it from the log.
 */
import type { LoadedConfig } from '../config/load.js';
import type { Config, ProviderName, TierConfig } from '../config/schema.js';
import type { Price } from './cost.js';
import { type Difficulty, tierIndex } from './difficulty.js';

/** Why one call went where it went. */
export interface RouteDecision {
  /** The tier's name in `[[routing.tiers]]`. */
  tier: string;
  provider: string;
  model: string;
  baseUrl?: string;
  /** The difficulty score in [0, 1]. */
  score: number;
  /** The numbers the score was made of. */
  signals: Record<string, number>;
  /** The score and the band it fell in, in words. */
  reason: string;
}

/** A tier with what it inherits from the top level filled in. */
export interface Tier {
  name: string;
  provider: ProviderName;
  model: string;
  baseUrl: string;
  apiKeyEnv: string;
  contextWindow?: number;
  price?: Price;
}

/** Where a model on another provider than the top level's looks when it names no base_url. */
export const DEFAULT_BASE_URLS: Record<ProviderName, string> = {
  openai: 'http://127.0.0.1:11434/v1',
  ollama: 'http://127.0.0.1:11434',
  scripted: 'script',
};

/** The tiers of a config, cheapest first; a tier leaves out what the top level says. */
export function routingTiers(config: Config): Tier[] {
  return config.routing.tiers.map((tier) => {
    const provider = tier.provider ?? config.provider;
    return {
      name: tier.name,
      provider,
      model: tier.model,
      // another provider speaks another wire format, so it must not inherit the top level's URL
      baseUrl:
        tier.base_url ?? (provider === config.provider ? config.base_url : DEFAULT_BASE_URLS[provider]),
      apiKeyEnv: tier.api_key_env ?? config.api_key_env,
      ...(tier.context_window !== undefined || config.context_window !== undefined
        ? { contextWindow: tier.context_window ?? config.context_window }
        : {}),
      ...(priceOf(tier) ? { price: priceOf(tier) } : {}),
    };
  });
}

function priceOf(tier: TierConfig): Price | undefined {
  if (tier.gpu_second !== undefined) return { gpu_second: tier.gpu_second };
  if (tier.input_per_mtok !== undefined && tier.output_per_mtok !== undefined)
    return { input_per_mtok: tier.input_per_mtok, output_per_mtok: tier.output_per_mtok };
  return undefined;
}

/**
 * Whether a run routes its calls: tiers are configured and the model was not named with `--model`
 * (a batch task's `model` is passed as `--model`). KEEL_MODEL or a file's `model` does not turn it off.
 */
export function routingInForce(loaded: Pick<LoadedConfig, 'config' | 'sources'>): boolean {
  return loaded.config.routing.tiers.length > 0 && loaded.sources.model !== 'flag';
}

/**
 * The price table one call is costed by: routing sent it to a tier with a price, so that tier's price for the
 * model that answered (tiers may share a model at different prices); else `pricing` as it is. As the ledger
 * counts a call (model/call-ledger.ts).
 */
export function routedPricing(
  config: Config,
  route: Pick<RouteDecision, 'tier'> | undefined,
  model: string,
): Record<string, Price> {
  const price = route && routingTiers(config).find((t) => t.name === route.tier)?.price;
  return price ? { ...config.pricing, [model]: price } : config.pricing;
}

/**
 * The config with each tier's price in `pricing` by model name, for what is priced by model alone (whether a
 * session is priced at all, a call no route decided); a routed call goes by routedPricing.
 */
export function withTierPrices(config: Config): Config {
  const pricing = { ...config.pricing };
  for (const tier of routingTiers(config)) if (tier.price) pricing[tier.model] = tier.price;
  return { ...config, pricing };
}

/** The tier a difficulty falls in, and the decision in words. */
export function decideRoute(
  tiers: readonly Tier[],
  thresholds: readonly number[],
  d: Difficulty,
): RouteDecision {
  const index = Math.min(tierIndex(d.score, thresholds), tiers.length - 1);
  const tier = tiers[index];
  if (!tier) throw new Error('routing needs at least one tier');
  const low = index === 0 ? 0 : thresholds[index - 1];
  const high = thresholds[index];
  const band = high === undefined ? `>= ${low}` : `in [${low}, ${high})`;
  return {
    tier: tier.name,
    provider: tier.provider,
    model: tier.model,
    baseUrl: tier.baseUrl,
    score: d.score,
    signals: d.signals,
    reason: `score ${d.score} ${band}: tier ${tier.name}; ${d.reason}`,
  };
}
