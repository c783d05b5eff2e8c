/** A store URL as keel shows it: without its password (no driver loaded here: `keel config show` uses it). */

/** Query parameters of a postgres URL that carry a secret (libpq reads them as it reads the user info). */
const SECRET_PARAMS = /^(password|sslpassword)$/i;

/** A URL with its password (user info, or a `password=` parameter) replaced, for messages, `where` and `keel config show`. */
export function redact(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    const query = parsed.search
      .slice(1)
      .split('&')
      .map((pair) => {
        const name = decodeURIComponent(pair.split('=')[0] ?? '');
        return SECRET_PARAMS.test(name) ? `${pair.split('=')[0]}=***` : pair;
      })
      .join('&');
    // the query is rebuilt by hand: URLSearchParams would re-encode what it does not touch
    return `${parsed.toString().split('?')[0]}${parsed.search ? `?${query}` : ''}${parsed.hash}`;
  } catch {
    return url.replace(/:[^:@/]*@/, ':***@').replace(/([?&](?:ssl)?password=)[^&#]*/gi, '$1***');
  }
}
