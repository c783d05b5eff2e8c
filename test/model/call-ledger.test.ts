/**
 * The model client's ledger rows (model/call-ledger.ts) on both engines: how each cost is known, the
 * cap checked before a call (no request reaches the server past it), and a row the store did not take
 * kept on disk and sent at the next start, never lost and never sent twice.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CallLedger, CallRefused, sendUnsent } from '../../src/model/call-ledger.js';
import { createOpenAiProvider } from '../../src/model/openai.js';
import type { Script } from '../../src/model/script.js';
import { type ScriptServer, startScriptServer } from '../../src/model/script-server.js';
import { openStore } from '../../src/store/engine.js';
import { Ledger } from '../../src/store/ledger.js';
import { storeEngines } from '../helpers/engines.js';
import { tempDir } from '../helpers/tmp.js';
import { clientOf, collect, rejection, signal, user } from './support.js';

const engines = await storeEngines();
const PRICING = { priced: { input_per_mtok: 10, output_per_mtok: 100 } };

let server: ScriptServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const ask = (client: ReturnType<typeof clientOf>) =>
  collect(client.stream({ messages: [user('hi')], tools: [] }, signal()));

describe.each(engines)('the call ledger on $name', (engine) => {
  it.skipIf(engine.skip)(
    'records each call as it ends, metered, priced, estimated or unknown, and refuses a call past the cap',
    async () => {
      const store = await engine.open();
      const ledger = new Ledger(store);
      server = await startScriptServer({
        turns: [
          {
            text: 'a',
            usage: { prompt_tokens: 1000, completion_tokens: 100, cached_tokens: 600, cost: 0.5 },
          },
          { text: 'b', usage: { prompt_tokens: 1000, completion_tokens: 100 } },
          { text: 'c' },
          { text: 'd', usage: { prompt_tokens: 10, completion_tokens: 1 } },
        ],
      } as Script);
      const provider = createOpenAiProvider({ baseUrl: server.url });
      const runId = `run-${engine.name}`;
      const calls = new CallLedger({
        ledger,
        context: { runId, taskId: 't1' },
        pricing: PRICING,
        unsentPath: join(tempDir('keel-unsent-'), 'ledger-unsent.jsonl'),
      });
      const routing = {
        tier: 'strong',
        provider: 'openai',
        model: 'priced',
        score: 0.8,
        signals: { failing_tests: 2 },
        reason: 'hard',
      };
      const priced = clientOf([{ provider, model: 'priced' }], {
        calls: calls.with({ sessionId: 's1', routing }),
      });
      for (let i = 0; i < 3; i++) await ask(priced);
      await ask(clientOf([{ provider, model: 'free' }], { calls: calls.with({ sessionId: 's2' }) }));
      const rows = await ledger.entries(runId);
      expect(rows.map((r) => [r.seq, r.sessionId, r.model, r.costSource])).toEqual([
        [1, 's1', 'priced', 'metered'],
        [2, 's1', 'priced', 'priced'],
        [3, 's1', 'priced', 'estimated'],
        [4, 's2', 'free', 'unknown'],
      ]);
      expect(rows[0]).toMatchObject({
        taskId: 't1',
        provider: 'openai',
        tier: 'strong',
        score: 0.8,
        reason: 'hard',
      });
      expect(rows[0]).toMatchObject({ signals: { failing_tests: 2 }, cachedTokens: 600, costUsd: 0.5 });
      expect(rows[1]?.costUsd).toBeCloseTo(0.02, 10);
      expect(rows[2]?.promptTokens).toBeGreaterThan(0); // keel's own count of the request
      expect(rows[3]?.costUsd).toBeUndefined();

      // under a cap: the run's calls of unknown cost make its spend unknown, so no call starts
      const capped = new CallLedger({
        ledger,
        context: { runId },
        pricing: PRICING,
        costCapUsd: 10,
        unsentPath: join(tempDir('keel-unsent-'), 'ledger-unsent.jsonl'),
      });
      const before = server.requests.length;
      const blind = await rejection(ask(clientOf([{ provider, model: 'priced' }], { calls: capped })));
      expect(blind).toBeInstanceOf(CallRefused);
      expect((blind as CallRefused).why).toBe('unpriced');
      // another run, spent to its cap: refused, and the server never asked
      const full = new CallLedger({
        ledger,
        context: { runId: `${runId}-full` },
        pricing: PRICING,
        costCapUsd: 0.5,
        unsentPath: join(tempDir('keel-unsent-'), 'ledger-unsent.jsonl'),
      });
      await ledger.record({
        runId: `${runId}-full`,
        provider: 'openai',
        model: 'priced',
        promptTokens: 1,
        completionTokens: 1,
        latencyMs: 1,
        costUsd: 0.5,
        costSource: 'priced',
      });
      const stopped = await rejection(ask(clientOf([{ provider, model: 'priced' }], { calls: full })));
      expect((stopped as CallRefused).why).toBe('cost_cap');
      expect((stopped as Error).message).toContain('has spent $0.5000 of its --cost-cap $0.5');
      const unpriced = await rejection(ask(clientOf([{ provider, model: 'free' }], { calls: full })));
      expect((unpriced as Error).message).toContain('model "free" has none');
      expect(server.requests.length).toBe(before);
    },
  );
});

describe('a row the store does not take', () => {
  it('is kept on disk, stops the next call, and is sent once when a ledger opens again', async () => {
    const path = join(tempDir('keel-store-'), 'keel.db');
    const gone = await openStore({ engine: 'sqlite', path });
    await gone.close(); // the store goes away between the call's start and its end
    server = await startScriptServer({
      turns: [{ text: 'a', usage: { prompt_tokens: 5, completion_tokens: 1 } }],
    });
    const unsentPath = join(tempDir('keel-unsent-'), 'ledger-unsent.jsonl');
    const calls = new CallLedger({
      ledger: new Ledger(gone),
      context: { runId: 'r' },
      pricing: PRICING,
      unsentPath,
    });
    const client = clientOf([{ provider: createOpenAiProvider({ baseUrl: server.url }), model: 'priced' }], {
      calls,
    });
    await ask(client); // the answer is the person's: it arrives
    expect(JSON.parse(readFileSync(unsentPath, 'utf8'))).toMatchObject({
      runId: 'r',
      promptTokens: 5,
      costSource: 'priced',
    });
    const next = await rejection(ask(client));
    expect((next as CallRefused).why).toBe('store');
    expect(server.requests).toHaveLength(1);
    const back = await openStore({ engine: 'sqlite', path });
    try {
      const ledger = new Ledger(back);
      expect(await sendUnsent(ledger, unsentPath)).toBe(1);
      expect(await sendUnsent(ledger, unsentPath)).toBe(0);
      expect(existsSync(unsentPath)).toBe(false);
      expect((await ledger.entries('r')).map((r) => r.promptTokens)).toEqual([5]);
    } finally {
      await back.close();
    }
  });
});

describe("a routed call's price", () => {
  it("is its tier's own (tokens, or measured seconds for gpu_second), else [pricing]'s, else unknown; a cap holds a tier price", async () => {
    const path = join(tempDir('keel-store-'), 'keel.db');
    const store = await openStore({ engine: 'sqlite', path });
    try {
      const ledger = new Ledger(store);
      server = await startScriptServer({
        turns: [
          { text: 'a', usage: { prompt_tokens: 1000, completion_tokens: 100 } },
          { text: 'b' },
          { text: 'c', usage: { prompt_tokens: 1000, completion_tokens: 100 } },
          { text: 'd', usage: { prompt_tokens: 1000, completion_tokens: 100 } },
        ],
      } as Script);
      const provider = createOpenAiProvider({ baseUrl: server.url });
      const route = (tier: string, model: string) => ({
        tier,
        provider: 'openai',
        model,
        score: 0.1,
        signals: {},
        reason: tier,
      });
      const calls = new CallLedger({
        ledger,
        context: { runId: 'routed' },
        // [pricing] prices `priced` at 10/100: the tier's own price wins over it
        pricing: PRICING,
        tierPrices: { tok: { input_per_mtok: 1, output_per_mtok: 2 }, gpu: { gpu_second: 3 } },
        unsentPath: join(tempDir('keel-unsent-'), 'ledger-unsent.jsonl'),
      });
      const via = (tier: string, model: string) =>
        ask(clientOf([{ provider, model }], { calls: calls.with({ routing: route(tier, model) }) }));
      await via('tok', 'priced');
      await via('gpu', 'local'); // no usage reported: priced by its seconds all the same
      await via('bare', 'priced'); // a tier without a price: [pricing]
      await via('bare', 'free');
      const rows = await ledger.entries('routed');
      expect(rows.map((r) => [r.tier, r.costSource])).toEqual([
        ['tok', 'priced'],
        ['gpu', 'priced'],
        ['bare', 'priced'],
        ['bare', 'unknown'],
      ]);
      expect(rows[0]?.costUsd).toBeCloseTo((1000 * 1 + 100 * 2) / 1e6, 12);
      expect(rows[1]?.costUsd).toBeCloseTo(((rows[1]?.latencyMs ?? 0) / 1000) * 3, 12);
      expect(rows[2]?.costUsd).toBeCloseTo((1000 * 10 + 100 * 100) / 1e6, 12);
      expect(rows[3]?.costUsd).toBeUndefined();

      // under a cap: a model with no [pricing] is callable on a priced tier, refused on an unpriced one
      const capped = new CallLedger({
        ledger,
        context: { runId: 'capped' },
        pricing: {},
        tierPrices: { tok: { input_per_mtok: 1, output_per_mtok: 2 } },
        costCapUsd: 1,
        unsentPath: join(tempDir('keel-unsent-'), 'ledger-unsent.jsonl'),
      });
      await expect(capped.before('free', route('tok', 'free'))).resolves.toBeUndefined();
      const refused = await capped.before('free', route('bare', 'free')).catch((e: unknown) => e);
      expect((refused as CallRefused).why).toBe('unpriced');
    } finally {
      await store.close();
    }
  });
});
