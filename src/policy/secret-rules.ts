/** The secret detectors: one pattern per kind of credential, plus the generic heuristics. */
import { basename } from 'node:path';
import {
  isDiscordToken,
  isHighEntropy,
  isInJwk,
  isJwt,
  isMixed,
  isNotDocumentation,
  isPlaceholder,
  isRealConfigValue,
  isRealValue,
  isSecretName,
  isUrlPassword,
  isUserPassword,
  type MatchContext,
  nameAround,
  startsLine,
} from './secret-values.js';

export { shannonEntropy } from './secret-values.js';

/** Stable rule ids; they appear in output and in `keel-allow:` pragmas. */
export type RuleId =
  | 'gcp-service-account'
  | 'private-key'
  | 'hex-private-key'
  | 'aws-access-key'
  | 'aws-secret-key'
  | 'azure-storage-key'
  | 'azure-key'
  | 'google-api-key'
  | 'github-token'
  | 'gitlab-token'
  | 'slack-webhook'
  | 'slack-token'
  | 'discord-token'
  | 'discord-webhook'
  | 'telegram-bot-token'
  | 'npm-token'
  | 'pypi-token'
  | 'docker-auth'
  | 'stripe-key'
  | 'square-token'
  | 'shopify-token'
  | 'openai-key'
  | 'anthropic-key'
  | 'huggingface-token'
  | 'twilio-key'
  | 'sendgrid-key'
  | 'mailgun-key'
  | 'heroku-key'
  | 'digitalocean-token'
  | 'vault-token'
  | 'databricks-token'
  | 'jwt'
  | 'basic-auth'
  | 'url-credentials'
  | 'secret-assignment'
  | 'high-entropy';

/**
 * One detector: a global regex whose `secret` group (or whole match) is the credential; a pattern with
 * alternatives names them `secret`, `secret2`, ... and the first that matched is the credential.
 */
export interface SecretRule {
  id: RuleId;
  /** `vendor` rules match a credential's own shape; `heuristic` ones guess, so lock files skip them. */
  kind: 'vendor' | 'heuristic';
  pattern: RegExp;
  /**
   * A cheap test on the whole file; when it fails the pattern is not run. Only worth it where the pattern
   * costs more than a literal search (bench/secrets.mjs measures both).
   */
  hint?: RegExp;
  /** Only files whose path passes are scanned with this rule. */
  files?: (path: string) => boolean;
  /** A second look at a candidate, for checks a regex cannot express. */
  accept?: (secret: string, ctx: MatchContext) => boolean;
}

// Every quantifier is bounded so one pathological line (a minified bundle, a data URI) stays linear.
const B64 = 'A-Za-z0-9+/';
// A token's edges: no identifier character may continue it on either side.
const START = '(?<![A-Za-z0-9_-])';
const END = '(?![A-Za-z0-9_-])';
const token = (body: string, flags = 'dg') => new RegExp(`${START}(?<secret>${body})${END}`, flags);

// Key names that say the value is a secret; the keyword must end the name (`apiKey`, `DB_PASSWORD`,
// not `tokenizer` or `password_hash`), which the operator right after it enforces.
const SECRET_WORDS =
  '(?:password|passwd|passphrase|pwd|pass|secret[_-]?key|secret|token|api[_-]?key|apikey|access[_-]?key|auth[_-]?key|private[_-]?key|signing[_-]?key|encryption[_-]?key|master[_-]?key|credentials?)s?';
const ASSIGN = `["'\\]]?[ \\t]*(?::=|=>|[:=])(?!=)[ \\t]*`;
const SECRET_HINT = /pass|pwd|secret|token|key|credential/i;

const CONFIG_EXT =
  /\.(?:env|ya?ml|properties|ini|cfg|conf|cnf|toml|sh|bash|zsh|ksh|envrc|npmrc|pypirc|netrc|tfvars)$/i;
const CONFIG_NAMES =
  /^(?:\.env(?:\..+)?|\.envrc|\.npmrc|\.pypirc|\.netrc|credentials|dockerfile|.+\.dockerfile)$/i;

/** Config, environment and shell files, where `KEY=value` with no quotes is how a secret is written. */
export function isConfigFile(path: string): boolean {
  const name = basename(path);
  return CONFIG_NAMES.test(name) || CONFIG_EXT.test(name);
}

/**
 * Files that hold credentials by their name: environment and package-registry credential files, SSH and
 * TLS private keys, git's stored credentials. (`Dockerfile` is a config file, not a credential file.)
 */
export function isCredentialFile(path: string): boolean {
  const name = basename(path).toLowerCase();
  return (
    (CONFIG_NAMES.test(name) && !/dockerfile$/.test(name)) ||
    /^id_(?:rsa|dsa|ecdsa|ed25519)(?:_sk)?$/.test(name) ||
    /\.(?:pem|key|p12|pfx|jks|keystore)$/.test(name) ||
    name === '.git-credentials'
  );
}

const keyed = (ctx: MatchContext) => isSecretName(nameAround(ctx.text, ctx.matchStart));

/** Rules in priority order: when two findings overlap, the earlier (more specific) rule wins. */
export const RULES: readonly SecretRule[] = [
  {
    id: 'gcp-service-account',
    kind: 'vendor',
    hint: /"private_key"/,
    pattern: /"private_key"\s*:\s*"(?<secret>-----BEGIN[A-Z ]{0,20}PRIVATE KEY-----[^"]{32,8000})"/dg,
  },
  {
    id: 'private-key',
    kind: 'vendor',
    // PEM (RSA, EC, DSA, OPENSSH, PKCS#8, ENCRYPTED) and PGP blocks; a header alone is how code that
    // handles keys looks, a key has a body after it
    pattern: new RegExp(
      `(?<secret>-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----)[\\s\\S]{0,300}?[${B64}]{32}`,
      'dg',
    ),
  },
  {
    id: 'private-key',
    kind: 'vendor',
    hint: /Private-Lines:/,
    // a PuTTY .ppk file: the private half follows its line count
    pattern: new RegExp(`Private-Lines:[ \\t]*\\d{1,3}\\r?\\n(?<secret>[${B64}]{32,128})`, 'dg'),
  },
  {
    id: 'private-key',
    kind: 'vendor',
    hint: /"kty"/,
    // a JWK's private exponent
    pattern: /"d"\s*:\s*"(?<secret>[A-Za-z0-9_-]{20,2000})"/dg,
    accept: (_, ctx) => isInJwk(ctx),
  },
  {
    id: 'hex-private-key',
    kind: 'vendor',
    hint: /0x/,
    // wallet keys: 0x + 32 bytes under a name that says key (transaction and block hashes look the same)
    pattern: new RegExp(
      `(?:key|pk|secret|private|priv)${ASSIGN}["'\`]?(?<secret>0x[0-9a-fA-F]{64})(?![0-9a-fA-F])`,
      'dgi',
    ),
    accept: (secret) => isNotDocumentation(secret),
  },
  {
    id: 'aws-access-key',
    kind: 'vendor',
    pattern: /\b(?<secret>(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16})\b/dg,
    accept: isNotDocumentation,
  },
  {
    id: 'aws-secret-key',
    kind: 'vendor',
    hint: /secret.?(?:access.?)?key/i,
    pattern: new RegExp(
      `(?:aws[A-Za-z0-9_.-]{0,20}?secret[_.-]?(?:access[_.-]?)?key|SecretAccessKey)["']?\\s*(?::=|=>|[:=])\\s*["'\`]?(?<secret>[${B64}]{40})(?![${B64}=])`,
      'dgi',
    ),
    accept: isNotDocumentation,
  },
  {
    id: 'azure-storage-key',
    kind: 'vendor',
    pattern: new RegExp(`AccountKey=(?<secret>[${B64}]{86}==)`, 'dgi'),
  },
  {
    id: 'azure-key',
    kind: 'vendor',
    hint: /SharedAccessKey=|sig=|Q~/,
    // Service Bus / Event Hubs connection strings, SAS signatures, Entra ID client secrets (`…8Q~…`)
    pattern: new RegExp(
      `SharedAccessKey=(?<secret>[${B64}]{43}=)|[?&]sig=(?<secret2>[A-Za-z0-9%]{43,100})|(?<![A-Za-z0-9_~.-])(?<secret3>[A-Za-z0-9_~.-]{3}\\dQ~[A-Za-z0-9_~.-]{31,34})(?![A-Za-z0-9_~.-])`,
      'dg',
    ),
    accept: (secret) => isMixed(secret) && (!secret.includes('%') || /%(?:2B|2F|3D)/i.test(secret)),
  },
  {
    id: 'google-api-key',
    kind: 'vendor',
    // API keys and OAuth client secrets
    pattern: token('AIza[0-9A-Za-z_-]{35}|GOCSPX-[0-9A-Za-z_-]{28}'),
    accept: isNotDocumentation,
  },
  {
    id: 'github-token',
    kind: 'vendor',
    pattern: /\b(?<secret>gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b/dg,
    accept: isNotDocumentation,
  },
  {
    id: 'gitlab-token',
    kind: 'vendor',
    pattern: token('(?:glpat|gldt|glptt|glrt|glsoat|glcbt|glft|glimt|glagent|gloas)-[A-Za-z0-9_.-]{20,80}'),
    accept: isMixed,
  },
  {
    id: 'slack-webhook',
    kind: 'vendor',
    pattern:
      /https:\/\/hooks\.slack\.com\/(?:services|workflows|triggers)\/(?<secret>[A-Za-z0-9_/-]{20,300})/dg,
    accept: isNotDocumentation,
  },
  {
    id: 'slack-token',
    kind: 'vendor',
    pattern:
      /\b(?<secret>xoxe\.xox[bp]-\d-[A-Za-z0-9-]{10,250}|xox[abposre]-[A-Za-z0-9-]{10,250}|xapp-\d-[A-Za-z0-9-]{10,250})/dg,
    // real tokens carry numeric team and user ids; `xoxb-your-token-here` does not
    accept: (s) => /\d/.test(s) && isNotDocumentation(s),
  },
  {
    id: 'discord-webhook',
    kind: 'vendor',
    pattern:
      /https:\/\/(?:ptb\.|canary\.)?discord(?:app)?\.com\/api\/webhooks\/\d{17,20}\/(?<secret>[A-Za-z0-9_-]{60,80})/dg,
    accept: isNotDocumentation,
  },
  {
    id: 'discord-token',
    kind: 'vendor',
    pattern: token('[MNO][A-Za-z0-9_-]{23,27}\\.[A-Za-z0-9_-]{6,7}\\.[A-Za-z0-9_-]{27,40}'),
    accept: isDiscordToken,
  },
  {
    id: 'telegram-bot-token',
    kind: 'vendor',
    hint: /:AA/,
    pattern: /(?<![A-Za-z0-9_:-])(?<secret>\d{8,10}:AA[A-Za-z0-9_-]{33})(?![A-Za-z0-9_-])/dg,
    accept: isNotDocumentation,
  },
  {
    id: 'npm-token',
    kind: 'vendor',
    pattern: /\b(?<secret>npm_[A-Za-z0-9]{36})\b/dg,
    accept: isNotDocumentation,
  },
  {
    id: 'npm-token',
    kind: 'vendor',
    hint: /_auth|_password/,
    // .npmrc: `//registry/:_authToken=…`, `_auth=base64(user:pass)`, `_password=…`
    pattern: /(?:^|[:\s])_(?:authToken|auth|password)[ \t]*=[ \t]*["']?(?<secret>[^\s"'#;]{8,400})/dgm,
    // legacy npm tokens are UUIDs, so only placeholders are let through
    accept: (s) => !isPlaceholder(s) && isNotDocumentation(s),
  },
  {
    id: 'pypi-token',
    kind: 'vendor',
    pattern: token('pypi-AgE(?:IcHlwaS5vcmc|NdGVzdC5weXBpLm9yZw)[A-Za-z0-9_-]{50,300}'),
  },
  {
    id: 'docker-auth',
    kind: 'vendor',
    hint: /"auth"/,
    // ~/.docker/config.json: base64 of user:password per registry
    pattern: /"auth"\s*:\s*"(?<secret>[A-Za-z0-9+/]{8,2000}={0,2})"/dg,
    accept: isUserPassword,
  },
  {
    id: 'stripe-key',
    kind: 'vendor',
    pattern: /\b(?<secret>[sr]k_live_[A-Za-z0-9]{20,247}|whsec_[A-Za-z0-9]{32,64})\b/dg,
    accept: isNotDocumentation,
  },
  {
    id: 'square-token',
    kind: 'vendor',
    pattern: token('sq0atp-[A-Za-z0-9_-]{22}|sq0csp-[A-Za-z0-9_-]{43}|EAAA[A-Za-z0-9_-]{60}'),
    accept: isMixed,
  },
  {
    id: 'shopify-token',
    kind: 'vendor',
    pattern: token('shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}'),
    accept: isMixed,
  },
  {
    id: 'anthropic-key',
    kind: 'vendor',
    pattern: token('sk-ant-(?:api|admin|oat|sid)\\d{2}-[A-Za-z0-9_-]{80,120}'),
    accept: isNotDocumentation,
  },
  {
    id: 'openai-key',
    kind: 'vendor',
    pattern: token(
      'sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{40,250}|sk-[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}|sk-[A-Za-z0-9]{48}',
    ),
    accept: isMixed,
  },
  {
    id: 'huggingface-token',
    kind: 'vendor',
    pattern: token('(?:hf_|api_org_)[A-Za-z0-9]{34}'),
    accept: (s) => /[a-z]/.test(s) && /[A-Z]/.test(s) && isNotDocumentation(s),
  },
  {
    id: 'twilio-key',
    kind: 'vendor',
    // an API key sid; the account sid (AC…) is an identifier, not a secret
    pattern: token('SK[0-9a-f]{32}'),
    accept: isMixed,
  },
  {
    id: 'sendgrid-key',
    kind: 'vendor',
    hint: /SG\./,
    pattern: token('SG\\.[A-Za-z0-9_-]{22}\\.[A-Za-z0-9_-]{43}'),
    accept: isNotDocumentation,
  },
  {
    id: 'mailgun-key',
    kind: 'vendor',
    hint: /key-/,
    pattern: token('key-[0-9a-f]{32}'),
    accept: isMixed,
  },
  {
    id: 'heroku-key',
    kind: 'vendor',
    hint: /HRKU-|heroku/i,
    // the new format, and the old one: a UUID under a Heroku name (a bare UUID is an id)
    pattern:
      /\b(?<secret>HRKU-AA[A-Za-z0-9_-]{58})|heroku[A-Za-z0-9_.-]{0,20}?(?:api[_.-]?key|token)["']?\s*(?::=|=>|[:=])\s*["']?(?<secret2>[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\b/dgi,
    accept: isNotDocumentation,
  },
  {
    id: 'digitalocean-token',
    kind: 'vendor',
    pattern: token('do[opr]_v1_[a-f0-9]{64}'),
    accept: isMixed,
  },
  {
    id: 'vault-token',
    kind: 'vendor',
    pattern: token('hv[sbr]\\.[A-Za-z0-9_-]{24,250}'),
    accept: isMixed,
  },
  {
    id: 'databricks-token',
    kind: 'vendor',
    hint: /dapi/,
    pattern: token('dapi[a-f0-9]{32}(?:-\\d)?'),
    accept: isMixed,
  },
  {
    id: 'jwt',
    kind: 'vendor',
    hint: /ey/,
    pattern: /\b(?<secret>ey[A-Za-z0-9_-]{10,2000}\.[A-Za-z0-9_-]{10,20000}\.[A-Za-z0-9_-]{0,2000})/dg,
    accept: isJwt,
  },
  {
    id: 'basic-auth',
    kind: 'vendor',
    hint: /basic/i,
    pattern: /authorization["']?\s*[:=,]\s*["']?basic[ \t]+(?<secret>[A-Za-z0-9+/]{8,400}={0,2})/dgi,
    accept: isUserPassword,
  },
  {
    id: 'url-credentials',
    kind: 'vendor',
    // scheme://user:password@host (the password is the secret; `git@host` has none); anchored on `://`,
    // which V8 finds by literal search, so text without URLs costs almost nothing
    pattern: /:\/\/[^\s:/?#@'"`<>]{0,100}:(?<secret>[^\s:/?#@'"`<>]{1,200})@(?=[A-Za-z0-9[_.-])/dg,
    accept: isUrlPassword,
  },
  {
    id: 'secret-assignment',
    kind: 'heuristic',
    hint: SECRET_HINT,
    pattern: new RegExp(`${SECRET_WORDS}${ASSIGN}(?<q>["'\`])(?<secret>[^"'\`\\r\\n]{6,200})\\k<q>`, 'dgi'),
    accept: (secret, ctx) => isRealValue(secret) && keyed(ctx),
  },
  {
    id: 'secret-assignment',
    kind: 'heuristic',
    hint: SECRET_HINT,
    files: isConfigFile,
    // `KEY=value`, `key: value`, `key = value` with no quotes, at the start of a line
    pattern: new RegExp(`${SECRET_WORDS}${ASSIGN}(?<secret>[^\\s"'\`][^\\s]{5,200})(?=\\s|$)`, 'dgi'),
    accept: (secret, ctx) => isRealConfigValue(secret) && keyed(ctx) && startsLine(ctx.text, ctx.matchStart),
  },
  {
    id: 'high-entropy',
    kind: 'heuristic',
    pattern: new RegExp(`(?:["'\`]|=[ \\t]*)(?<secret>[${B64}_-]{20,1000}={0,2})(?![${B64}_=-])`, 'dg'),
    accept: isHighEntropy,
  },
];
