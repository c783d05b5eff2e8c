/** The secret detectors: one pattern per kind of credential, plus the generic heuristics. */

/** Stable rule ids; they appear in output and in `keel-allow:` pragmas. */
export type RuleId =
  | 'gcp-service-account'
  | 'private-key'
  | 'aws-access-key'
  | 'aws-secret-key'
  | 'azure-storage-key'
  | 'github-token'
  | 'slack-webhook'
  | 'slack-token'
  | 'npm-token'
  | 'stripe-key'
  | 'jwt'
  | 'secret-assignment'
  | 'high-entropy';

/** One detector: a global regex whose `secret` group (or whole match) is the credential. */
export interface SecretRule {
  id: RuleId;
  /** `vendor` rules match a credential's own shape; `heuristic` ones guess, so lock files skip them. */
  kind: 'vendor' | 'heuristic';
  pattern: RegExp;
  /** A second look at a candidate, for checks a regex cannot express. */
  accept?: (secret: string) => boolean;
}

// Every quantifier is bounded so one pathological line (a minified bundle, a data URI) stays linear.
const B64 = 'A-Za-z0-9+/';

/** Rules in priority order: when two findings overlap, the earlier (more specific) rule wins. */
export const RULES: readonly SecretRule[] = [
  {
    id: 'gcp-service-account',
    kind: 'vendor',
    pattern: /"private_key"\s*:\s*"(?<secret>-----BEGIN[A-Z ]{0,20}PRIVATE KEY-----[^"]{32,8000})"/dg,
  },
  {
    id: 'private-key',
    kind: 'vendor',
    // a header alone is how code that handles keys looks; a key has a body after it
    pattern: new RegExp(
      `(?<secret>-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----)[\\s\\S]{0,300}?[${B64}]{32}`,
      'dg',
    ),
  },
  { id: 'aws-access-key', kind: 'vendor', pattern: /\b(?<secret>(?:AKIA|ASIA)[A-Z0-9]{16})\b/dg },
  {
    id: 'aws-secret-key',
    kind: 'vendor',
    pattern: new RegExp(
      `aws[A-Za-z0-9_.-]{0,20}?secret[_.-]?(?:access[_.-]?)?key["']?\\s*(?::=|=>|[:=])\\s*["'\`]?(?<secret>[${B64}]{40})(?![${B64}=])`,
      'dgi',
    ),
  },
  {
    id: 'azure-storage-key',
    kind: 'vendor',
    pattern: new RegExp(`AccountKey=(?<secret>[${B64}]{86}==)`, 'dgi'),
  },
  {
    id: 'github-token',
    kind: 'vendor',
    pattern: /\b(?<secret>gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b/dg,
  },
  {
    id: 'slack-webhook',
    kind: 'vendor',
    pattern:
      /https:\/\/hooks\.slack\.com\/(?:services|workflows|triggers)\/(?<secret>[A-Za-z0-9_/-]{20,300})/dg,
  },
  {
    id: 'slack-token',
    kind: 'vendor',
    pattern: /\b(?<secret>xox[baprs]-[A-Za-z0-9-]{10,250})/dg,
    // real tokens carry numeric team and user ids; `xoxb-your-token-here` does not
    accept: (s) => /\d/.test(s),
  },
  { id: 'npm-token', kind: 'vendor', pattern: /\b(?<secret>npm_[A-Za-z0-9]{36})\b/dg },
  { id: 'stripe-key', kind: 'vendor', pattern: /\b(?<secret>[sr]k_live_[A-Za-z0-9]{20,247})\b/dg },
  {
    id: 'jwt',
    kind: 'vendor',
    pattern: /\b(?<secret>ey[A-Za-z0-9_-]{10,2000}\.[A-Za-z0-9_-]{10,20000}\.[A-Za-z0-9_-]{0,2000})/dg,
    accept: isJwt,
  },
  {
    id: 'secret-assignment',
    kind: 'heuristic',
    // the keyword must end the name: `apiKey`, `DB_PASSWORD`, not `tokenizer` or `password_hash`
    pattern:
      /(?<![A-Za-z0-9_])[A-Za-z0-9_.-]{0,40}?(?:password|passwd|secret|token|api[_-]?key|apikey|access[_-]?key|secret[_-]?key|auth[_-]?key|private[_-]?key|client[_-]?secret|credentials?)s?["']?[ \t]*(?::=|=>|[:=])(?!=)[ \t]*(?<q>["'`])(?<secret>[^"'`\r\n]{6,200})\k<q>/dgi,
    accept: isRealValue,
  },
  {
    id: 'high-entropy',
    kind: 'heuristic',
    pattern: new RegExp(`(?:["'\`]|=[ \\t]*)(?<secret>[${B64}_-]{20,1000}={0,2})(?![${B64}_=-])`, 'dg'),
    accept: isHighEntropy,
  },
];

/** True when the first segment decodes to a JSON header with an `alg`, as every JWT's does. */
function isJwt(token: string): boolean {
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
  // a value naming the thing (`'refresh_token'`, `'my-secret'`) is a label, not the secret
  'password',
  'passwd',
  'secret',
  'token',
];

/** False for values that are plainly not secrets: prose, templates, env-var names, paths, placeholders. */
function isRealValue(value: string): boolean {
  // words, enum members and labels (`'include'`, `'peanuts'`) outnumber digit-free passwords by far
  if (!/[0-9]/.test(value) || /\s/.test(value)) return false;
  if (/^[~^<>=v]*\d+(?:\.\d+)+/.test(value)) return false;
  if (/^\$|\$\{|\{\{|%\(|%s|<[^>]*>/.test(value)) return false;
  if (/^[A-Z][A-Z0-9_]*$/.test(value)) return false;
  if (/^(?:\.{0,2}\/|~\/|https?:\/\/)/.test(value)) return false;
  if (/^(.)\1*$/.test(value)) return false;
  const lower = value.toLowerCase();
  if (['null', 'none', 'undefined', 'true', 'false', 'test'].includes(lower)) return false;
  return !PLACEHOLDER_WORDS.some((word) => lower.includes(word));
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

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
// md5, sha1, sha256, sha512: commit ids and checksums are everywhere; a named hex key is still
// caught by `secret-assignment`
const HASH_LENGTHS = new Set([32, 40, 64, 128]);

/** True for random-looking strings: hex above 3.0 bits per char, base64 above 4.5. */
function isHighEntropy(candidate: string): boolean {
  const body = candidate.replace(/=+$/, '');
  // keys are random, so they almost always mix letters and digits; words and numbers do not
  if (!/[0-9]/.test(body) || !/[A-Za-z]/.test(body)) return false;
  if (UUID.test(body) || isAlphabet(body) || isWords(body)) return false;
  if (/^[0-9a-f]+$/i.test(body)) return !HASH_LENGTHS.has(body.length) && shannonEntropy(body) > 3.0;
  return shannonEntropy(body) > 4.5;
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
