/**
 * Each workflow run's events form a hash chain sealed with keel's audit key (store/audit-key.ts): every
 * event carries the hash of the one before and an HMAC of its body, and the run row holds the head (count,
 * last hash) under its own HMAC, so an edited, dropped, reordered or appended event is found offline.
 * The seals reuse the audit chain's hashing, in a domain of their own (no run event passes as an audit
 * line, nor the reverse).
 */
import { canonicalJson, GENESIS, hashOf, lineBody } from '../store/audit-chain.js';
import { headMac, lineMac } from '../store/audit-key.js';
import type { Sql } from '../store/engine.js';

const LINE_DOMAIN = 'keel-hub-run-event\n';
const HEAD_DOMAIN = 'keel-hub-run-head\n';

/** One event of a run as stored. */
export interface RunEvent {
  run_id: string;
  seq: number;
  ts: number;
  type: string;
  data: Record<string, unknown>;
  prev: string;
  hash: string;
  mac: string;
}

/** The head of a run's chain as the run row keeps it. */
export interface RunHead {
  run_id: string;
  count: number;
  hash: string;
}

function eventBody(e: Omit<RunEvent, 'hash' | 'mac'>): Record<string, unknown> {
  return { run_id: e.run_id, seq: e.seq, ts: e.ts, type: e.type, data: e.data, prev: e.prev };
}

function eventMac(key: Buffer, body: Record<string, unknown>): string {
  return lineMac(key, LINE_DOMAIN + lineBody(body));
}

/** The seal of a run's head. */
export function sealRunHead(key: Buffer, head: RunHead): string {
  return headMac(key, HEAD_DOMAIN + canonicalJson(head));
}

/** The head of a run that has no events yet. */
export function emptyHead(key: Buffer, runId: string): { hash: string; mac: string } {
  return { hash: GENESIS, mac: sealRunHead(key, { run_id: runId, count: 0, hash: GENESIS }) };
}

/** A run whose head is sealed with another audit key than the writer's: appending would break its chain. */
export class ForeignAuditKey extends Error {
  override name = 'ForeignAuditKey';
  readonly status = 409;
  readonly code = 'foreign_audit_key';
  constructor(readonly runId: string) {
    super(
      `run ${runId} is sealed with another audit key than this keel's: hubs sharing a store need one key (KEEL_HUB_AUDIT_KEY_FILE or hub_audit_key_file)`,
    );
  }
}

/**
 * Append an event to a run's chain inside the caller's transaction, which must hold the run row's lock
 * (every writer of a run takes it first): reads the head, checks its seal (a head sealed with another key
 * throws ForeignAuditKey and nothing is written), writes the event and the new sealed head.
 */
export async function appendRunEvent(
  tx: Sql,
  key: Buffer,
  runId: string,
  ts: number,
  type: string,
  data: Record<string, unknown>,
): Promise<RunEvent> {
  const [head] = await tx.query<{ event_count: number; head_hash: string; head_mac: string }>(
    'SELECT event_count, head_hash, head_mac FROM hub_runs WHERE id = $1',
    [runId],
  );
  if (!head) throw new Error(`run ${runId}: no such run`);
  const count = Number(head.event_count);
  if (sealRunHead(key, { run_id: runId, count, hash: head.head_hash }) !== head.head_mac)
    throw new ForeignAuditKey(runId);
  const seq = count + 1;
  // data goes through JSON once, so what is hashed is what a reader parses back
  const stored = JSON.parse(JSON.stringify(data)) as Record<string, unknown>;
  const body = eventBody({ run_id: runId, seq, ts, type, data: stored, prev: head.head_hash });
  const event: RunEvent = {
    ...(body as Omit<RunEvent, 'hash' | 'mac'>),
    hash: hashOf(body),
    mac: eventMac(key, body),
  };
  await tx.run(
    `INSERT INTO hub_run_events (run_id, seq, ts, type, data, prev, hash, mac) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
    [runId, seq, ts, type, canonicalJson(stored), event.prev, event.hash, event.mac],
  );
  const mac = sealRunHead(key, { run_id: runId, count: seq, hash: event.hash });
  await tx.run('UPDATE hub_runs SET event_count = $2, head_hash = $3, head_mac = $4 WHERE id = $1', [
    runId,
    seq,
    event.hash,
    mac,
  ]);
  return event;
}

interface EventRow {
  run_id: string;
  seq: number;
  ts: number;
  type: string;
  data: string;
  prev: string;
  hash: string;
  mac: string;
}

/** A run's events, oldest first. */
export async function runEvents(sql: Sql, runId: string): Promise<RunEvent[]> {
  const rows = await sql.query<EventRow>(
    'SELECT run_id, seq, ts, type, data, prev, hash, mac FROM hub_run_events WHERE run_id = $1 ORDER BY seq',
    [runId],
  );
  return rows.map((r) => ({
    ...r,
    seq: Number(r.seq),
    ts: Number(r.ts),
    data: JSON.parse(r.data) as Record<string, unknown>,
  }));
}

export interface ChainReport {
  ok: boolean;
  events: number;
  /** Each problem found: the event's seq (0 for the head) and what is wrong. */
  problems: { seq: number; problem: string }[];
}

/** Recompute a run's chain and seals with `key`: hashes, links, MACs, numbering, and the sealed head. */
export async function verifyRunChain(sql: Sql, key: Buffer, runId: string): Promise<ChainReport | undefined> {
  const [run] = await sql.query<{ event_count: number; head_hash: string; head_mac: string }>(
    'SELECT event_count, head_hash, head_mac FROM hub_runs WHERE id = $1',
    [runId],
  );
  if (!run) return undefined;
  const rows = await sql.query<EventRow>(
    'SELECT run_id, seq, ts, type, data, prev, hash, mac FROM hub_run_events WHERE run_id = $1 ORDER BY seq',
    [runId],
  );
  const problems: ChainReport['problems'] = [];
  let prev = GENESIS;
  rows.forEach((row, i) => {
    const seq = Number(row.seq);
    if (seq !== i + 1) problems.push({ seq, problem: `numbered ${seq} where ${i + 1} belongs` });
    let data: Record<string, unknown>;
    try {
      data = JSON.parse(row.data) as Record<string, unknown>;
    } catch {
      problems.push({ seq, problem: 'its data is not JSON' });
      return;
    }
    const body = eventBody({
      run_id: row.run_id,
      seq,
      ts: Number(row.ts),
      type: row.type,
      data,
      prev: row.prev,
    });
    if (row.prev !== prev) problems.push({ seq, problem: 'does not follow the event before it (prev)' });
    if (hashOf(body) !== row.hash) problems.push({ seq, problem: 'its hash does not match its contents' });
    if (eventMac(key, body) !== row.mac) problems.push({ seq, problem: 'its seal (MAC) does not match' });
    prev = row.hash;
  });
  const count = Number(run.event_count);
  if (sealRunHead(key, { run_id: runId, count, hash: run.head_hash }) !== run.head_mac)
    problems.push({ seq: 0, problem: "the run's head seal (MAC) does not match" });
  if (count !== rows.length || run.head_hash !== prev)
    problems.push({
      seq: 0,
      problem: `the head says ${count} events ending in ${run.head_hash.slice(0, 12)}; the chain has ${rows.length} ending in ${prev.slice(0, 12)}`,
    });
  return { ok: problems.length === 0, events: rows.length, problems };
}
