/** Reasoning and cut-off answers over the real wire formats: reasoning never lands in text, 'length' always surfaces. */
import { afterEach, describe, expect, it } from 'vitest';
import { createOllamaProvider } from '../../src/model/ollama.js';
import { createOpenAiProvider } from '../../src/model/openai.js';
import type { Script, ScriptTurn } from '../../src/model/script.js';
import { type ScriptServer, startScriptServer } from '../../src/model/script-server.js';
import { createScriptedProvider } from '../../src/model/scripted.js';
import type { Delta, ModelRequest, Provider } from '../../src/model/types.js';
import { clientOf, collect, signal, textOf, user } from './support.js';

const writeTool = { name: 'write_file', description: 'Write a file', parameters: { type: 'object' } };
const request: ModelRequest = { model: 'm', messages: [user('fix it')], tools: [writeTool] };

const reasoningOf = (deltas: Delta[]) =>
  deltas.flatMap((d) => (d.type === 'reasoning' ? [d.text] : [])).join('');
const finishOf = (deltas: Delta[]) => {
  const last = deltas.at(-1);
  return last?.type === 'done' ? last.finishReason : undefined;
};

const THINKING = '<think>\nThe test fails on a.ts line 3.\n</think>\n\nI fixed a.ts.';
const CUT_CALL = '{"path": "a.ts", "content": "export const x = ';

const wires: Array<[string, (s: ScriptServer) => Provider]> = [
  ['openai', (s) => createOpenAiProvider({ baseUrl: s.url })],
  ['ollama', (s) => createOllamaProvider({ baseUrl: s.ollamaUrl })],
];

describe.each(wires)('%s provider: reasoning and finish reasons', (_wire, connect) => {
  let server: ScriptServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  async function serve(turns: ScriptTurn[]): Promise<Provider> {
    server = await startScriptServer({ turns });
    return connect(server);
  }

  it('streams reasoning sent apart (reasoning_content, thinking) as reasoning deltas, never text', async () => {
    const provider = await serve([
      { reasoning: 'The test fails because of the off-by-one.', text: 'Fixed the off-by-one.' },
    ]);
    const deltas = await collect(provider.stream(request, signal()));
    expect(reasoningOf(deltas)).toBe('The test fails because of the off-by-one.');
    expect(textOf(deltas)).toBe('Fixed the off-by-one.');
    expect(deltas.filter((d) => d.type === 'reasoning').length).toBeGreaterThan(1); // live, not at the end
    expect(finishOf(deltas)).toBe('stop');
  });

  it('splits inline <think> blocks out of the text however the stream cuts the tags', async () => {
    const sizes = [1, 2, 3, 4, 5, 7, 9, 100];
    const provider = await serve(sizes.map((chunk_size) => ({ text: THINKING, chunk_size })));
    for (const size of sizes) {
      const deltas = await collect(provider.stream(request, signal()));
      expect(textOf(deltas), `chunk_size ${size}`).toBe('I fixed a.ts.');
      expect(reasoningOf(deltas), `chunk_size ${size}`).toBe('\nThe test fails on a.ts line 3.\n');
    }
  });

  it('says length when the answer was cut at the output limit', async () => {
    const provider = await serve([{ text: 'The fix is to change line', finish: 'length' }]);
    const deltas = await collect(provider.stream(request, signal()));
    expect(textOf(deltas)).toBe('The fix is to change line');
    expect(finishOf(deltas)).toBe('length');
  });

  it('says length when a text tool call was cut mid-JSON, also through the client', async () => {
    const provider = await serve([
      { text: `{"name": "write_file", "arguments": ${CUT_CALL}`, finish: 'length', chunk_size: 4 },
    ]);
    const deltas = await collect(clientOf([{ provider, model: 'm' }]).stream(request, signal()));
    expect(textOf(deltas)).toBe(`{"name": "write_file", "arguments": ${CUT_CALL}`);
    expect(finishOf(deltas)).toBe('length');
  });
});

describe('openai provider: wire details', () => {
  let server: ScriptServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  async function serve(script: Script): Promise<Provider> {
    server = await startScriptServer(script);
    return createOpenAiProvider({ baseUrl: server.url });
  }

  it('reads reasoning from the `reasoning` field, as newer vLLM sends it', async () => {
    const provider = await serve({
      turns: [{ reasoning: 'Look at a.ts first.', reasoning_field: 'reasoning', text: 'Reading a.ts.' }],
    });
    const deltas = await collect(provider.stream(request, signal()));
    expect(reasoningOf(deltas)).toBe('Look at a.ts first.');
    expect(textOf(deltas)).toBe('Reading a.ts.');
  });

  it('still hands over a native tool call cut mid-JSON, with done saying length, not tool_calls', async () => {
    const cut: ScriptTurn = {
      tool_calls: [{ id: 'c1', name: 'write_file', arguments: CUT_CALL }],
      finish: 'length',
    };
    const provider = await serve({ turns: [cut, cut] });
    for (const stream of [
      provider.stream(request, signal()),
      clientOf([{ provider, model: 'm' }]).stream(request, signal()),
    ]) {
      const deltas = await collect(stream);
      const calls = deltas.flatMap((d) => (d.type === 'tool_call' ? [d.call] : []));
      expect(calls).toEqual([{ id: 'c1', name: 'write_file', arguments: CUT_CALL }]);
      expect(finishOf(deltas)).toBe('length');
    }
  });

  it('calls a stop with tool calls tool_calls, as llama.cpp sends it', async () => {
    const provider = await serve({
      turns: [{ tool_calls: [{ name: 'write_file', arguments: { path: 'a' } }], finish: 'stop' }],
    });
    expect(finishOf(await collect(provider.stream(request, signal())))).toBe('tool_calls');
  });

  it('sends reasoning_content and the finish reason in a non-streamed answer too', async () => {
    await serve({ turns: [{ reasoning: 'hmm', text: 'ok', finish: 'length' }] });
    const res = await fetch(`${server?.url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', messages: [], stream: false }),
    });
    const body = (await res.json()) as { choices: { message: unknown; finish_reason: string }[] };
    expect(body.choices[0]).toMatchObject({
      message: { content: 'ok', reasoning_content: 'hmm' },
      finish_reason: 'length',
    });
  });
});

describe('scripted provider: the same turns in-process', () => {
  it('replays reasoning, inline <think> and finish the way the wire providers deliver them', async () => {
    const provider = createScriptedProvider({
      turns: [
        { reasoning: 'apart', text: 'answer one' },
        { text: THINKING, chunk_size: 3 },
        { tool_calls: [{ name: 'write_file', arguments: CUT_CALL }], finish: 'length' },
      ],
    });
    const apart = await collect(provider.stream(request, signal()));
    expect([reasoningOf(apart), textOf(apart), finishOf(apart)]).toEqual(['apart', 'answer one', 'stop']);
    const inline = await collect(provider.stream(request, signal()));
    expect([reasoningOf(inline), textOf(inline)]).toEqual([
      '\nThe test fails on a.ts line 3.\n',
      'I fixed a.ts.',
    ]);
    const cut = await collect(provider.stream(request, signal()));
    expect(finishOf(cut)).toBe('length');
  });
});
