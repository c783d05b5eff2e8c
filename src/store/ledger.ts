/**
 * The ledger: one row per model call, on SQLite or PostgreSQL, numbered per run (store/streams.ts).
 * A cost is `metered` (the provider said), `priced` (tokens times the configured prices), `estimated`
 * (tokens counted by keel) or `unknown` (no cost at all: never a zero that looks free).
 */
import type { Sql, Store } from './engine.js';
import { nextSeq } from './streams.js';

export const COST_SOURCES = ['metered', 'priced', 'estimated', 'unknown'] as const;
export type CostSource = (typeof COST_SOURCES)[number];

/** One model call as the caller knows it. */
export interface LedgerEntry {
  runId: string;
  taskId?: string;
  sessionId?: string;
  provider: string;
  model: string;
  /** The routing tier that picked the model, when routing did. */
  tier?: string;
  /** The difficulty score the routing computed, and the signals and reason behind it. */
  score?: number;
  signals?: Record<string, unknown>;
  reason?: string;
  promptTokens: number;
  completionTokens: number;
  cachedTokens?: number;
  latencyMs: number;
  /** USD; absent exactly when `costSource` is `unknown`. */
  costUsd?: number;
  costSource: CostSource;
  /** A request re-issued on resume because its response was never recorded. */
  reissued?: boolean;
}

/** A recorded call: what was given, with its number in the run and when it was recorded. */
export type LedgerRow = LedgerEntry &
  Required<Pick<LedgerEntry, 'signals' | 'cachedTokens' | 'reissued'>> & { seq: number; ts: number };

/** What a run's calls add up to; `costUsd` sums the known costs, `unknownCostCalls` counts the rest. */
export interface LedgerTotals {
  runId: string;
  calls: number;
  promptTokens: number;
  completionTokens: number;
  cachedTokens: number;
  costUsd: number;
  unknownCostCalls: number;
  /** The distinct tasks and sessions its calls name (a batch's tasks; a fix's plan and attempts). */
  tasks: number;
  sessions: number;
  firstTs: number;
  lastTs: number;
}

/** A ledger entry keel cannot record as given (a cost without its source, a negative count). */
export class LedgerEntryError extends Error {
  override name = 'LedgerEntryError';
}

interface Row {
  run_id: string;
  seq: number;
  ts: number;
  task_id: string | null;
  session_id: string | null;
  provider: string;
  model: string;
  tier: string | null;
  score: number | null;
  signals: string;
  reason: string | null;
  prompt_tokens: number;
  completion_tokens: number;
  cached_tokens: number;
  latency_ms: number;
  cost_usd: number | null;
  cost_source: CostSource;
  reissued: number | boolean;
}

interface TotalsRow {
  run_id: string;
  calls: number;
  prompt_tokens: number | null;
  completion_tokens: number | null;
  cached_tokens: number | null;
  cost_usd: number | null;
  unknown_cost_calls: number | null;
  tasks: number | null;
  sessions: number | null;
  first_ts: number;
  last_ts: number;
}

function check(entry: LedgerEntry): void {
  const where = `ledger entry for run ${JSON.stringify(entry.runId)}`;
  if (!COST_SOURCES.includes(entry.costSource))
    throw new LedgerEntryError(`${where}: cost_source must be one of ${COST_SOURCES.join(', ')}`);
  if ((entry.costSource === 'unknown') !== (entry.costUsd === undefined))
    throw new LedgerEntryError(
      `${where}: a cost goes with a source (metered, priced, estimated), and "unknown" with no cost`,
    );
  for (const [name, n] of [
    ['prompt_tokens', entry.promptTokens],
    ['completion_tokens', entry.completionTokens],
    ['cached_tokens', entry.cachedTokens ?? 0],
    ['latency_ms', entry.latencyMs],
    ['cost_usd', entry.costUsd ?? 0],
  ] as const)
    if (!Number.isFinite(n) || n < 0) throw new LedgerEntryError(`${where}: ${name} must be a number ≥ 0`);
}

/** The ledger over a team store. */
export class Ledger {
  constructor(
    private readonly store: Store,
    private readonly now: () => number = Date.now,
  ) {}

  /** Record one call; returns its number in the run. */
  async record(entry: LedgerEntry): Promise<number> {
    return this.store.transaction((tx) => this.recordIn(tx, entry));
  }

  /** Record calls in order, all or none (rows kept back while the store was away). */
  async recordAll(entries: LedgerEntry[]): Promise<void> {
    await this.store.transaction(async (tx) => {
      for (const e of entries) await this.recordIn(tx, e);
    });
  }

  /** Record one call inside the caller's transaction (with the event that caused it, say). */
  async recordIn(tx: Sql, entry: LedgerEntry): Promise<number> {
    check(entry);
    const seq = await nextSeq(tx, `ledger:${entry.runId}`);
    await tx.run(
      `INSERT INTO ledger (run_id, seq, ts, task_id, session_id, provider, model, tier, score, signals, reason,
         prompt_tokens, completion_tokens, cached_tokens, latency_ms, cost_usd, cost_source, reissued)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)`,
      [
        entry.runId,
        seq,
        this.now(),
        entry.taskId ?? null,
        entry.sessionId ?? null,
        entry.provider,
        entry.model,
        entry.tier ?? null,
        entry.score ?? null,
        JSON.stringify(entry.signals ?? {}),
        entry.reason ?? null,
        entry.promptTokens,
        entry.completionTokens,
        entry.cachedTokens ?? 0,
        Math.round(entry.latencyMs),
        entry.costUsd ?? null,
        entry.costSource,
        entry.reissued ? 1 : 0,
      ],
    );
    return seq;
  }

  /** A run's calls in order, after `afterSeq`. */
  async entries(runId: string, afterSeq = 0): Promise<LedgerRow[]> {
    const rows = await this.store.query<Row>(
      'SELECT * FROM ledger WHERE run_id = $1 AND seq > $2 ORDER BY seq',
      [runId, afterSeq],
    );
    return rows.map(fromRow);
  }

  /** One run's totals, or undefined when it made no call. */
  async totals(runId: string): Promise<LedgerTotals | undefined> {
    const [row] = await this.store.query<TotalsRow>(`${TOTALS} WHERE run_id = $1 GROUP BY run_id`, [runId]);
    return row && fromTotals(row);
  }

  /** Every run's totals, the latest call first. */
  async runs(limit = 50): Promise<LedgerTotals[]> {
    const rows = await this.store.query<TotalsRow>(
      `${TOTALS} GROUP BY run_id ORDER BY MAX(ts) DESC, run_id LIMIT $1`,
      [limit],
    );
    return rows.map(fromTotals);
  }
}

const TOTALS = `SELECT run_id, COUNT(*) AS calls, SUM(prompt_tokens) AS prompt_tokens,
  SUM(completion_tokens) AS completion_tokens, SUM(cached_tokens) AS cached_tokens, SUM(cost_usd) AS cost_usd,
  SUM(CASE WHEN cost_source = 'unknown' THEN 1 ELSE 0 END) AS unknown_cost_calls,
  COUNT(DISTINCT task_id) AS tasks, COUNT(DISTINCT session_id) AS sessions,
  MIN(ts) AS first_ts, MAX(ts) AS last_ts
  FROM ledger`;

function fromRow(r: Row): LedgerRow {
  return {
    runId: r.run_id,
    seq: Number(r.seq),
    ts: Number(r.ts),
    ...(r.task_id !== null ? { taskId: r.task_id } : {}),
    ...(r.session_id !== null ? { sessionId: r.session_id } : {}),
    provider: r.provider,
    model: r.model,
    ...(r.tier !== null ? { tier: r.tier } : {}),
    ...(r.score !== null ? { score: Number(r.score) } : {}),
    signals: JSON.parse(r.signals) as Record<string, unknown>,
    ...(r.reason !== null ? { reason: r.reason } : {}),
    promptTokens: Number(r.prompt_tokens),
    completionTokens: Number(r.completion_tokens),
    cachedTokens: Number(r.cached_tokens),
    latencyMs: Number(r.latency_ms),
    ...(r.cost_usd !== null ? { costUsd: Number(r.cost_usd) } : {}),
    costSource: r.cost_source,
    reissued: Boolean(Number(r.reissued)),
  };
}

function fromTotals(r: TotalsRow): LedgerTotals {
  return {
    runId: r.run_id,
    calls: Number(r.calls),
    promptTokens: Number(r.prompt_tokens ?? 0),
    completionTokens: Number(r.completion_tokens ?? 0),
    cachedTokens: Number(r.cached_tokens ?? 0),
    costUsd: Number(r.cost_usd ?? 0),
    unknownCostCalls: Number(r.unknown_cost_calls ?? 0),
    tasks: Number(r.tasks ?? 0),
    sessions: Number(r.sessions ?? 0),
    firstTs: Number(r.first_ts),
    lastTs: Number(r.last_ts),
  };
}
