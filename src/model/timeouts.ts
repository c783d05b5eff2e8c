/** First-token and idle timeouts around a provider stream, aborting the request when one fires. */
import { type Delta, ModelError, type ModelRequest, type Provider } from './types.js';

export interface StreamTimeouts {
  /** Longest wait for the first delta (includes connecting and prompt processing). */
  firstTokenMs: number;
  /** Longest silence between two deltas once the answer has started. */
  idleMs: number;
}

/** The error a cancelled stream ends with: the signal's reason, or a standard AbortError. */
export function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('the operation was aborted', 'AbortError');
}

/**
 * Stream from `provider` with timeouts. The provider gets its own AbortController, linked to the
 * caller's signal, so a timeout cancels the HTTP request without cancelling the caller's session.
 */
export async function* streamWithTimeouts(
  provider: Provider,
  request: ModelRequest,
  signal: AbortSignal,
  timeouts: StreamTimeouts,
): AsyncGenerator<Delta> {
  if (signal.aborted) throw abortReason(signal);
  const inner = new AbortController();
  const onAbort = () => inner.abort(abortReason(signal));
  signal.addEventListener('abort', onAbort, { once: true });
  const aborted = new Promise<never>((_, reject) => {
    inner.signal.addEventListener('abort', () => reject(inner.signal.reason), { once: true });
  });
  aborted.catch(() => {}); // only observed through the race below
  const iterator = provider.stream(request, inner.signal)[Symbol.asyncIterator]();
  let first = true;
  let finished = false;
  try {
    while (true) {
      const ms = first ? timeouts.firstTokenMs : timeouts.idleMs;
      let timer: NodeJS.Timeout | undefined;
      const timedOut = new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          const which = first
            ? `first-token timeout (${ms / 1000} s)`
            : `idle timeout (${ms / 1000} s without output)`;
          const error = new ModelError(
            'timeout',
            `${provider.baseUrl}: ${which} for model ${request.model}`,
            provider.baseUrl,
          );
          inner.abort(error);
          reject(error);
        }, ms);
      });
      const next = iterator.next();
      // if a timeout or abort wins the race, the provider's pending read still settles later
      next.catch(() => {});
      let result: IteratorResult<Delta>;
      try {
        result = await Promise.race([next, timedOut, aborted]);
      } finally {
        clearTimeout(timer);
      }
      if (result.done) {
        finished = true;
        return;
      }
      first = false;
      yield result.value;
    }
  } finally {
    signal.removeEventListener('abort', onAbort);
    if (!finished) {
      // stop the request if our consumer left early; don't wait on a provider that ignores aborts
      if (!inner.signal.aborted) inner.abort(new DOMException('stream closed', 'AbortError'));
      iterator.return?.().catch(() => {});
    }
  }
}
