/**
 * The hub's secrets: project tokens (`khp_…`), agent keys (`kha_…`) and the admin token. Each is a
 * random 256-bit value; the hub keeps only its SHA-256 and finds the row by the id the string carries,
 * then compares hashes in constant time. A slow KDF buys nothing for random values and would cap
 * throughput.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

export type TokenKind = 'project' | 'agent';

const PREFIX: Record<TokenKind, string> = { project: 'khp', agent: 'kha' };

export interface MintedToken {
  id: string;
  /** The whole string a client presents; shown once, never stored. */
  token: string;
  /** What the store keeps. */
  hash: string;
}

export function sha256(text: string | Buffer): string {
  return createHash('sha256').update(text).digest('hex');
}

/** A new token: `khp_<id>_<secret>` (project) or `kha_<id>_<secret>` (agent key). */
export function mintToken(kind: TokenKind): MintedToken {
  const id = randomBytes(9).toString('hex');
  const secret = randomBytes(32).toString('base64url');
  return { id, token: `${PREFIX[kind]}_${id}_${secret}`, hash: sha256(secret) };
}

/** The id and the secret's hash of a presented token, or undefined when it is not one of `kind`'s shape. */
export function parseToken(kind: TokenKind, token: string): { id: string; hash: string } | undefined {
  const m = /^(kh[pa])_([0-9a-f]{18})_([A-Za-z0-9_-]{43})$/.exec(token);
  if (!m || m[1] !== PREFIX[kind]) return undefined;
  return { id: m[2] as string, hash: sha256(m[3] as string) };
}

/** Two hex hashes compared in constant time. */
export function sameHash(a: string, b: string): boolean {
  const x = Buffer.from(a, 'hex');
  const y = Buffer.from(b, 'hex');
  return x.length === y.length && x.length > 0 && timingSafeEqual(x, y);
}

/** A presented admin token against the configured one, in constant time (both hashed to one length). */
export function sameSecret(given: string, expected: string): boolean {
  return given.length > 0 && expected.length > 0 && sameHash(sha256(given), sha256(expected));
}

/** The bearer token of an Authorization header, or ''. */
export function bearer(header: string | undefined): string {
  return header?.startsWith('Bearer ') ? header.slice(7).trim() : '';
}
