import { describe, expect, it } from 'vitest';
import { costUsd } from '../../src/model/cost.js';
import {
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
});
