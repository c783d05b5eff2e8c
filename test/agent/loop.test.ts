/** The loop in-process: budgets, loop detection and history hygiene, against a scripted model and a real workspace. */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { SessionEvent } from '../../src/agent/events.js';
import { replay } from '../../src/agent/history.js';
import { runSession } from '../../src/agent/loop.js';
import { configSchema } from '../../src/config/schema.js';
import { ModelClient } from '../../src/model/chain.js';
import type { ScriptTurn } from '../../src/model/script.js';
import { createScriptedProvider } from '../../src/model/scripted.js';
import { policyFor } from '../../src/policy/policy.js';
import { Scope } from '../../src/policy/scope.js';
import { builtinTools } from '../../src/tools/builtin.js';
import { ToolRegistry } from '../../src/tools/registry.js';
import type { Tool } from '../../src/tools/types.js';
import { tempDir, writeFiles } from '../helpers/tmp.js';

function testPolicy(mode: 'ask' | 'edit', root: string, config: ReturnType<typeof configSchema.parse>) {
  return policyFor({ mode, scope: new Scope({ root, writable: ['.'] }), config, sandbox: false });
}

function client(turns: ScriptTurn[]): ModelClient {
  const provider = createScriptedProvider({ turns });
  return new ModelClient([{ provider, model: 'scripted' }], {
    timeouts: { firstTokenMs: 5000, idleMs: 5000 },
    retries: { max: 0, base_delay_ms: 1, max_delay_ms: 1 },
    cooldownS: 0,
  });
}

async function session(
  turns: ScriptTurn[],
  config: Record<string, unknown> = {},
  mode: 'ask' | 'edit' = 'edit',
) {
  const root = tempDir();
  writeFiles(root, { 'a.txt': 'one\ntwo\nthree\n' });
  const events: SessionEvent[] = [];
  const result = await runSession({
    policy: testPolicy(mode, root, configSchema.parse(config)),
    prompt: 'do it',
    config: configSchema.parse(config),
    model: client(turns),
    tools: new ToolRegistry(builtinTools()),
    record: (e) => events.push(e),
    signal: new AbortController().signal,
    sessionId: 'test',
  });
  return { root, result, events };
}

const write = (path: string, content: string): ScriptTurn => ({
  tool_calls: [{ name: 'write_file', arguments: { path, content } }],
});

describe('budgets', () => {
  it('max_tokens ends the run after the round that crossed it', async () => {
    const usage = { prompt_tokens: 600, completion_tokens: 10 };
    const { result } = await session(
      [
        { ...write('b.txt', 'b'), usage },
        { ...write('c.txt', 'c'), usage },
      ],
      { budgets: { max_tokens: 1000 } },
    );
    expect(result).toMatchObject({ code: 'BUDGET_EXCEEDED', budget: 'max_tokens', rounds: 2 });
    expect(result.tokens).toEqual({ input: 1200, output: 20 });
  });

  it('max_cost_usd needs a price, and then stops the run', async () => {
    const usage = { prompt_tokens: 1_000_000, completion_tokens: 0 };
    const { result } = await session([{ ...write('b.txt', 'b'), usage }, { text: 'never' }], {
      budgets: { max_cost_usd: 0.5 },
      pricing: { scripted: { input_per_mtok: 1, output_per_mtok: 1 } },
    });
    expect(result).toMatchObject({ code: 'BUDGET_EXCEEDED', budget: 'max_cost_usd', costUsd: 1 });
  });

  it('max_diff_lines stops a session that changes too much', async () => {
    const big = Array.from({ length: 50 }, (_, i) => `line ${i}`).join('\n');
    const { result, root } = await session([write('big.txt', big), { text: 'never' }], {
      budgets: { max_diff_lines: 10 },
    });
    expect(result).toMatchObject({ code: 'BUDGET_EXCEEDED', budget: 'max_diff_lines' });
    expect(existsSync(join(root, 'big.txt'))).toBe(true);
  });

  it('max_wall_s interrupts a model that takes too long', async () => {
    const started = Date.now();
    const { result } = await session([{ text: 'slow', delay_ms: 5000 }], { budgets: { max_wall_s: 0.3 } });
    expect(result).toMatchObject({ code: 'BUDGET_EXCEEDED', budget: 'max_wall_s' });
    expect(Date.now() - started).toBeLessThan(3000);
  });
});

describe('the log', () => {
  it('records every event before the next one, and ends with exactly one session_end', async () => {
    const { events, result } = await session([write('b.txt', 'b'), { text: 'done' }]);
    expect(result.code).toBe('COMPLETED');
    const types = events.map((e) => e.type);
    expect(types.filter((t) => t === 'session_end')).toHaveLength(1);
    expect(types.at(-1)).toBe('session_end');
    // a tool's start is recorded after the gate allowed it and before its result
    expect(types.indexOf('gate_decision')).toBeLessThan(types.indexOf('tool_start'));
    expect(types.indexOf('tool_start')).toBeLessThan(types.indexOf('tool_result'));
    expect(result.filesChanged).toEqual(['b.txt']);
  });

  it('an unknown tool goes back to the model as an error, not into the workspace', async () => {
    const { events, result } = await session([
      { tool_calls: [{ name: 'delete_everything', arguments: {} }] },
      { text: 'sorry' },
    ]);
    expect(result.code).toBe('COMPLETED');
    const invalid = events.find((e) => e.type === 'tool_call_invalid');
    expect(invalid).toMatchObject({ tool: 'delete_everything' });
  });
});

describe('whatever throws', () => {
  it('an unexpected error in a tool still ends the run with one terminal code and a session_end', async () => {
    const root = tempDir();
    const events: SessionEvent[] = [];
    const broken: Tool = {
      name: 'broken',
      description: 'always throws',
      effect: 'read',
      schema: z.object({}),
      async execute() {
        throw new TypeError('cannot read properties of undefined');
      },
    };
    const result = await runSession({
      policy: testPolicy('ask', root, configSchema.parse({})),
      prompt: 'do it',
      config: configSchema.parse({}),
      model: client([{ tool_calls: [{ name: 'broken', arguments: {} }] }, { text: 'never' }]),
      tools: new ToolRegistry([...builtinTools(), broken]),
      record: (e) => events.push(e),
      signal: new AbortController().signal,
      sessionId: 'test',
    });
    expect(result.code).toBe('ENVIRONMENT_ERROR');
    expect(result.reason).toContain('unexpected error: TypeError: cannot read properties of undefined');
    const ends = events.filter((e) => e.type === 'session_end');
    expect(ends).toHaveLength(1);
    expect(ends[0]).toMatchObject({ code: 'ENVIRONMENT_ERROR' });
  });
});

describe('history is a projection of the log', () => {
  it('replaying the recorded events gives exactly the messages each request sent', async () => {
    const root = tempDir();
    writeFiles(root, { 'a.txt': 'one\n' });
    const model = client([
      { tool_calls: [{ id: 'c1', name: 'read_file', arguments: { path: 'a.txt' } }] },
      // a call written as text with broken JSON: recovered as invalid, answered with an error
      { text: 'Reading.\n<tool_call>{"name": "read_file", "arguments": {"path": "a.txt}</tool_call>' },
      { tool_calls: [{ id: 'c2', name: 'no_such_tool', arguments: {} }] },
      { tool_calls: [{ id: 'c3', name: 'write_file', arguments: { path: '../outside.txt', content: 'x' } }] },
      { tool_calls: [{ id: 'c4', name: 'edit_file', arguments: '{"path": "a.txt", "old' }] },
      { text: 'done' },
    ]);
    const sent: unknown[] = [];
    const recording = {
      provider: model.provider,
      currentModel: () => model.currentModel(),
      stream: (request: Parameters<ModelClient['stream']>[0], signal: AbortSignal, hooks: object) => {
        sent.push(structuredClone(request.messages));
        return model.stream(request, signal, hooks);
      },
    };
    const events: SessionEvent[] = [];
    const result = await runSession({
      policy: testPolicy('edit', root, configSchema.parse({})),
      prompt: 'do it',
      config: configSchema.parse({}),
      model: recording,
      tools: new ToolRegistry(builtinTools()),
      record: (e) => events.push(structuredClone(e)),
      signal: new AbortController().signal,
      sessionId: 'test',
    });
    expect(result.code).toBe('COMPLETED');
    expect(sent).toHaveLength(6);
    // the state after each model_request, replayed from the log alone, is what that request sent
    const requests = events.flatMap((e, i) => (e.type === 'model_request' ? [i] : []));
    for (const [n, at] of requests.entries()) {
      const state = replay(events.slice(0, at).map((event, i) => ({ seq: i + 1, event })));
      expect(state.messages).toEqual(sent[n]);
    }
    // and what they sent is clean: broken arguments never go back, every call has its answer
    const last = sent.at(-1) as Array<{
      role: string;
      content: string;
      toolCalls?: Array<{ id: string; arguments: string }>;
    }>;
    expect(last.map((m) => m.role)).toEqual([
      'system',
      'user',
      'assistant',
      'tool',
      'assistant',
      'tool',
      'assistant',
      'tool',
      'assistant',
      'tool',
      'assistant',
      'tool',
    ]);
    expect(last[4]?.toolCalls).toEqual([{ id: 'malformed_2_0', name: 'read_file', arguments: '{}' }]);
    expect(last[5]?.content).toContain('could not be parsed');
    expect(last[7]?.content).toContain('unknown tool "no_such_tool"');
    expect(last[9]?.content).toMatch(/^Error: denied: .*outside/);
    expect(last[10]?.toolCalls?.[0]?.arguments).toBe('{}');
    expect(last[11]?.content).toMatch(/^Error: /);
    const final = replay(events.map((event, i) => ({ seq: i + 1, event })));
    expect(final.ended).toBe(true);
    expect(final.open.size).toBe(0);
    expect(final.tokens).toEqual(result.tokens);
  });
});
