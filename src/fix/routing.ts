/**
 * Whether and how a fix routes its calls by difficulty (src/model/routing.ts): the tiers, their bands
 * (calibrated or evenly spaced) and the score of the next call, read from the run's log.
 */
import type { LoadedConfig } from '../config/load.js';
import { keelPaths } from '../config/paths.js';
import type { CreateModelClientOptions } from '../model/create.js';
import { type Difficulty, thresholdsFor } from '../model/difficulty.js';
import { routingInForce, routingTiers } from '../model/routing.js';

export interface FixRouting {
  /** What createModelClient routes with. */
  routing: NonNullable<CreateModelClientOptions['routing']>;
  /** The `fix_routing` event: the tiers and bands the run routes with, and where the bands came from. */
  event: Record<string, unknown>;
}

/**
 * The run's routing, or undefined when it does not route (no tiers, or `--model`). Throws ConfigError
 * for a calibration file that is wrong or fitted for another number of tiers.
 */
export function fixRouting(
  loaded: Pick<LoadedConfig, 'config' | 'sources'>,
  env: NodeJS.ProcessEnv,
  difficulty: () => Difficulty,
): FixRouting | undefined {
  if (!routingInForce(loaded)) return undefined;
  const tiers = routingTiers(loaded.config);
  const { thresholds, source } = thresholdsFor(tiers.length, keelPaths(env));
  return {
    routing: { difficulty, thresholds },
    event: {
      tiers: tiers.map((t) => ({ name: t.name, provider: t.provider, model: t.model, base_url: t.baseUrl })),
      thresholds,
      thresholds_from: source,
    },
  };
}
