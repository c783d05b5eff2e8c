/** The ledger's contract, on SQLite and on PostgreSQL: one suite, both engines. */
import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../../src/store/engine.js';
import { Ledger, type LedgerEntry, LedgerEntryError } from '../../src/store/ledger.js';
import { storeEngines } from '../helpers/engines.js';

const engines = await storeEngines();

const call = (runId: string, over: Partial<LedgerEntry> = {}): LedgerEntry => ({
  runId,
  provider: 'openai',
  model: 'small',
  promptTokens: 1000,
  completionTokens: 200,
  latencyMs: 850,
  costUsd: 0.0012,
  costSource: 'priced',
  ...over,
});

describe.each(engines)('ledger on $name', (engine) => {
  let store: Store;
  beforeAll(async () => {
    if (!engine.skip) store = await engine.open();
  });
  const test = it.skipIf(engine.skip !== '');

  test('keeps every field of a call, numbers calls per run, and adds up known and unknown costs', async () => {
    let t = 5_000;
    const ledger = new Ledger(store, () => t++);
    const run = randomUUID();
    const full: LedgerEntry = {
      runId: run,
      taskId: 'bug-17',
      sessionId: 'ses_1',
      provider: 'openai',
      model: 'strong',
      tier: 'strong',
      score: 0.72,
      signals: { failing_tests: 3, failed_attempts: 1, turns: 14 },
      reason: 'two failed attempts',
      promptTokens: 12_345,
      completionTokens: 678,
      cachedTokens: 9_000,
      latencyMs: 4_321,
      costUsd: 0.0421,
      costSource: 'metered',
      reissued: true,
    };
    expect(await ledger.record(full)).toBe(1);
    expect(await ledger.record(call(run, { costSource: 'estimated', costUsd: 0.001 }))).toBe(2);
    expect(await ledger.record(call(run, { costSource: 'unknown', costUsd: undefined }))).toBe(3);
    expect(await ledger.record(call(randomUUID()))).toBe(1); // another run counts from 1
    const rows = await ledger.entries(run);
    expect(rows[0]).toEqual({ ...full, seq: 1, ts: 5_000 });
    expect(rows[2]).toMatchObject({
      seq: 3,
      costSource: 'unknown',
      signals: {},
      cachedTokens: 0,
      reissued: false,
    });
    expect(rows[2]?.costUsd).toBeUndefined();
    expect((await ledger.entries(run, 2)).map((r) => r.seq)).toEqual([3]);
    const totals = await ledger.totals(run);
    expect(totals).toMatchObject({
      runId: run,
      calls: 3,
      promptTokens: 14_345,
      completionTokens: 1_078,
      cachedTokens: 9_000,
      unknownCostCalls: 1,
      firstTs: 5_000,
      lastTs: 5_002,
    });
    expect(totals?.costUsd).toBeCloseTo(0.0431, 10);
    expect(await ledger.totals(randomUUID())).toBeUndefined();
    expect((await ledger.runs()).find((r) => r.runId === run)?.calls).toBe(3);
  });

  test('a cost without its source, or "unknown" with a cost, is refused by keel and by the database', async () => {
    const ledger = new Ledger(store);
    const run = randomUUID();
    await expect(ledger.record(call(run, { costSource: 'unknown' }))).rejects.toThrow(LedgerEntryError);
    await expect(ledger.record(call(run, { costUsd: undefined }))).rejects.toThrow(/cost goes with a source/);
    await expect(ledger.record(call(run, { promptTokens: -1 }))).rejects.toThrow(/prompt_tokens/);
    // the table's own CHECK, for a writer that is not this code
    await expect(
      store.run(
        `INSERT INTO ledger (run_id, seq, ts, provider, model, signals, prompt_tokens, completion_tokens,
           cached_tokens, latency_ms, cost_usd, cost_source) VALUES ($1, 1, 0, 'p', 'm', '{}', 0, 0, 0, 0, NULL, 'priced')`,
        [run],
      ),
    ).rejects.toThrow(/CHECK|check/);
    expect(await ledger.entries(run)).toEqual([]);
  });

  test('calls recorded at once from several connections get distinct numbers 1..n', async () => {
    const run = randomUUID();
    const writers = await Promise.all(Array.from({ length: 4 }, () => engine.open()));
    const seqs = await Promise.all(
      writers.flatMap((w) => Array.from({ length: 5 }, () => new Ledger(w).record(call(run)))),
    );
    expect(seqs.sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
  });
});
