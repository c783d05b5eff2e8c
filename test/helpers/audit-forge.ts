/** What a forger without keel's audit key can do to a chain: re-link every line and write a matching head. */
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { canonicalJson } from '../../src/store/audit-chain.js';

type Line = Record<string, unknown>;

/** The lines of one day file, parsed. */
export function readChainLines(file: string): Line[] {
  return readFileSync(file, 'utf8')
    .trimEnd()
    .split('\n')
    .map((l) => JSON.parse(l) as Line);
}

/**
 * Re-chain `lines` from the genesis as keel's format says (sha256 links, seq from 1), sealing each line and
 * the head with `key` (the forger's own, since keel's is out of reach) or leaving seals off, then write
 * them as `file` in `dir` with a head.json that agrees.
 */
export function forgeChain(dir: string, name: string, lines: Line[], key: Buffer | 'unsealed'): void {
  let prev = '0'.repeat(64);
  const out = lines.map((line, i) => {
    const { hash: _h, mac: _m, ...rest } = line;
    const body = { ...rest, seq: i + 1, prev };
    const text = canonicalJson(body);
    const hash = createHash('sha256').update(text).digest('hex');
    prev = hash;
    const mac = key === 'unsealed' ? {} : { mac: mac256(key, 'line', text) };
    return { ...body, hash, ...mac };
  });
  writeFileSync(join(dir, name), out.map((l) => `${JSON.stringify(l)}\n`).join(''));
  const head = { count: out.length, hash: prev, file: name, line: out.length };
  const sealed = key === 'unsealed' ? head : { ...head, mac: mac256(key, 'head', canonicalJson(head)) };
  writeFileSync(join(dir, 'head.json'), `${JSON.stringify(sealed)}\n`);
}

/** A key that is not keel's. */
export function otherKey(): Buffer {
  return randomBytes(32);
}

function mac256(key: Buffer, domain: 'line' | 'head', text: string): string {
  return createHmac('sha256', key).update(`keel-audit-${domain}\n`).update(text).digest('hex');
}
