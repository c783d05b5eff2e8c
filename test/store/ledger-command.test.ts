/** `keel ledger` through the real binary: SQLite in KEEL_HOME by default, PostgreSQL when the user's `store` or KEEL_STORE says so. */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openStore, type StoreTarget } from '../../src/store/engine.js';
import { Ledger, type LedgerEntry } from '../../src/store/ledger.js';
import { keel, keelHome } from '../e2e/harness.js';
import { freshPgDatabase, skipReason } from '../helpers/pg.js';

const pgUrl = await freshPgDatabase();

async function record(target: StoreTarget, entries: LedgerEntry[]): Promise<void> {
  const store = await openStore(target);
  try {
    const ledger = new Ledger(store);
    for (const e of entries) await ledger.record(e);
  } finally {
    await store.close();
  }
}

const calls = (runId: string): LedgerEntry[] => [
  {
    runId,
    taskId: 'bug-1',
    provider: 'openai',
    model: 'small',
    tier: 'cheap',
    score: 0.2,
    signals: { failing_tests: 1 },
    reason: 'short issue',
    promptTokens: 1000,
    completionTokens: 100,
    cachedTokens: 400,
    latencyMs: 900,
    costUsd: 0.002,
    costSource: 'priced',
  },
  {
    runId,
    taskId: 'bug-1',
    provider: 'openai',
    model: 'local',
    promptTokens: 500,
    completionTokens: 50,
    latencyMs: 300,
    costSource: 'unknown',
  },
];

describe('keel ledger', () => {
  it('shows the runs and one run’s calls from keel.db, with unknown costs said aloud', async () => {
    const home = keelHome();
    await record({ engine: 'sqlite', path: join(home, 'keel.db') }, calls('run-a'));
    const list = await keel(['ledger', '--json'], { cwd: home, home });
    expect(list.code).toBe(0);
    expect(JSON.parse(list.stdout)).toMatchObject({
      store: 'sqlite',
      runs: [{ run_id: 'run-a', calls: 2, prompt_tokens: 1500, cost_usd: 0.002, unknown_cost_calls: 1 }],
    });
    const one = await keel(['ledger', 'run-a', '--json'], { cwd: home, home });
    const doc = JSON.parse(one.stdout);
    expect(doc.calls).toHaveLength(2);
    expect(doc.calls[0]).toMatchObject({
      seq: 1,
      task_id: 'bug-1',
      tier: 'cheap',
      score: 0.2,
      signals: { failing_tests: 1 },
      reason: 'short issue',
      cached_tokens: 400,
      latency_ms: 900,
      cost_usd: 0.002,
      cost_source: 'priced',
      reissued: false,
    });
    expect(doc.calls[1]).toMatchObject({ cost_usd: null, cost_source: 'unknown' });
    const text = await keel(['ledger', 'run-a'], { cwd: home, home });
    expect(text.stdout).toContain('2 calls, 1500+150 tokens, $0.0020 + 1 call of unknown cost');
    const missing = await keel(['ledger', 'run-b'], { cwd: home, home });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain(`no model calls recorded for run "run-b" in ${join(home, 'keel.db')}`);
  });

  it.skipIf(!pgUrl)('reads PostgreSQL when the user config or KEEL_STORE names it', async () => {
    if (!pgUrl) throw new Error(skipReason);
    await record({ engine: 'postgres', url: pgUrl }, calls('run-pg'));
    const viaConfig = keelHome(`store = "${pgUrl}"\n`);
    const fromConfig = await keel(['ledger', 'run-pg', '--json'], { cwd: viaConfig, home: viaConfig });
    expect(fromConfig.code).toBe(0);
    expect(JSON.parse(fromConfig.stdout)).toMatchObject({ store: 'postgres', totals: { calls: 2 } });
    const home = keelHome();
    const fromEnv = await keel(['ledger', '--json'], { cwd: home, home, env: { KEEL_STORE: pgUrl } });
    expect(JSON.parse(fromEnv.stdout).runs.map((r: { run_id: string }) => r.run_id)).toEqual(['run-pg']);
    // the same home without KEEL_STORE is the empty SQLite default
    expect(JSON.parse((await keel(['ledger', '--json'], { cwd: home, home })).stdout).runs).toEqual([]);
    // an unreachable server: an environment error naming it, without its password
    const down = await keel(['ledger'], {
      cwd: home,
      home,
      env: { KEEL_STORE: 'postgres://keel:s3cret@127.0.0.1:1/keel' },
    });
    expect(down.code).toBe(3);
    expect(down.stderr).toContain('cannot open the store at postgres://keel:***@127.0.0.1:1/keel');
    expect(down.stderr).not.toContain('s3cret');
  });
});
