/** Building the model client from config: providers, keys, timeouts, retries and the fallback chain. */
import { isAbsolute, resolve } from 'node:path';
import { apiKeyFor, ConfigError } from '../config/load.js';
import { keelPaths } from '../config/paths.js';
import type { Config, ModelRef } from '../config/schema.js';
import type { CallLedger } from './call-ledger.js';
import { ModelClient, type ModelEntry, type Router } from './chain.js';
import type { Difficulty } from './difficulty.js';
import { createOllamaProvider } from './ollama.js';
import { createOpenAiProvider } from './openai.js';
import { DEFAULT_BASE_URLS, decideRoute, routingTiers } from './routing.js';
import { loadScript, ScriptCursor, ScriptError } from './script.js';
import { createScriptedProvider } from './scripted.js';
import type { Provider } from './types.js';

export interface CreateModelClientOptions {
  /** Directory a relative `script` path is resolved against (default: process.cwd()). */
  cwd?: string;
  /** For tests: the clock used for cooldowns. */
  now?: () => number;
  /**
   * Route each call to a `[[routing.tiers]]` tier by this difficulty (read from the run's log when
   * called) and these bands. Ignored without tiers; the caller decides whether routing is in force
   * (`routingInForce`: never with `--model`).
   */
  routing?: { difficulty: () => Difficulty; thresholds: readonly number[] };
  /** The ledger the client records every call to (and checks a cost cap against). */
  calls?: CallLedger;
}

/** Build the client for the configured model and its `fallback_models`. Throws ConfigError on a config it cannot use. */
export function createModelClient(
  config: Config,
  env: NodeJS.ProcessEnv = process.env,
  opts: CreateModelClientOptions = {},
): ModelClient {
  const tiers = opts.routing ? routingTiers(config) : [];
  if (!config.model && config.provider !== 'scripted' && !tiers.length) {
    // the first thing a new user sees: say where the setting lives and the one command that writes it
    throw new ConfigError(
      `no model configured: run \`keel init\` to write ${keelPaths(env).userConfig}, or set \`model\` there or in keel.toml, KEEL_MODEL, or --model`,
    );
  }
  const cwd = opts.cwd ?? process.cwd();
  let scripted: Provider | undefined;
  // one script, one cursor: a scripted fallback replays the same file as the primary
  const scriptedProvider = (): Provider => {
    if (scripted) return scripted;
    if (!config.script)
      throw new ConfigError('provider "scripted" needs `script` (the path of a script file)');
    const path = isAbsolute(config.script) ? config.script : resolve(cwd, config.script);
    let script: ReturnType<typeof loadScript>;
    try {
      script = loadScript(path);
    } catch (err) {
      // absent, not JSON or the wrong shape: the user's file to fix, and the message names it
      if (err instanceof ScriptError) throw new ConfigError(err.message);
      throw err;
    }
    scripted = createScriptedProvider(script, { source: path, cursor: new ScriptCursor(script) });
    return scripted;
  };

  const primaryRef: ModelRef = {
    provider: config.provider,
    model: config.model || 'scripted',
    base_url: config.base_url,
    api_key_env: config.api_key_env,
    context_window: config.context_window,
  };
  const entryOf = (ref: ModelRef): ModelEntry => {
    const provider = ref.provider ?? config.provider;
    // a fallback on another provider must not inherit the primary's URL, which speaks a different format
    const baseUrl =
      ref.base_url ?? (provider === config.provider ? config.base_url : DEFAULT_BASE_URLS[provider]);
    const apiKey = apiKeyFor(ref.api_key_env ?? config.api_key_env, env);
    const timeoutMs = (config.timeouts.connect_s + config.timeouts.first_token_s) * 1000;
    const instance =
      provider === 'scripted'
        ? scriptedProvider()
        : provider === 'ollama'
          ? createOllamaProvider({ baseUrl, metadataTimeoutMs: config.timeouts.connect_s * 1000 })
          : createOpenAiProvider({ baseUrl, apiKey, timeoutMs });
    // without a window of its own a fallback keeps the primary's, so Ollama doesn't drop to its small default
    const contextWindow = ref.context_window ?? config.context_window;
    return {
      provider: instance,
      model: ref.model,
      ...(contextWindow !== undefined ? { contextWindow } : {}),
    };
  };
  // routed: each tier alone (a failing tier is the call's error; the next call's score decides again)
  const tierEntries = tiers.map((tier) =>
    entryOf({
      provider: tier.provider,
      model: tier.model,
      base_url: tier.baseUrl,
      api_key_env: tier.apiKeyEnv,
      ...(tier.contextWindow !== undefined ? { context_window: tier.contextWindow } : {}),
    }),
  );
  const routing = opts.routing;
  const router: Router | undefined =
    routing && tierEntries.length
      ? {
          route: () => {
            const decision = decideRoute(tiers, routing.thresholds, routing.difficulty());
            const index = tiers.findIndex((t) => t.name === decision.tier);
            return { decision, entries: tierEntries.slice(index, index + 1) };
          },
        }
      : undefined;
  const entries = router ? tierEntries : [primaryRef, ...config.fallback_models].map(entryOf);

  return new ModelClient(entries, {
    timeouts: { firstTokenMs: config.timeouts.first_token_s * 1000, idleMs: config.timeouts.idle_s * 1000 },
    retries: config.retries,
    cooldownS: config.retries.cooldown_s,
    ...(config.max_output_tokens !== undefined ? { maxOutputTokens: config.max_output_tokens } : {}),
    ...(config.temperature !== undefined ? { temperature: config.temperature } : {}),
    ...(opts.now ? { now: opts.now } : {}),
    ...(router ? { router } : {}),
    ...(opts.calls ? { calls: opts.calls } : {}),
  });
}

/** Build a client for a role's model (such as `[roles.review]`): the primary's endpoint and key unless the ref names its own, no fallbacks. */
export function createRoleModelClient(
  config: Config,
  ref: ModelRef,
  env: NodeJS.ProcessEnv = process.env,
  opts: CreateModelClientOptions = {},
): ModelClient {
  const provider = ref.provider ?? config.provider;
  return createModelClient(
    {
      ...config,
      provider,
      model: ref.model,
      // another provider speaks another wire format, so it must not inherit the primary's URL
      base_url:
        ref.base_url ?? (provider === config.provider ? config.base_url : DEFAULT_BASE_URLS[provider]),
      api_key_env: ref.api_key_env ?? config.api_key_env,
      context_window: ref.context_window ?? config.context_window,
      fallback_models: [],
    },
    env,
    opts,
  );
}
