/** Classifying HTTP statuses, network failures and Retry-After headers into ModelErrors. */
import { ModelError, type ModelErrorKind } from './types.js';

/** The error kind an HTTP status means. */
export function kindForStatus(status: number): ModelErrorKind {
  if (status === 401 || status === 403) return 'auth';
  if (status === 404) return 'not_found';
  if (status === 408) return 'timeout';
  if (status === 429) return 'rate_limit';
  if (status >= 500) return 'server';
  if (status >= 400) return 'bad_request';
  return 'protocol';
}

/** Seconds to wait from Retry-After (seconds or an HTTP date) or retry-after-ms, when present and sane. */
export function parseRetryAfter(get: (name: string) => string | null | undefined): number | undefined {
  const ms = get('retry-after-ms');
  if (ms) {
    const n = Number(ms);
    if (Number.isFinite(n) && n >= 0) return n / 1000;
  }
  const value = get('retry-after');
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds;
  const date = Date.parse(value);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, (date - Date.now()) / 1000);
}

const NETWORK_CAUSES: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host not found (DNS lookup failed)',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ETIMEDOUT: 'connection timed out',
  EPIPE: 'connection closed',
  UND_ERR_CONNECT_TIMEOUT: 'connection timed out',
  UND_ERR_SOCKET: 'connection closed by the server',
};

/** A short human cause for a network failure, walking the `cause` chain for a system error code. */
export function describeNetworkError(err: unknown): string {
  let current: unknown = err;
  // without a system code, the innermost message is the most specific ("bad port", not "fetch failed")
  let innermost = err instanceof Error ? err.message : String(err);
  for (let depth = 0; depth < 5 && current; depth++) {
    if (typeof current === 'object' && current !== null) {
      if (current instanceof Error && current.message) innermost = current.message;
      const code = (current as { code?: unknown }).code;
      if (typeof code === 'string') return NETWORK_CAUSES[code] ?? code.toLowerCase();
      // AggregateError from happy-eyeballs carries the real causes in `errors`
      const errors = (current as { errors?: unknown }).errors;
      if (Array.isArray(errors) && errors.length > 0) {
        current = errors[0];
        continue;
      }
      current = (current as { cause?: unknown }).cause;
    } else break;
  }
  return innermost;
}

/** The ModelError for a server that could not be reached. */
export function unreachableError(url: string, err: unknown): ModelError {
  return new ModelError('unreachable', `cannot reach ${url}: ${describeNetworkError(err)}`, url);
}

/** The ModelError for an HTTP error answer; `detail` is the server's own message when it gave one. */
export function httpError(url: string, status: number, detail: string, retryAfterS?: number): ModelError {
  const kind = kindForStatus(status);
  const hint =
    kind === 'auth'
      ? ' (check the API key)'
      : kind === 'not_found'
        ? ' (check base_url and the model name)'
        : '';
  const text = detail.trim().slice(0, 500);
  return new ModelError(
    kind,
    `${url}: HTTP ${status}${hint}${text ? `: ${text}` : ''}`,
    url,
    status,
    retryAfterS,
  );
}

/** The message inside a JSON error body ({error: {message}} or {error: "..."}), else the text itself. */
export function errorDetail(body: string): string {
  try {
    const parsed: unknown = JSON.parse(body);
    if (typeof parsed === 'object' && parsed !== null && 'error' in parsed) {
      const e = (parsed as { error: unknown }).error;
      if (typeof e === 'string') return e;
      if (typeof e === 'object' && e !== null && typeof (e as { message?: unknown }).message === 'string') {
        return (e as { message: string }).message;
      }
    }
  } catch {
    // not JSON: the text is the detail
  }
  return body;
}
