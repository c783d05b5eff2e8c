/** Calls to keel serve: the bearer token on every request, errors as one line. */

const TOKEN_KEY = 'keel.token';

/** Move a `#token=...` from the URL into sessionStorage and out of the address bar. */
export function takeToken(): void {
  const match = /(?:^#|[#&])token=([^&]+)/.exec(location.hash);
  if (!match?.[1]) return;
  sessionStorage.setItem(TOKEN_KEY, decodeURIComponent(match[1]));
  // the token must not linger in history or be copied with the address
  history.replaceState(null, '', `${location.pathname}${location.search}#/`);
}

export function token(): string | null {
  return sessionStorage.getItem(TOKEN_KEY);
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** The served project the page answers for, by its name; null when the server serves one (no choice to send). */
let project: string | null = null;

export function setProject(name: string | null): void {
  project = name;
}

/**
 * An API path for the chosen project: `?project=NAME` on every `/v1/` route but the list of projects.
 * Every request of the page goes through here, the event stream and the patch download too; `name` asks
 * another served project than the chosen one (the approvals alert reads every project's).
 */
export function scoped(path: string, name: string | null = project): string {
  if (name === null || !path.startsWith('/v1/') || path.startsWith('/v1/projects')) return path;
  return `${path}${path.includes('?') ? '&' : '?'}project=${encodeURIComponent(name)}`;
}

/** Request headers: the token (never a cookie) and JSON. */
export function headers(extra: Record<string, string> = {}): Record<string, string> {
  const h: Record<string, string> = { Accept: 'application/json', ...extra };
  const t = token();
  if (t) h.Authorization = `Bearer ${t}`;
  return h;
}

/**
 * Fetch JSON from the API, for the chosen project or the one `init.project` names; a failure throws
 * ApiError with the server's code and one-line message.
 */
export async function api<T>(
  path: string,
  init: { method?: string; body?: unknown; signal?: AbortSignal; project?: string } = {},
): Promise<T> {
  let res: Response;
  try {
    res = await fetch(init.project === undefined ? scoped(path) : scoped(path, init.project), {
      method: init.method ?? 'GET',
      headers: headers(init.body === undefined ? {} : { 'Content-Type': 'application/json' }),
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
      signal: init.signal,
      credentials: 'omit',
      cache: 'no-store',
    });
  } catch (err) {
    if ((err as Error).name === 'AbortError') throw err;
    throw new ApiError(0, 'NETWORK', `cannot reach keel serve (${path})`);
  }
  const text = await res.text();
  let body: unknown = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = null;
  }
  if (!res.ok) {
    const b = (body ?? {}) as { code?: string; error?: string };
    let message = b.error ?? `${res.status} ${res.statusText}`;
    if (res.status === 401) message += ' — open the address keel serve printed (it carries #token=…)';
    throw new ApiError(
      res.status,
      b.code ?? `HTTP_${res.status}`,
      `${init.method ?? 'GET'} ${path}: ${message}`,
    );
  }
  return body as T;
}
