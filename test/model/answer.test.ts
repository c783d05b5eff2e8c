/** streamAnswer over the real client and wire: what reaches history is the answer, with reasoning and finish apart. */
import { afterEach, describe, expect, it } from 'vitest';
import { type Answer, streamAnswer } from '../../src/agent/answer.js';
import type { SessionEvent } from '../../src/agent/events.js';
import type { SessionOptions } from '../../src/agent/loop.js';
import { configSchema } from '../../src/config/schema.js';
import { createOllamaProvider } from '../../src/model/ollama.js';
import { createOpenAiProvider } from '../../src/model/openai.js';
import type { ScriptTurn } from '../../src/model/script.js';
import { type ScriptServer, startScriptServer } from '../../src/model/script-server.js';
import { policyFor } from '../../src/policy/policy.js';
import { Scope } from '../../src/policy/scope.js';
import { ToolRegistry } from '../../src/tools/registry.js';
import { tempDir } from '../helpers/tmp.js';
import { clientOf, user } from './support.js';

const ask = { messages: [user('fix it')], tools: [] };

describe('streamAnswer', () => {
  let server: ScriptServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  /** One answer to one scripted turn, over the OpenAI (or Ollama) wire; also what was shown live. */
  async function answer(turn: ScriptTurn, wire: 'openai' | 'ollama' = 'openai') {
    await server?.close();
    server = await startScriptServer({ turns: [turn] });
    const provider =
      wire === 'openai'
        ? createOpenAiProvider({ baseUrl: server.url })
        : createOllamaProvider({ baseUrl: server.ollamaUrl });
    const shown: string[] = [];
    const events: SessionEvent[] = [];
    const root = tempDir();
    const opts: SessionOptions = {
      policy: policyFor({
        mode: 'ask',
        scope: new Scope({ root, writable: ['.'] }),
        config: configSchema.parse({}),
        sandbox: false,
      }),
      prompt: 'fix it',
      config: configSchema.parse({}),
      model: clientOf([{ provider, model: 'm' }]),
      tools: new ToolRegistry([]),
      record: (e) => events.push(e),
      signal: new AbortController().signal,
      sessionId: 'test',
      onText: (t) => shown.push(t),
    };
    const result: Answer = await streamAnswer(opts, ask, opts.signal, 1);
    return { result, shown: shown.join('') };
  }

  it('keeps reasoning_content out of the text and out of what is shown as text', async () => {
    const { result, shown } = await answer({ reasoning: '\nIt is an off-by-one.\n', text: 'Fixed it.' });
    expect(result).toMatchObject({
      text: 'Fixed it.',
      reasoning: 'It is an off-by-one.',
      finishReason: 'stop',
    });
    expect(shown).toBe('Fixed it.\n');
  });

  it('keeps Ollama thinking and inline <think> out of the text', async () => {
    const thinking = await answer({ reasoning: 'look at a.ts', text: 'Done.' }, 'ollama');
    expect(thinking.result).toMatchObject({ text: 'Done.', reasoning: 'look at a.ts' });
    const inline = await answer({ text: '<think>look at b.ts</think>\n\nDone.', chunk_size: 2 });
    expect(inline.result).toMatchObject({ text: 'Done.', reasoning: 'look at b.ts' });
    expect(inline.shown).toBe('Done.\n');
  });

  it('takes reasoning before a bare </think> (the template opened it) out of the text', async () => {
    const { result } = await answer({ text: 'the bug is in a.ts</think>\n\nFixed a.ts.' });
    expect(result).toMatchObject({ text: 'Fixed a.ts.', reasoning: 'the bug is in a.ts' });
  });

  it('leaves a </think> in the text alone when the reasoning came apart', async () => {
    const { result } = await answer({ reasoning: 'explain the tag', text: 'It ends with </think>.' });
    expect(result).toMatchObject({ text: 'It ends with </think>.', reasoning: 'explain the tag' });
  });

  it('reports finishReason length for a tool call cut at the output limit', async () => {
    const args = '{"path": "a.ts", "content": "export const';
    const { result } = await answer({
      tool_calls: [{ name: 'write_file', arguments: args }],
      finish: 'length',
    });
    expect(result.calls).toEqual([{ id: 'call_0', name: 'write_file', arguments: args }]);
    expect(result.finishReason).toBe('length');
  });
});
