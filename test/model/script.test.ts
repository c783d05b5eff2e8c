import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createOpenAiProvider } from '../../src/model/openai.js';
import { loadScript, ScriptCursor, ScriptError } from '../../src/model/script.js';
import { type ScriptServer, startScriptServer } from '../../src/model/script-server.js';
import { createScriptedProvider } from '../../src/model/scripted.js';
import type { ModelError, ModelRequest } from '../../src/model/types.js';
import { collect, rejection, signal, textOf, user } from './support.js';

const readTool = { name: 'read_file', description: 'Read', parameters: { type: 'object' } };
const request = (content = 'hi'): ModelRequest => ({
  model: 'm',
  messages: [user(content)],
  tools: [readTool],
});

function writeTemp(name: string, text: string): string {
  const path = join(mkdtempSync(join(tmpdir(), 'keel-script-')), name);
  writeFileSync(path, text);
  return path;
}

describe('script files', () => {
  it('loads a valid script', () => {
    const path = writeTemp(
      'ok.json',
      JSON.stringify({ turns: [{ text: 'hi' }, { tool_calls: [{ name: 'x', arguments: '{' }] }] }),
    );
    expect(loadScript(path).turns).toHaveLength(2);
  });

  it('names the file on bad JSON, a bad shape and a missing file', () => {
    const bad = writeTemp('bad.json', '{"turns": [');
    expect(() => loadScript(bad)).toThrow(ScriptError);
    expect(() => loadScript(bad)).toThrow(`invalid JSON in script ${bad}`);
    const shape = writeTemp('shape.json', JSON.stringify({ turns: [{ txt: 'typo' }] }));
    expect(() => loadScript(shape)).toThrow(new RegExp(`invalid script ${shape}[\\s\\S]*turns\\.0`));
    expect(() => loadScript('/nonexistent/script.json')).toThrow(
      'cannot read script /nonexistent/script.json',
    );
  });

  it('accepts reasoning, finish and chunk_size, and names a misspelt finish', () => {
    const ok = writeTemp(
      'reasoning.json',
      JSON.stringify({
        turns: [
          { reasoning: 'hmm', reasoning_field: 'reasoning', text: 'a', finish: 'length', chunk_size: 1 },
        ],
      }),
    );
    expect(loadScript(ok).turns[0]).toMatchObject({ reasoning: 'hmm', finish: 'length', chunk_size: 1 });
    const typo = writeTemp('typo.json', JSON.stringify({ turns: [{ text: 'a', finish: 'lenght' }] }));
    expect(() => loadScript(typo)).toThrow(/turns\.0\.finish/);
    const zero = writeTemp('zero.json', JSON.stringify({ turns: [{ text: 'a', chunk_size: 0 }] }));
    expect(() => loadScript(zero)).toThrow(/turns\.0\.chunk_size/);
  });

  it('keeps one cursor per model when turns name models', () => {
    const cursor = new ScriptCursor({
      turns: [
        { model: 'a', text: '1' },
        { model: 'b', text: '2' },
        { model: 'a', text: '3' },
      ],
    });
    expect(cursor.next('b')?.text).toBe('2');
    expect(cursor.next('a')?.text).toBe('1');
    expect(cursor.next('a')?.text).toBe('3');
    expect(cursor.next('a')).toBeUndefined();
    expect(cursor.next('b')).toBeUndefined();
  });
});

describe('script server expectations', () => {
  let server: ScriptServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it('answers a failed expectation with HTTP 400 saying so, and an exhausted script with 500', async () => {
    server = await startScriptServer({
      turns: [{ text: 'ok', expect: { last_user_contains: 'fix the bug', tools: ['read_file', 'shell'] } }],
    });
    const provider = createOpenAiProvider({ baseUrl: server.url });
    const err = (await rejection(
      collect(provider.stream(request('something else'), signal())),
    )) as ModelError;
    expect(err.kind).toBe('bad_request');
    expect(err.message).toContain('script expectation failed');
    expect(err.message).toContain('fix the bug');
    const exhausted = (await rejection(collect(provider.stream(request(), signal())))) as ModelError;
    expect(exhausted.status).toBe(500);
    expect(exhausted.message).toContain('script exhausted');
  });

  it('answers non-streaming requests and unknown routes', async () => {
    server = await startScriptServer({
      turns: [{ text: 'whole', usage: { prompt_tokens: 1, completion_tokens: 2 } }],
    });
    const res = await fetch(`${server.url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', messages: [], stream: false }),
    });
    const body = (await res.json()) as {
      choices: { message: { content: string } }[];
      usage: { total_tokens: number };
    };
    expect(body.choices[0]?.message.content).toBe('whole');
    expect(body.usage.total_tokens).toBe(3);
    expect((await fetch(`${server.url}/nope`)).status).toBe(404);
  });
});

describe('scripted provider', () => {
  it('replays text and tool calls, estimating usage when the script gives none', async () => {
    const provider = createScriptedProvider({
      turns: [{ text: 'reading', tool_calls: [{ name: 'read_file', arguments: { path: 'a' } }] }],
    });
    const deltas = await collect(provider.stream(request(), signal()));
    expect(textOf(deltas)).toBe('reading');
    expect(deltas).toContainEqual({
      type: 'tool_call',
      call: { id: 'call_0', name: 'read_file', arguments: '{"path":"a"}' },
    });
    const usage = deltas.find((d) => d.type === 'usage');
    expect(usage?.type === 'usage' && usage.usage.reported).toBe(false);
    expect(deltas.at(-1)).toEqual({ type: 'done', finishReason: 'tool_calls' });
  });

  it('throws scripted errors by kind and failed expectations as bad_request', async () => {
    const provider = createScriptedProvider(
      { turns: [{ error: { status: 429, retry_after: 2 } }, { text: 'x', expect: { tools: ['shell'] } }] },
      { source: 'demo.json' },
    );
    const limited = (await rejection(collect(provider.stream(request(), signal())))) as ModelError;
    expect([limited.kind, limited.retryAfterS]).toEqual(['rate_limit', 2]);
    const failed = (await rejection(collect(provider.stream(request(), signal())))) as ModelError;
    expect(failed.kind).toBe('bad_request');
    expect(failed.message).toContain('script expectation failed: tools shell not offered');
    expect(failed.message).toContain('demo.json');
  });
});
