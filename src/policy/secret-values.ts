/** Second looks at a candidate secret: placeholders, key names, entropy and decoded shapes a regex cannot judge. */

/** What a rule's `accept` sees besides the candidate: the file's text and where the match lies. */
export interface MatchContext {
  text: string;
  /** Offset of the whole match (for keyword-anchored rules, where the keyword starts). */
  matchStart: number;
  /** Offset of the candidate secret. */
  start: number;
}

// Well-known public values: vendors' documentation keys and test-chain keys copied into countless repos.
// A value containing EXAMPLE (AWS's AKIAIOSFODNN7EXAMPLE and its secret) is documentation for every rule.
const KNOWN_PUBLIC = new Set([
  // jwt.io's sample token
  'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c',
  // Hardhat's and Anvil's first development account, printed by both tools at every start
  '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80',
]);

/** False for documentation values and for tokens padded with filler (`ghp_xxxx…`, `sk_live_0000…`). */
export function isNotDocumentation(secret: string): boolean {
  if (KNOWN_PUBLIC.has(secret) || /example/i.test(secret)) return false;
  return !/([xX*0#.])\1{7}/.test(secret);
}

const PLACEHOLDER_WORDS = [
  'example',
  'placeholder',
  'changeme',
  'change_me',
  'change-me',
  'your',
  'xxxx',
  '****',
  '....',
  'dummy',
  'redacted',
  'sample',
  'replace',
  'todo',
  'insert',
  'fake',
  'test',
  // a value naming the thing (`'refresh_token'`, `'my-secret'`) is a label, not the secret
  'password',
  'passwd',
  'secret',
  'token',
];
const LITERALS = new Set([
  'null',
  'nil',
  'none',
  'undefined',
  'true',
  'false',
  'yes',
  'no',
  'on',
  'off',
  '~',
]);

/** True for values that stand in for a secret: templates, env-var references, fillers, labels, paths. */
export function isPlaceholder(value: string): boolean {
  const lower = value.toLowerCase();
  if (value.trim() === '' || LITERALS.has(lower) || KNOWN_PUBLIC.has(lower)) return true;
  // ${VAR}, $VAR, $(cmd), {{ tmpl }}, %(name)s, #{ruby}, <your-token>, ENC(...) and vault references
  if (/^[$!]|\$\{|\{\{|%\(|%s|#\{|<[^>]*>|^ENC\(|^(?:vault|arn|ref\+[a-z]+):/i.test(value)) return true;
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(value) || /^(?:\.{0,2}\/|~\/)/.test(value)) return true;
  if (/^[A-Z][A-Z0-9_]*$/.test(value) || /^(.)\1*$/.test(value) || /^[xX*._#-]+$/.test(value)) return true;
  if (/^[~^<>=v]*\d+(?:\.\d+)+/.test(value) || /^\d{1,12}$/.test(value)) return true;
  return PLACEHOLDER_WORDS.some((word) => lower.includes(word));
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A quoted value in code: digits and no spaces, since words, enum members and labels outnumber passwords. */
export function isRealValue(value: string): boolean {
  if (!/[0-9]/.test(value) || /\s/.test(value) || UUID.test(value)) return false;
  return !isPlaceholder(value);
}

/** An unquoted value in a config file: any non-placeholder that is not a plain lower-case word. */
export function isRealConfigValue(value: string): boolean {
  if (UUID.test(value) || isPlaceholder(value)) return false;
  // `required`, `disabled`, `my-secret-name`: settings and labels, not credentials
  return !/^[a-z]+(?:[-_][a-z]+)*$/.test(value);
}

/** The identifier that ends where `keywordStart`'s word ends: `DB_PASSWORD` for the `PASSWORD` in it. */
export function nameAround(text: string, keywordStart: number): string {
  let from = keywordStart;
  while (from > 0 && /[A-Za-z0-9_.-]/.test(text[from - 1] ?? '')) from--;
  const tail = /^[A-Za-z0-9_.-]*/.exec(text.slice(keywordStart, keywordStart + 80))?.[0] ?? '';
  return text.slice(from, keywordStart) + tail;
}

/** True when a key name says it holds a secret; `pass` and `pwd` only as a whole word (not `bypass`). */
export function isSecretName(name: string): boolean {
  const words = name
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter(Boolean);
  const last = words.at(-1) ?? '';
  if (/^(?:pass|pwd|passwd|passphrase)$/.test(last)) return true;
  // `max_tokens`, `tokens_used`: counts of model tokens
  if (
    last === 'tokens' &&
    words.some((w) => /^(?:max|min|num|total|prompt|completion|input|output)$/.test(w))
  )
    return false;
  return /(?:password|passwd|secret|secrets|token|tokens|key|credentials?)$/.test(last);
}

/** True when the line starts with the key: `KEY=value`, `export KEY=value`, `ENV KEY=value`, `- key: value`. */
export function startsLine(text: string, keywordStart: number): boolean {
  let from = keywordStart;
  while (from > 0 && /[A-Za-z0-9_.-]/.test(text[from - 1] ?? '')) from--;
  const lineStart = text.lastIndexOf('\n', from - 1) + 1;
  return /^[ \t]*(?:(?:export|ENV|ARG)[ \t]+|-[ \t]+)?["']?$/.test(text.slice(lineStart, from));
}

/** True when base64 decodes to `user:password` with a password that is not a placeholder. */
export function isUserPassword(encoded: string): boolean {
  const decoded = Buffer.from(encoded, 'base64').toString('latin1');
  // every byte printable ASCII: a random blob is not a credential pair
  if (!/^[\x20-\x7e]+$/.test(decoded)) return false;
  const colon = decoded.indexOf(':');
  if (colon < 1) return false;
  const password = decoded.slice(colon + 1);
  return password.length >= 3 && !isPlaceholder(password) && password.toLowerCase() !== 'pass';
}

/** True for a URL's password part that is real: not a template, a filler, or on a documentation host. */
export function isUrlPassword(password: string, ctx: MatchContext): boolean {
  if (/^(?:pass|pwd|pw|p|secret|changeme)$/i.test(password)) return false;
  // RFC 2606 reserves example.com/.org/.net for documentation (`https://abc:xyz@example.com`)
  const host = ctx.text.slice(ctx.start + password.length, ctx.start + password.length + 120);
  if (/^@(?:[A-Za-z0-9-]+\.)*example\.(?:com|org|net)\b/i.test(host)) return false;
  return !isPlaceholder(decodeURIComponentSafe(password));
}

function decodeURIComponentSafe(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** True when the first segment decodes to a JSON header with an `alg`, as every JWT's does. */
export function isJwt(token: string): boolean {
  if (KNOWN_PUBLIC.has(token)) return false;
  const header = token.slice(0, token.indexOf('.'));
  try {
    const parsed: unknown = JSON.parse(Buffer.from(header, 'base64url').toString('utf8'));
    return (
      typeof parsed === 'object' && parsed !== null && typeof (parsed as { alg?: unknown }).alg === 'string'
    );
  } catch {
    return false;
  }
}

/** True for a Discord bot token: its first segment is a base64 user id (a 17-20 digit snowflake). */
export function isDiscordToken(token: string): boolean {
  const id = Buffer.from(token.slice(0, token.indexOf('.')), 'base64url').toString('latin1');
  return /^\d{17,20}$/.test(id);
}

/** True when `"kty"` is near: a JWK's `"d"` is its private exponent; elsewhere `"d"` is anything. */
export function isInJwk(ctx: MatchContext): boolean {
  return /"kty"\s*:/.test(ctx.text.slice(Math.max(0, ctx.start - 2000), ctx.start + 2000));
}

/** True when a random token mixes letters and digits, as generated keys almost always do. */
export function isMixed(secret: string): boolean {
  return /[0-9]/.test(secret) && /[A-Za-z]/.test(secret) && isNotDocumentation(secret);
}

/** Shannon entropy in bits per character. */
export function shannonEntropy(text: string): number {
  const counts = new Map<string, number>();
  for (const ch of text) counts.set(ch, (counts.get(ch) ?? 0) + 1);
  let bits = 0;
  for (const n of counts.values()) {
    const p = n / text.length;
    bits -= p * Math.log2(p);
  }
  return bits;
}

// md5, sha1, sha256, sha512: commit ids and checksums are everywhere; a named hex key is still
// caught by `secret-assignment`
const HASH_LENGTHS = new Set([32, 40, 64, 128]);
// base64 of PNG, JPEG, GIF, PDF, WOFF, WASM and gzip data: embedded files, not keys
const BINARY_MAGIC = /^(?:iVBORw0KGgo|\/9j\/|R0lGOD|JVBER|d09G|AGFzbQ|H4sI)/;
// public halves and digests that sit under a name: JWK "n"/"x"/"y", integrity, checksums, nonces
const PUBLIC_NAME =
  /(?:^|[_.-])(?:n|e|x|y|x5c|x5t|kid|pub|public[_-]?key|publickey|cert|certificate|hash|digest|checksum|sha\d*|integrity|nonce|salt|iv|etag|id|uuid|fingerprint)$/i;

/** True for random-looking strings: hex above 3.0 bits per char, base64 above 4.5. */
export function isHighEntropy(candidate: string, ctx: MatchContext): boolean {
  const body = candidate.replace(/=+$/, '');
  // keys are random, so they almost always mix letters and digits; words and numbers do not
  if (!/[0-9]/.test(body) || !/[A-Za-z]/.test(body) || body.length > 256) return false;
  if (UUID.test(body) || isAlphabet(body) || isWords(body) || !isNotDocumentation(body)) return false;
  if (/^sha(?:1|256|384|512)-/.test(body) || BINARY_MAGIC.test(body)) return false;
  if (PUBLIC_NAME.test(nameBefore(ctx.text, ctx.start))) return false;
  // a hash under a short type prefix is an id (Twilio's account sid `AC…`), not a key
  if ([0, 1, 2, 3].some((k) => isHashAfter(body, k))) return false;
  if (/^[0-9a-f]+$/i.test(body)) return shannonEntropy(body) > 3.0;
  return shannonEntropy(body) > 4.5;
}

function isHashAfter(body: string, prefix: number): boolean {
  const rest = body.slice(prefix);
  return (
    /^[A-Za-z]*$/.test(body.slice(0, prefix)) && /^[0-9a-f]+$/i.test(rest) && HASH_LENGTHS.has(rest.length)
  );
}

/** The key a value is assigned to: `n` in `"n": "…"`, `pubKey` in `pubKey = '…'`; empty when none. */
function nameBefore(text: string, start: number): string {
  const before = text.slice(Math.max(0, start - 80), start);
  return /([A-Za-z0-9_.-]+)["'\]]?\s*(?::=|=>|[:=])\s*["'`]?$/.exec(before)?.[1] ?? '';
}

/** Encoding tables (`'ABC...xyz0123456789+/'`, nanoid's shuffled one) are random-looking but public. */
function isAlphabet(text: string): boolean {
  let ascending = 0;
  for (let i = 1; i < text.length; i++) if (text.charCodeAt(i) === text.charCodeAt(i - 1) + 1) ascending++;
  if (ascending * 3 > text.length) return true;
  // 48 random base64 characters repeat about a third of the time; a table repeats none
  return text.length >= 48 && new Set(text).size >= text.length * 0.9;
}

/** Identifiers like `Importing_a_JSON_file_1343` or `ab-cd/efg-2`: separated words, each maybe numbered. */
function isWords(text: string): boolean {
  const parts = text.split(/[-_/+]/);
  return parts.length >= 3 && parts.every((part) => /^[A-Za-z]*[0-9]*$/.test(part));
}
