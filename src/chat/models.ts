/**
 * The models the configured server offers, for `/model`: OpenAI's `/v1/models` or Ollama's `/api/tags`,
 * as the provider speaks. A server that keeps no list says so, and a name is then taken unchecked.
 */
import type { Config } from '../config/schema.js';
import { ModelError } from '../model/types.js';

export type ServerModels =
  | { kind: 'list'; models: string[]; where: string }
  /** The server keeps no list (the scripted provider, an endpoint without one): why, in words. */
  | { kind: 'none'; why: string }
  /** The server did not answer: its own error, one line. */
  | { kind: 'error'; message: string };

export async function serverModels(config: Config): Promise<ServerModels> {
  const { createModelClient } = await import('../model/create.js');
  const { provider } = createModelClient(config).primary;
  if (!provider.listModels)
    return { kind: 'none', why: `the ${provider.name} provider keeps no list of models` };
  try {
    const models = await provider.listModels(AbortSignal.timeout(config.timeouts.connect_s * 1000));
    return { kind: 'list', models, where: provider.baseUrl };
  } catch (err) {
    if (err instanceof ModelError && err.kind === 'not_found')
      return { kind: 'none', why: `the server at ${provider.baseUrl} has no list of models (404)` };
    const message = err instanceof Error ? err.message : String(err);
    return { kind: 'error', message: message.split('\n')[0] ?? message };
  }
}

/** The server's name for `name`: the same, or with Ollama's `:latest` tag added or dropped. */
export function findModel(models: readonly string[], name: string): string | undefined {
  return models.find((m) => m === name || m === `${name}:latest` || m.replace(/:latest$/, '') === name);
}
