import { afterEach, describe, expect, it } from 'vitest';
import { createOllamaProvider, ollamaBaseUrl } from '../../src/model/ollama.js';
import { type ScriptServer, startScriptServer } from '../../src/model/script-server.js';
import { ModelError, type ModelRequest } from '../../src/model/types.js';
import { bodyOf, collect, freePort, rejection, signal, textOf, user } from './support.js';

const tool = { name: 'grep', description: 'Search', parameters: { type: 'object', properties: {} } };

describe('ollama provider against the script server', () => {
  let server: ScriptServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it('sends num_ctx and tools to /api/chat and streams text, tool calls and usage', async () => {
    server = await startScriptServer({
      turns: [
        {
          text: 'Let me search for it',
          tool_calls: [
            { name: 'grep', arguments: { pattern: 'foo' } },
            { name: 'grep', arguments: { pattern: 'x' } },
          ],
          usage: { prompt_tokens: 40, completion_tokens: 9 },
        },
      ],
    });
    const provider = createOllamaProvider({ baseUrl: `${server.url}/` }); // a /v1/ a user typed is dropped
    const request: ModelRequest = {
      model: 'qwen',
      messages: [user('find foo')],
      tools: [tool],
      contextWindow: 16384,
    };
    const deltas = await collect(provider.stream(request, signal()));
    expect(textOf(deltas)).toBe('Let me search for it');
    expect(deltas.filter((d) => d.type === 'tool_call')).toEqual([
      { type: 'tool_call', call: { id: 'call_0', name: 'grep', arguments: '{"pattern":"foo"}' } },
      { type: 'tool_call', call: { id: 'call_1', name: 'grep', arguments: '{"pattern":"x"}' } },
    ]);
    expect(deltas).toContainEqual({
      type: 'usage',
      usage: { inputTokens: 40, outputTokens: 9, reported: true },
    });
    expect(deltas.at(-1)).toEqual({ type: 'done', finishReason: 'tool_calls' });
    const recorded = server.requests[0];
    expect(recorded?.path).toBe('/api/chat');
    const body = recorded?.body as { options: unknown; tools: unknown; stream: boolean };
    expect(body.options).toEqual({ num_ctx: 16384 });
    expect(body.stream).toBe(true);
    expect(body.tools).toEqual([{ type: 'function', function: tool }]);
  });

  it('sends tool results with tool_name and assistant arguments as objects', async () => {
    server = await startScriptServer({
      turns: [{ text: 'done', expect: { last_tool_result_contains: 'match' } }],
    });
    const provider = createOllamaProvider({ baseUrl: server.ollamaUrl });
    const messages: ModelRequest['messages'] = [
      user('go'),
      {
        role: 'assistant',
        content: '',
        toolCalls: [{ id: 'call_0', name: 'grep', arguments: '{"pattern":"a"}' }],
      },
      { role: 'tool', toolCallId: 'call_0', name: 'grep', content: 'one match' },
    ];
    await collect(provider.stream({ model: 'qwen', messages, tools: [] }, signal()));
    const sent = bodyOf(server.requests, 0).messages as unknown[];
    expect(sent[1]).toEqual({
      role: 'assistant',
      content: '',
      tool_calls: [{ function: { name: 'grep', arguments: { pattern: 'a' } } }],
    });
    expect(sent[2]).toEqual({ role: 'tool', content: 'one match', tool_name: 'grep' });
  });

  it('reads the context window from /api/show, preferring a Modelfile num_ctx', async () => {
    server = await startScriptServer({ turns: [] }, { contextLength: 32768 });
    const provider = createOllamaProvider({ baseUrl: server.ollamaUrl });
    expect((await provider.contextWindow?.('qwen'))?.tokens).toBe(32768);
    // a model not loaded: /api/ps has nothing for it, /api/show says
    expect(server.requests.map((r) => r.path)).toEqual(['/api/ps', '/api/show']);
    expect(server.requests[1]).toMatchObject({ path: '/api/show', body: { model: 'qwen' } });
    const other = await startScriptServer(
      { turns: [] },
      { showParameters: 'stop "<|im_end|>"\nnum_ctx 4096' },
    );
    try {
      expect(await createOllamaProvider({ baseUrl: other.ollamaUrl }).contextWindow?.('qwen')).toEqual({
        tokens: 4096,
        source: 'Ollama Modelfile num_ctx',
      });
    } finally {
      await other.close();
    }
  });

  it('lists models from /api/tags', async () => {
    server = await startScriptServer({ turns: [] }, { models: ['qwen2.5-coder:7b'] });
    expect(await createOllamaProvider({ baseUrl: server.ollamaUrl }).listModels?.()).toEqual([
      'qwen2.5-coder:7b',
    ]);
  });

  it('maps an unknown model to not_found with Ollama’s message', async () => {
    server = await startScriptServer({
      turns: [{ error: { status: 404, body: '{"error":"model \\"nope\\" not found"}' } }],
    });
    const provider = createOllamaProvider({ baseUrl: server.ollamaUrl });
    const err = (await rejection(
      collect(provider.stream({ model: 'nope', messages: [], tools: [] }, signal())),
    )) as ModelError;
    expect(err.kind).toBe('not_found');
    expect(err.message).toContain('model "nope" not found');
  });

  it('fails fast with kind unreachable when nothing listens', async () => {
    const url = `http://127.0.0.1:${await freePort()}`;
    const provider = createOllamaProvider({ baseUrl: url });
    const err = await rejection(collect(provider.stream({ model: 'm', messages: [], tools: [] }, signal())));
    expect(err).toBeInstanceOf(ModelError);
    expect((err as ModelError).kind).toBe('unreachable');
    expect((err as ModelError).message).toBe(`cannot reach ${url}: connection refused`);
  });

  it('normalizes base URLs', () => {
    expect(ollamaBaseUrl('http://h:11434/v1')).toBe('http://h:11434');
    expect(ollamaBaseUrl('http://h:11434/v1/')).toBe('http://h:11434');
    expect(ollamaBaseUrl('http://h:11434/')).toBe('http://h:11434');
  });
});
