import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';
import { describe, expect, it } from 'vitest';
import { costUsd } from '../../src/model/cost.js';
import {
  countTokensCancellable,
  estimateRequestTokens,
  estimateTokens,
  loadTokenizer,
  tokenizerLoaded,
} from '../../src/model/tokens.js';

describe('token estimates', () => {
  it('falls back to characters / 4, then counts with o200k once loaded', async () => {
    const text = 'The quick brown fox jumps over the lazy dog.';
    if (!tokenizerLoaded()) expect(estimateTokens(text)).toBe(Math.ceil(text.length / 4));
    await loadTokenizer();
    expect(tokenizerLoaded()).toBe(true);
    expect(estimateTokens(text)).toBe(10);
    expect(estimateTokens('')).toBe(0);
    expect(estimateTokens('a <|endoftext|> b')).toBeGreaterThan(3); // special tokens are text here
  });

  it('counts messages, tool calls and tool schemas in a request', async () => {
    await loadTokenizer();
    const messages = [
      { role: 'system' as const, content: 'You are keel.' },
      { role: 'user' as const, content: 'Fix the failing test in src/a.ts' },
    ];
    const bare = estimateRequestTokens(messages, []);
    expect(bare).toBeGreaterThan(10);
    expect(bare).toBeLessThan(40);
    const tool = {
      name: 'read_file',
      description: 'Read a file',
      parameters: { type: 'object', properties: { path: { type: 'string' } } },
    };
    expect(estimateRequestTokens(messages, [tool])).toBeGreaterThan(bare + 10);
  });
});

describe('counting long text', () => {
  it('counts prose in pieces as the whole would count, within a token per piece', async () => {
    await loadTokenizer();
    const words = ['alpha', 'beta', 'gamma', 'function', 'return', '{', '}', 'x1', '=>', 'const'];
    const text = Array.from({ length: 20_000 }, (_, i) => words[(i * 7) % words.length]).join(' ');
    const whole = countTokens(text);
    const pieces = estimateTokens(text);
    expect(Math.abs(pieces - whole)).toBeLessThanOrEqual(Math.ceil(text.length / 1024));
  });

  it('5 MB of one character is estimated, not counted for minutes, and close to o200k', async () => {
    await loadTokenizer();
    const exact = countTokens('a'.repeat(8192)) / 8192; // tokens per character of a long run
    const n = 5 * 1024 * 1024;
    const estimate = estimateTokens('a'.repeat(n));
    expect(estimate / n).toBeGreaterThan(exact * 0.9);
    expect(estimate / n).toBeLessThan(exact * 1.1);
    expect(await countTokensCancellable('a'.repeat(n))).toBe(estimate);
  });

  it('a cancelled count stops with the signal', async () => {
    const controller = new AbortController();
    controller.abort(new Error('stopped'));
    await expect(countTokensCancellable('word '.repeat(100_000), controller.signal)).rejects.toThrow(
      'stopped',
    );
  });
});

describe('costUsd', () => {
  const pricing = { 'gpt-x': { input_per_mtok: 2, output_per_mtok: 8 } };

  it('is null for a model without a price, never a guess', () => {
    expect(costUsd('qwen', { inputTokens: 1000, outputTokens: 1000, reported: true }, pricing)).toBeNull();
    expect(costUsd('toString', { inputTokens: 1, outputTokens: 1, reported: true }, {})).toBeNull();
  });

  it('prices input and output per million tokens', () => {
    expect(
      costUsd('gpt-x', { inputTokens: 1_000_000, outputTokens: 500_000, reported: true }, pricing),
    ).toBeCloseTo(6);
  });

  it('prices a gpu_second model by the seconds of the call, and unknown when they are not known', () => {
    const local = { qwen: { gpu_second: 0.002 } };
    const usage = { inputTokens: 1_000_000, outputTokens: 1_000_000, reported: true };
    expect(costUsd('qwen', usage, local, 2.5)).toBeCloseTo(0.005);
    expect(costUsd('qwen', usage, local)).toBeNull();
  });
});
