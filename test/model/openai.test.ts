import { afterEach, describe, expect, it } from 'vitest';
import { createOpenAiProvider } from '../../src/model/openai.js';
import { type ScriptServer, startScriptServer } from '../../src/model/script-server.js';
import { ModelError, type ModelRequest } from '../../src/model/types.js';
import { bodyOf, clientOf, collect, freePort, rejection, signal, textOf, user } from './support.js';

const readTool = {
  name: 'read_file',
  description: 'Read a file',
  parameters: { type: 'object', properties: { path: { type: 'string' } } },
};

function request(overrides: Partial<ModelRequest> = {}): ModelRequest {
  return { model: 'm', messages: [user('hi')], tools: [readTool], ...overrides };
}

describe('openai provider against the script server', () => {
  let server: ScriptServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it('takes the window a server runs with: llama-server /props, LM Studio loaded, else not loaded', async () => {
    server = await startScriptServer({ turns: [] }, { models: ['m'], llamaServer: { nCtx: 4096 } });
    const llama = createOpenAiProvider({ baseUrl: server.url });
    expect(await llama.contextWindow?.('m')).toEqual({ tokens: 4096, source: 'llama-server /props n_ctx' });
    expect(await llama.countTokens?.('abcdef')).toBe(2); // the script server: a token per 3 characters
    await server.close();
    server = await startScriptServer(
      { turns: [] },
      { models: ['m'], lmStudio: { maxContextLength: 131072, loadedContextLength: 8192 } },
    );
    const studio = createOpenAiProvider({ baseUrl: server.url });
    expect(await studio.contextWindow?.('m')).toEqual({
      tokens: 8192,
      source: 'LM Studio loaded_context_length',
    });
    // no /tokenize here: asked once, then never again
    expect(await studio.countTokens?.('abcdef')).toBeUndefined();
    expect(await studio.countTokens?.('abcdef')).toBeUndefined();
    expect(server.requests.filter((r) => r.path === '/tokenize')).toHaveLength(1);
    await server.close();
    server = await startScriptServer(
      { turns: [] },
      { models: ['m'], lmStudio: { maxContextLength: 131072 } },
    );
    expect((await createOpenAiProvider({ baseUrl: server.url }).contextWindow?.('m'))?.tokens).toBe(131072);
  });

  it('streams text in several deltas and reports usage when the server does', async () => {
    server = await startScriptServer({
      turns: [{ text: 'Hello from the scripted model', usage: { prompt_tokens: 12, completion_tokens: 5 } }],
    });
    const provider = createOpenAiProvider({ baseUrl: server.url });
    const deltas = await collect(provider.stream(request(), signal()));
    expect(deltas.filter((d) => d.type === 'text').length).toBeGreaterThan(1);
    expect(textOf(deltas)).toBe('Hello from the scripted model');
    expect(deltas).toContainEqual({
      type: 'usage',
      usage: { inputTokens: 12, outputTokens: 5, reported: true },
    });
    expect(deltas.at(-1)).toEqual({ type: 'done', finishReason: 'stop' });
    const body = server.requests[0]?.body as Record<string, unknown>;
    expect(body.stream).toBe(true);
    expect(body.stream_options).toEqual({ include_usage: true });
    expect(server.requests[0]?.headers.authorization).toBe('Bearer not-needed');
  });

  it('assembles tool-call arguments split across chunks, and sends a raw broken string as is', async () => {
    server = await startScriptServer({
      turns: [
        {
          tool_calls: [
            { id: 'c1', name: 'read_file', arguments: { path: 'src/a very long file name.ts' } },
            { name: 'read_file', arguments: '{"path": "b.ts"' },
          ],
        },
      ],
    });
    const provider = createOpenAiProvider({ baseUrl: server.url, apiKey: 'sk-test' });
    const deltas = await collect(provider.stream(request(), signal()));
    const calls = deltas.flatMap((d) => (d.type === 'tool_call' ? [d.call] : []));
    expect(calls).toEqual([
      { id: 'c1', name: 'read_file', arguments: '{"path":"src/a very long file name.ts"}' },
      { id: 'call_1', name: 'read_file', arguments: '{"path": "b.ts"' },
    ]);
    expect(deltas.at(-1)).toEqual({ type: 'done', finishReason: 'tool_calls' });
    expect(server.requests[0]?.headers.authorization).toBe('Bearer sk-test');
    const tools = bodyOf(server.requests, 0).tools as unknown[];
    expect(tools).toEqual([{ type: 'function', function: readTool }]);
  });

  it('maps assistant tool calls and tool results to the wire format', async () => {
    server = await startScriptServer({
      turns: [{ text: 'ok', expect: { last_tool_result_contains: 'contents' } }],
    });
    const provider = createOpenAiProvider({ baseUrl: server.url });
    const call = { id: 'c9', name: 'read_file', arguments: '{"path":"a"}' };
    const messages: ModelRequest['messages'] = [
      { role: 'system', content: 'sys' },
      user('read a'),
      { role: 'assistant', content: '', toolCalls: [call] },
      { role: 'tool', toolCallId: 'c9', name: 'read_file', content: 'file contents' },
    ];
    await collect(provider.stream(request({ messages }), signal()));
    const sent = bodyOf(server.requests, 0).messages as unknown[];
    expect(sent[2]).toEqual({
      role: 'assistant',
      content: null,
      tool_calls: [
        { id: 'c9', type: 'function', function: { name: 'read_file', arguments: '{"path":"a"}' } },
      ],
    });
    expect(sent[3]).toEqual({ role: 'tool', tool_call_id: 'c9', content: 'file contents' });
  });

  it('omits usage when the server does not report it, and the client estimates it', async () => {
    server = await startScriptServer({ turns: [{ text: 'no usage here' }, { text: 'again' }] });
    const provider = createOpenAiProvider({ baseUrl: server.url });
    const raw = await collect(provider.stream(request(), signal()));
    expect(raw.some((d) => d.type === 'usage')).toBe(false);
    const client = clientOf([{ provider, model: 'm' }]);
    const deltas = await collect(client.stream({ messages: [user('hi')], tools: [] }, signal()));
    const usage = deltas.find((d) => d.type === 'usage');
    expect(usage?.type === 'usage' && usage.usage.reported).toBe(false);
    expect(usage?.type === 'usage' && usage.usage.inputTokens).toBeGreaterThan(0);
    expect(deltas.at(-1)?.type).toBe('done');
    expect(deltas.every((d) => d.model === 'm')).toBe(true);
  });

  it('fails fast with kind unreachable and a message naming the URL when nothing listens', async () => {
    const url = `http://127.0.0.1:${await freePort()}/v1`;
    const provider = createOpenAiProvider({ baseUrl: url });
    const started = Date.now();
    const err = await rejection(collect(provider.stream(request(), signal())));
    expect(err).toBeInstanceOf(ModelError);
    expect((err as ModelError).kind).toBe('unreachable');
    expect((err as ModelError).message).toBe(`cannot reach ${url}: connection refused`);
    expect(Date.now() - started).toBeLessThan(3_000);
  });

  it('maps 401 to auth and 404 to not_found with the server message', async () => {
    server = await startScriptServer({ turns: [{ error: { status: 401 } }, { error: { status: 404 } }] });
    const provider = createOpenAiProvider({ baseUrl: server.url });
    const auth = (await rejection(collect(provider.stream(request(), signal())))) as ModelError;
    expect([auth.kind, auth.status]).toEqual(['auth', 401]);
    expect(auth.message).toContain(server.url);
    const missing = (await rejection(collect(provider.stream(request(), signal())))) as ModelError;
    expect(missing.kind).toBe('not_found');
    expect(missing.message).toContain('scripted error 404');
  });

  it('lists models', async () => {
    server = await startScriptServer({ turns: [] }, { models: ['qwen', 'llama'] });
    const provider = createOpenAiProvider({ baseUrl: server.url });
    expect(await provider.listModels?.()).toEqual(['qwen', 'llama']);
  });
});
