import { afterEach, describe, expect, it } from 'vitest';
import type { FallbackInfo } from '../../src/model/chain.js';
import { createOpenAiProvider, outputLimitField } from '../../src/model/openai.js';
import { type RetryInfo, retryDelayMs } from '../../src/model/retry.js';
import type { Script } from '../../src/model/script.js';
import { type ScriptServer, startScriptServer } from '../../src/model/script-server.js';
import { ModelError } from '../../src/model/types.js';
import { clientOf, collect, rejection, signal, textOf, user } from './support.js';

const ask = { messages: [user('hi')], tools: [] };

describe('retries and the fallback chain', () => {
  let server: ScriptServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  async function serve(script: Script) {
    server = await startScriptServer(script);
    return createOpenAiProvider({ baseUrl: server.url });
  }

  it('waits out a 429 with Retry-After: 1, then succeeds', async () => {
    const provider = await serve({
      turns: [{ error: { status: 429, retry_after: 1 } }, { text: 'finally' }],
    });
    const retries: RetryInfo[] = [];
    const started = Date.now();
    const deltas = await collect(
      clientOf([{ provider, model: 'm' }]).stream(ask, signal(), { onRetry: (r) => retries.push(r) }),
    );
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
    expect(textOf(deltas)).toBe('finally');
    expect(retries).toHaveLength(1);
    expect(retries[0]).toMatchObject({ model: 'm', attempt: 1, delayMs: 1000 });
    expect(retries[0]?.error.kind).toBe('rate_limit');
  });

  it('retries a 500 and succeeds', async () => {
    const provider = await serve({ turns: [{ error: { status: 500 } }, { text: 'ok' }] });
    const retries: RetryInfo[] = [];
    const deltas = await collect(
      clientOf([{ provider, model: 'm' }]).stream(ask, signal(), { onRetry: (r) => retries.push(r) }),
    );
    expect(textOf(deltas)).toBe('ok');
    expect(retries.map((r) => r.error.status)).toEqual([500]);
    expect(server?.requests).toHaveLength(2);
  });

  it('does not retry a 401', async () => {
    const provider = await serve({ turns: [{ error: { status: 401 } }, { text: 'never' }] });
    const retries: RetryInfo[] = [];
    const err = await rejection(
      collect(
        clientOf([{ provider, model: 'm' }]).stream(ask, signal(), { onRetry: (r) => retries.push(r) }),
      ),
    );
    expect((err as ModelError).kind).toBe('auth');
    expect(retries).toEqual([]);
    expect(server?.requests).toHaveLength(1);
  });

  it('gives up after retries.max and throws the last error', async () => {
    const provider = await serve({
      turns: [{ error: { status: 503 } }, { error: { status: 502 } }, { error: { status: 500 } }],
    });
    const err = (await rejection(
      collect(clientOf([{ provider, model: 'm' }]).stream(ask, signal())),
    )) as ModelError;
    expect([err.kind, err.status]).toEqual(['server', 500]);
    expect(server?.requests).toHaveLength(3);
  });

  it('falls back to the next model when the primary fails, and reports it', async () => {
    const provider = await serve({
      turns: [
        { model: 'big', error: { status: 503 } },
        { model: 'big', error: { status: 503 } },
        { model: 'small', text: 'from the fallback' },
      ],
    });
    const fallbacks: FallbackInfo[] = [];
    const client = clientOf(
      [
        { provider, model: 'big' },
        { provider, model: 'small' },
      ],
      { retries: { max: 1, base_delay_ms: 5, max_delay_ms: 10 } },
    );
    const deltas = await collect(client.stream(ask, signal(), { onFallback: (f) => fallbacks.push(f) }));
    expect(textOf(deltas)).toBe('from the fallback');
    expect(deltas.every((d) => d.model === 'small')).toBe(true);
    expect(fallbacks).toHaveLength(1);
    expect(fallbacks[0]).toMatchObject({ from: 'big', to: 'small' });
    expect(fallbacks[0]?.error.status).toBe(503);
    expect(client.currentModel()).toBe('small');
    expect(server?.requests.map((r) => (r.body as { model: string }).model)).toEqual(['big', 'big', 'small']);
  });

  it('skips a cooling model on the next call, and tries it again after the cooldown', async () => {
    const provider = await serve({
      turns: [
        { model: 'big', error: { status: 401 } },
        { model: 'small', text: 'one' },
        { model: 'small', text: 'two' },
        { model: 'big', text: 'three' },
      ],
    });
    let now = 1_000_000;
    const client = clientOf(
      [
        { provider, model: 'big' },
        { provider, model: 'small' },
      ],
      { cooldownS: 30, now: () => now },
    );
    expect(textOf(await collect(client.stream(ask, signal())))).toBe('one');
    const fallbacks: FallbackInfo[] = [];
    expect(
      textOf(await collect(client.stream(ask, signal(), { onFallback: (f) => fallbacks.push(f) }))),
    ).toBe('two');
    expect(fallbacks).toEqual([]); // big was skipped, not tried
    now += 31_000;
    expect(textOf(await collect(client.stream(ask, signal())))).toBe('three');
    expect(server?.requests.map((r) => (r.body as { model: string }).model)).toEqual([
      'big',
      'small',
      'small',
      'big',
    ]);
  });

  it('does not fall back on a bad request', async () => {
    const provider = await serve({
      turns: [
        { model: 'big', error: { status: 400 } },
        { model: 'small', text: 'no' },
      ],
    });
    const client = clientOf([
      { provider, model: 'big' },
      { provider, model: 'small' },
    ]);
    const err = (await rejection(collect(client.stream(ask, signal())))) as ModelError;
    expect(err.kind).toBe('bad_request');
    expect(server?.requests).toHaveLength(1);
  });

  it('never retries once output has streamed', async () => {
    const provider = await serve({
      turns: [{ text: 'partial answer here', chunk_delay_ms: 400 }, { text: 'dup' }],
    });
    const client = clientOf([{ provider, model: 'm' }], { timeouts: { firstTokenMs: 2_000, idleMs: 100 } });
    const seen: string[] = [];
    const err = await rejection(
      (async () => {
        for await (const d of client.stream(ask, signal())) if (d.type === 'text') seen.push(d.text);
      })(),
    );
    expect((err as ModelError).kind).toBe('timeout');
    expect(seen.join('')).not.toContain('dup');
    expect(server?.requests).toHaveLength(1);
  });

  it('computes backoff with jitter and honours Retry-After up to the cap', () => {
    const policy = { max: 3, base_delay_ms: 100, max_delay_ms: 300 };
    const err = new ModelError('server', 'x', 'u', 500);
    expect(retryDelayMs(1, err, policy, () => 0)).toBe(50);
    expect(retryDelayMs(1, err, policy, () => 1)).toBe(100);
    expect(retryDelayMs(5, err, policy, () => 1)).toBe(300);
    const limited = (s: number) => new ModelError('rate_limit', 'x', 'u', 429, s);
    expect(retryDelayMs(1, limited(10), policy)).toBe(10_000); // beyond max_delay_ms: the server asked
    expect(retryDelayMs(1, limited(600), policy)).toBeUndefined(); // absurd: give up, let the chain fall back
  });
});

describe('the output limit', () => {
  it('goes with every request: the configured one, else 8192 or half a known window; OpenAI itself gets max_completion_tokens', async () => {
    const server = await startScriptServer({ turns: [{ text: 'a' }, { text: 'b' }, { text: 'c' }] });
    try {
      const provider = createOpenAiProvider({ baseUrl: server.url });
      await collect(clientOf([{ provider, model: 'm' }]).stream(ask, signal()));
      await collect(clientOf([{ provider, model: 'm', contextWindow: 4096 }]).stream(ask, signal()));
      await collect(clientOf([{ provider, model: 'm' }]).stream({ ...ask, maxOutputTokens: 100 }, signal()));
      const sent = server.requests.map((r) => (r.body as { max_tokens?: number }).max_tokens);
      expect(sent).toEqual([8192, 2048, 100]);
    } finally {
      await server.close();
    }
    expect(outputLimitField('https://api.openai.com/v1')).toBe('max_completion_tokens');
    expect(outputLimitField('https://x.openai.azure.com/openai')).toBe('max_completion_tokens');
    expect(outputLimitField('http://127.0.0.1:8000/v1')).toBe('max_tokens');
  });
});
