/** Retrying a model stream on transient failures, with backoff, jitter and Retry-After, never after output. */
import { abortReason } from './timeouts.js';
import { type Delta, ModelError } from './types.js';

export interface RetryPolicy {
  /** Retries after the first attempt. */
  max: number;
  base_delay_ms: number;
  max_delay_ms: number;
}

/** One retry about to happen, for the loop to record as an event. */
export interface RetryInfo {
  model: string;
  /** 1 for the first retry. */
  attempt: number;
  maxRetries: number;
  delayMs: number;
  error: ModelError;
}

export interface RetryOptions {
  policy: RetryPolicy;
  signal: AbortSignal;
  model: string;
  onRetry?: (info: RetryInfo) => void;
  /** For tests: replaces Math.random in the jitter. */
  random?: () => number;
}

/** Longest Retry-After keel honours; a server asking for more is treated as down, so the chain can fall back. */
export const MAX_RETRY_AFTER_MS = 120_000;

/** Resolve after `ms`, or reject with the signal's reason as soon as it aborts. */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.reject(abortReason(signal));
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortReason(signal));
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** The wait before retry `attempt` (1-based): Retry-After when the server gave one, else backoff with jitter. */
export function retryDelayMs(
  attempt: number,
  error: ModelError,
  policy: RetryPolicy,
  random: () => number = Math.random,
): number | undefined {
  if (error.retryAfterS !== undefined) {
    const ms = Math.ceil(error.retryAfterS * 1000);
    // the server knows its own load better than our max_delay_ms, up to a point
    return ms > MAX_RETRY_AFTER_MS ? undefined : ms;
  }
  const exponential = Math.min(policy.max_delay_ms, policy.base_delay_ms * 2 ** (attempt - 1));
  // "equal jitter": keep half the delay, randomize the rest, so clients that failed together spread out
  return Math.round(exponential / 2 + (random() * exponential) / 2);
}

/** Output the user has seen (reasoning is shown live too); once any was yielded, a retry would duplicate it. */
function isOutput(delta: Delta): boolean {
  return delta.type === 'text' || delta.type === 'reasoning' || delta.type === 'tool_call';
}

/** Run `attempt` and re-run it on retryable ModelErrors, as long as it has yielded no output yet. */
export async function* withRetry(
  attempt: () => AsyncIterable<Delta>,
  opts: RetryOptions,
): AsyncGenerator<Delta> {
  for (let retry = 0; ; retry++) {
    let produced = false;
    try {
      for await (const delta of attempt()) {
        if (isOutput(delta)) produced = true;
        yield delta;
      }
      return;
    } catch (err) {
      if (!(err instanceof ModelError) || !err.retryable || produced || retry >= opts.policy.max) throw err;
      if (opts.signal.aborted) throw abortReason(opts.signal);
      const delayMs = retryDelayMs(retry + 1, err, opts.policy, opts.random);
      if (delayMs === undefined) throw err;
      opts.onRetry?.({
        model: opts.model,
        attempt: retry + 1,
        maxRetries: opts.policy.max,
        delayMs,
        error: err,
      });
      await sleep(delayMs, opts.signal);
    }
  }
}
