import { afterEach, describe, expect, it } from 'vitest';
import { createOllamaProvider } from '../../src/model/ollama.js';
import { createOpenAiProvider } from '../../src/model/openai.js';
import { type ScriptServer, startScriptServer } from '../../src/model/script-server.js';
import { streamWithTimeouts } from '../../src/model/timeouts.js';
import { ModelError, type ModelRequest } from '../../src/model/types.js';
import { clientOf, collect, rejection, signal, textOf, user } from './support.js';

const request: ModelRequest = { model: 'm', messages: [user('hi')], tools: [] };

describe('timeouts and cancellation', () => {
  let server: ScriptServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it('raises a first-token timeout naming the timeout and the URL', async () => {
    server = await startScriptServer({ turns: [{ text: 'late', delay_ms: 1_000 }] });
    const provider = createOpenAiProvider({ baseUrl: server.url });
    const started = Date.now();
    const err = await rejection(
      collect(streamWithTimeouts(provider, request, signal(), { firstTokenMs: 150, idleMs: 5_000 })),
    );
    expect(err).toBeInstanceOf(ModelError);
    expect((err as ModelError).kind).toBe('timeout');
    expect((err as ModelError).message).toContain('first-token timeout');
    expect((err as ModelError).message).toContain(server.url);
    expect(Date.now() - started).toBeLessThan(900);
  });

  it('raises an idle timeout when chunks stop coming', async () => {
    server = await startScriptServer({ turns: [{ text: 'slow slow slow', chunk_delay_ms: 600 }] });
    const provider = createOllamaProvider({ baseUrl: server.ollamaUrl });
    const err = await rejection(
      collect(streamWithTimeouts(provider, request, signal(), { firstTokenMs: 2_000, idleMs: 150 })),
    );
    expect((err as ModelError).kind).toBe('timeout');
    expect((err as ModelError).message).toContain('idle timeout');
  });

  it('passes through a stream that keeps within both timeouts', async () => {
    server = await startScriptServer({ turns: [{ text: 'steady pace', delay_ms: 50, chunk_delay_ms: 30 }] });
    const provider = createOpenAiProvider({ baseUrl: server.url });
    const deltas = await collect(
      streamWithTimeouts(provider, request, signal(), { firstTokenMs: 1_000, idleMs: 300 }),
    );
    expect(textOf(deltas)).toBe('steady pace');
  });

  it('retries a timed-out attempt that produced nothing', async () => {
    server = await startScriptServer({ turns: [{ hang: true }, { text: 'second try' }] });
    const provider = createOpenAiProvider({ baseUrl: server.url });
    const client = clientOf([{ provider, model: 'm' }], { timeouts: { firstTokenMs: 150, idleMs: 150 } });
    const deltas = await collect(client.stream({ messages: [user('hi')], tools: [] }, signal()));
    expect(textOf(deltas)).toBe('second try');
  });

  it('cancels promptly on abort, without retrying or falling back', async () => {
    server = await startScriptServer({ turns: [{ hang: true }, { text: 'never' }] });
    const provider = createOpenAiProvider({ baseUrl: server.url });
    const client = clientOf([
      { provider, model: 'm' },
      { provider, model: 'other' },
    ]);
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    const started = Date.now();
    const err = await rejection(
      collect(client.stream({ messages: [user('hi')], tools: [] }, controller.signal)),
    );
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(err).not.toBeInstanceOf(ModelError);
    expect((err as Error).name).toBe('AbortError');
    expect(server.requests).toHaveLength(1);
  });
});
