/**
 * The context window a model's server runs with, asked once per process: the prompt-size check, the
 * session, its subagents and later chat turns share one answer (a server does not change its window
 * under a running keel). The question starts as early as a face knows the model and is awaited only
 * where the number is needed, so its round trips overlap the session's set-up.
 */
import type { Config } from '../config/schema.js';

interface WindowSource {
  contextWindow?(signal?: AbortSignal): Promise<number | undefined>;
  currentModel?(): string;
}

const windows = new Map<string, Promise<number | undefined>>();

/** The window the model's server runs with, when it says within the connect timeout (undefined: it did not say). */
export function serverWindow(
  model: WindowSource,
  config: Config,
  signal: AbortSignal,
): Promise<number | undefined> {
  // a role's model (a reviewer) may be another than the configured one
  const key = JSON.stringify([config.provider, config.base_url, model.currentModel?.() ?? config.model]);
  let known = windows.get(key);
  if (!known) {
    const asked = AbortSignal.any([signal, AbortSignal.timeout(config.timeouts.connect_s * 1000)]);
    known = (model.contextWindow?.(asked) ?? Promise.resolve(undefined)).catch(() => undefined);
    windows.set(key, known);
    // an answer cut short by this session's own cancel says nothing about the server: ask again next time
    void known.then((w) => {
      if (w === undefined && signal.aborted) windows.delete(key);
    });
  }
  return known;
}
