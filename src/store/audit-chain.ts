/** The audit chain's shapes, hashing and seals: what a line is, how it is hashed and keyed, where it lives. */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { headMac, lineMac } from './audit-key.js';

/** What a caller records: metadata only, never file contents, prompts or secrets. */
export interface AuditEntry {
  type: string;
  session_id?: string;
  [k: string]: unknown;
}

/** One line of the chain as written: the entry plus its place, hashes and seal. */
export interface AuditLine extends AuditEntry {
  seq: number;
  ts: string;
  prev: string;
  hash: string;
  /** HMAC of the body under the audit key; absent only in lines written by keel before keys existed. */
  mac?: string;
}

/** The contents of `head.json`: where the chain ended after the last acknowledged append. */
export interface AuditHead {
  count: number;
  hash: string;
  file: string;
  line: number;
  /** HMAC of the other four fields; absent only in a head written by keel before keys existed. */
  mac?: string;
}

/**
 * The chain on disk cannot be extended honestly (a head missing, unsealed, badly sealed or unreadable).
 * Its errno-style code makes every face report it as an environment error (exit 3) with this message.
 */
export class AuditChainError extends Error {
  override name = 'AuditChainError';
  readonly code = 'EAUDITCHAIN';
}

/** The `prev` of the very first line. */
export const GENESIS = '0'.repeat(64);
/** The head file's name inside the audit folder. */
export const HEAD_FILE = 'head.json';
/** Fields the chain owns; an entry may not set them. */
export const RESERVED = ['seq', 'ts', 'prev', 'hash', 'mac'] as const;

const DAY_FILE = /^\d{4}-\d{2}-\d{2}\.jsonl$/;

/** JSON with object keys sorted at every depth, so the same value always hashes the same. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const obj = value as Record<string, unknown>;
    const keys = Object.keys(obj)
      .filter((k) => obj[k] !== undefined)
      .sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(obj[k])}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** Hex sha256 of a string. */
export function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** The canonical text a line's hash and seal cover: everything but `hash` and `mac` (so `seq` and `prev` are in). */
export function lineBody(line: Record<string, unknown>): string {
  const { hash: _hash, mac: _mac, ...body } = line;
  return canonicalJson(body);
}

/** The hash a line must carry: sha256 over its canonical body. */
export function hashOf(line: Record<string, unknown>): string {
  return sha256(lineBody(line));
}

/** Whether a line's seal is the one `key` gives its body; false for an unsealed line. */
export function lineSealed(key: Buffer, line: AuditLine): boolean {
  return typeof line.mac === 'string' && line.mac === lineMac(key, lineBody(line));
}

/** The seal head.json must carry for these four fields. */
export function sealHead(key: Buffer, head: AuditHead): string {
  return headMac(
    key,
    canonicalJson({ count: head.count, hash: head.hash, file: head.file, line: head.line }),
  );
}

/** The day file a timestamp belongs in (UTC date). */
export function dayFileName(at: Date): string {
  return `${at.toISOString().slice(0, 10)}.jsonl`;
}

/** The day files in an audit folder, oldest first (names sort by date). */
export function listDayFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((name) => DAY_FILE.test(name))
    .sort();
}

/** Whether a parsed value has the fields every chain line must have. */
export function isAuditLine(value: unknown): value is AuditLine {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const v = value as Record<string, unknown>;
  return (
    Number.isInteger(v.seq) &&
    typeof v.ts === 'string' &&
    typeof v.type === 'string' &&
    typeof v.prev === 'string' &&
    typeof v.hash === 'string' &&
    (v.mac === undefined || typeof v.mac === 'string')
  );
}

/** Read `head.json`; undefined when absent, an Error when present but unreadable (each write replaces it whole, so that is tampering). */
export function readHead(dir: string): AuditHead | undefined | Error {
  const path = join(dir, HEAD_FILE);
  if (!existsSync(path)) return undefined;
  try {
    const v = JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
    if (
      Number.isInteger(v.count) &&
      typeof v.hash === 'string' &&
      typeof v.file === 'string' &&
      Number.isInteger(v.line) &&
      (v.mac === undefined || typeof v.mac === 'string')
    ) {
      const head: AuditHead = {
        count: v.count as number,
        hash: v.hash,
        file: v.file,
        line: v.line as number,
      };
      if (typeof v.mac === 'string') head.mac = v.mac;
      return head;
    }
    return new Error(`${path}: missing count, hash, file or line`);
  } catch (err) {
    return new Error(`${path}: ${(err as Error).message}`);
  }
}

/** Split a day file's text into lines, dropping only the final newline (an empty line inside is a defect). */
export function splitLines(text: string): string[] {
  if (text === '') return [];
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  return lines;
}
