import { describe, expect, it } from 'vitest';
import { normalizeFinishReason } from '../../src/model/finish-reason.js';
import { splitUnopenedThink, type ThinkPiece, ThinkTagSplitter } from '../../src/model/think-tags.js';

/** Feed `chunks` through one splitter; the text and reasoning it produced, and every piece. */
function run(chunks: string[]): { text: string; reasoning: string; pieces: ThinkPiece[] } {
  const splitter = new ThinkTagSplitter();
  const pieces = [...chunks.flatMap((c) => splitter.push(c)), ...splitter.end()];
  const join = (type: ThinkPiece['type']) =>
    pieces
      .filter((p) => p.type === type)
      .map((p) => p.text)
      .join('');
  return { text: join('text'), reasoning: join('reasoning'), pieces };
}

/** [content as streamed, expected text, expected reasoning] */
const cases: Array<[string, string, string]> = [
  ['<think>plan the fix</think>\n\nThe fix is done.', 'The fix is done.', 'plan the fix'],
  [' \n<think>\nstep one\n</think>answer', 'answer', '\nstep one\n'],
  ['<think></think>\n\nanswer, <think>literal</think> stays', 'answer, <think>literal</think> stays', ''],
  ['<think>a < b, and </thinking> is not the tag</think>ok', 'ok', 'a < b, and </thinking> is not the tag'],
  ['<think>cut off at the output limit, still reason', '', 'cut off at the output limit, still reason'],
  ['<think>cut inside the close tag</thi', '', 'cut inside the close tag</thi'],
  [
    'Sure: <think>mid-answer tags are text</think> done',
    'Sure: <think>mid-answer tags are text</think> done',
    '',
  ],
  ['no tags at all, just < and > signs', 'no tags at all, just < and > signs', ''],
  ['<thinking>another tag</thinking>', '<thinking>another tag</thinking>', ''],
  ['reasoning the template opened</think>answer', 'reasoning the template opened</think>answer', ''],
  ['<thin', '<thin', ''],
  ['  \n', '  \n', ''],
];

describe('think tag splitter', () => {
  it.each(cases)('splits %j the same at every one and every two split points', (input, text, reasoning) => {
    expect(run([input])).toMatchObject({ text, reasoning });
    for (let i = 0; i <= input.length; i++) {
      expect(run([input.slice(0, i), input.slice(i)]), `split at ${i}`).toMatchObject({ text, reasoning });
      for (let j = i; j <= input.length; j++) {
        const parts = [input.slice(0, i), input.slice(i, j), input.slice(j)];
        expect(run(parts), `split at ${i}, ${j}`).toMatchObject({ text, reasoning });
      }
    }
    const byChar = run([...input]);
    expect(byChar).toMatchObject({ text, reasoning });
    expect(byChar.pieces.every((p) => p.text.length > 0)).toBe(true);
  });

  it('streams live: it holds back only what could still be a tag', () => {
    const splitter = new ThinkTagSplitter();
    expect(splitter.push('<thi')).toEqual([]);
    expect(splitter.push('nk>step')).toEqual([{ type: 'reasoning', text: 'step' }]);
    expect(splitter.push(' two</th')).toEqual([{ type: 'reasoning', text: ' two' }]);
    expect(splitter.push('ink>\n')).toEqual([]);
    expect(splitter.push('Answer')).toEqual([{ type: 'text', text: 'Answer' }]);
    expect(splitter.end()).toEqual([]);
    const plain = new ThinkTagSplitter();
    expect(plain.push('Hello')).toEqual([{ type: 'text', text: 'Hello' }]);
    expect(plain.push(' <think>')).toEqual([{ type: 'text', text: ' <think>' }]);
  });
});

describe('reasoning whose opening tag the template sent', () => {
  it('takes everything before a bare </think> as reasoning', () => {
    expect(splitUnopenedThink('the bug is in a.ts</think>\n\nFixed a.ts.')).toEqual({
      reasoning: 'the bug is in a.ts',
      text: 'Fixed a.ts.',
    });
  });

  it('leaves text without one, or with a literal block, alone', () => {
    expect(splitUnopenedThink('Fixed a.ts.')).toBeUndefined();
    expect(splitUnopenedThink('Use <think>x</think> tags')).toBeUndefined();
  });
});

describe('finish reasons', () => {
  it('normalizes the words servers use', () => {
    expect(normalizeFinishReason('length', false)).toBe('length');
    expect(normalizeFinishReason('max_tokens', false)).toBe('length');
    expect(normalizeFinishReason('length', true)).toBe('length');
    expect(normalizeFinishReason('stop', true)).toBe('tool_calls');
    expect(normalizeFinishReason('function_call', true)).toBe('tool_calls');
    expect(normalizeFinishReason('stop', false)).toBe('stop');
    expect(normalizeFinishReason(undefined, false)).toBe('stop');
    expect(normalizeFinishReason(null, true)).toBe('tool_calls');
    expect(normalizeFinishReason('content_filter', false)).toBe('content_filter');
    expect(normalizeFinishReason('unload', false)).toBe('unload');
  });
});
