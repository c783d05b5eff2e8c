/**
 * The ledger a command's model calls are recorded to: the team store its config names (SQLite in
 * KEEL_HOME by default, PostgreSQL by `store`/KEEL_STORE), opened before the first call, so a store that
 * cannot be reached stops the command before it spends anything (the faces end it with exit 3).
 */
import { join } from 'node:path';
import type { LoadedConfig } from '../config/load.js';
import { keelPaths } from '../config/paths.js';
import type { Config } from '../config/schema.js';
import { openStore, redact, type Store, storeTarget } from '../store/engine.js';
import { Ledger } from '../store/ledger.js';
import { type CallContext, CallLedger, sendUnsent, unpricedMessage } from './call-ledger.js';
import type { Price } from './cost.js';
import { routingInForce, routingTiers } from './routing.js';

/** The context of a runtime's ledger (agent/runtime.ts): each session there is a run of its own, and fills in its id. */
export const PER_SESSION: CallContext = { runId: '' };

export interface RunLedger {
  calls: CallLedger;
  close(): Promise<void>;
}

/** The store could not be opened: the command ends with exit 3 before any call. */
export class LedgerStoreError extends Error {
  override name = 'LedgerStoreError';
}

/** Every model a run on `config` may call, by name: its model and its fallbacks. */
export function modelsOf(config: Config): string[] {
  return [config.model || 'scripted', ...config.fallback_models.map((m) => m.model)];
}

/** The price of each `[[routing.tiers]]` tier that has one, by tier name (model/call-ledger.ts counts a routed call at it). */
export function tierPricesOf(config: Config): Record<string, Price> {
  const prices: Record<string, Price> = {};
  for (const tier of routingTiers(config)) if (tier.price) prices[tier.name] = tier.price;
  return prices;
}

/**
 * Under a cap, why the run may not start: a model it may call without a price, or with a price only a
 * project's keel.toml gives. A repository that switches to its own model and prices it near zero would
 * otherwise make the cap count real spending as free, so a price counts under a cap only when the
 * user's own config (or the environment) gives one; the one in force may still be a project's higher one.
 * A run that routes (no `models` named, tiers in force) calls its tiers: each needs its own price or one
 * in `[pricing]`, and a tier's own price counts only when the tiers are not a project's.
 */
export function unpricedUnderCap(
  loaded: LoadedConfig,
  costCapUsd: number | undefined,
  models?: string[],
): string | undefined {
  if (costCapUsd === undefined) return undefined;
  if (models === undefined && routingInForce(loaded)) {
    const fromProject = loaded.layers.find((layer) => layer.kind === 'project' && hasTiers(layer.values));
    for (const tier of routingTiers(loaded.config)) {
      if (!tier.price) {
        const why = unpricedModel(loaded, costCapUsd, tier.model);
        if (why) return `${why} (or give tier "${tier.name}" its own input_per_mtok and output_per_mtok)`;
      } else if (fromProject)
        return `--cost-cap $${costCapUsd}: tier "${tier.name}" is priced by ${fromProject.source}, and a repository cannot set what a cap counts: put [[routing.tiers]] with their prices in your own config`;
    }
    return undefined;
  }
  for (const model of models ?? modelsOf(loaded.config)) {
    const why = unpricedModel(loaded, costCapUsd, model);
    if (why) return why;
  }
  return undefined;
}

function hasTiers(values: Record<string, unknown>): boolean {
  const routing = values.routing as { tiers?: unknown } | undefined;
  return typeof routing === 'object' && routing !== null && routing.tiers !== undefined;
}

function unpricedModel(loaded: LoadedConfig, costCapUsd: number, model: string): string | undefined {
  if (!Object.hasOwn(loaded.config.pricing, model)) return unpricedMessage(model, costCapUsd);
  const own = loaded.layers.some((layer) => {
    if (layer.kind === 'project') return false;
    const pricing = layer.values.pricing as Record<string, unknown> | undefined;
    return typeof pricing === 'object' && pricing !== null && Object.hasOwn(pricing, model);
  });
  if (!own)
    return `--cost-cap $${costCapUsd}: model "${model}" is priced only by ${loaded.projectFile ?? "the project's keel.toml"}, and a repository cannot set what a cap counts: add [pricing."${model}"] to your own config`;
  return undefined;
}

/** Open the configured store's ledger for a run; rows an earlier run could not send go first. */
export async function openRunLedger(
  config: Config,
  context: CallContext,
  opts: { costCapUsd?: number; env?: NodeJS.ProcessEnv; warn?(message: string): void } = {},
): Promise<RunLedger> {
  const paths = keelPaths(opts.env ?? process.env);
  const target = storeTarget(config.store, paths.db);
  const where = target.engine === 'sqlite' ? target.path : redact(target.url);
  let store: Store;
  try {
    store = await openStore(target);
  } catch (err) {
    throw new LedgerStoreError(
      `cannot open the team store at ${where} for the ledger of model calls: ${(err as Error).message}`,
    );
  }
  const ledger = new Ledger(store);
  const unsentPath = join(paths.stateDir, 'ledger-unsent.jsonl');
  try {
    const sent = await sendUnsent(ledger, unsentPath);
    if (sent) opts.warn?.(`sent ${sent} ledger row(s) an earlier run kept in ${unsentPath}`);
  } catch (err) {
    opts.warn?.(`the rows kept in ${unsentPath} could not be sent yet: ${(err as Error).message}`);
  }
  const calls = new CallLedger({
    ledger,
    context,
    pricing: config.pricing,
    tierPrices: tierPricesOf(config),
    unsentPath,
    ...(opts.costCapUsd !== undefined ? { costCapUsd: opts.costCapUsd } : {}),
  });
  return { calls, close: () => store.close() };
}
