import { describe, expect, it } from 'vitest';
import { parseAnswer } from '../../src/cli/ask-person.js';
import { AnswerStream, describeOutcome } from '../../src/cli/render.js';

/** Stream `text` in the given chunk sizes, end the message with what keel kept, and return what was shown. */
function shown(text: string, kept: string, sizes: number[]): string {
  let out = '';
  const stream = new AnswerStream((s) => {
    out += s;
  });
  let at = 0;
  for (let i = 0; at < text.length; i++) {
    const n = sizes[i % sizes.length] ?? 1;
    stream.push(text.slice(at, at + n));
    at += n;
  }
  stream.end(kept);
  return out;
}

const SPLITS = [[1], [2], [3], [7], [1, 5, 2], [1000]];

describe('the answer as it streams', () => {
  it.each(SPLITS)('streams ordinary text whole, however it is split (%j)', (...sizes) => {
    const text = 'Here is `code` and a list:\n- [x] done\n```ts\nconst a = 1;\n```\nBye <b>!\n';
    expect(shown(text, text, sizes)).toBe(text);
  });

  it.each(SPLITS)('never shows a tool call written as text (%j)', (...sizes) => {
    const call = '<tool_call>{"name":"read_file","arguments":{"path":"a.ts"}}</tool_call>';
    for (const [text, kept] of [
      [`Let me look.\n${call}`, 'Let me look.\n'],
      [`${call}\nDone.`, '\nDone.'],
      ['```json\n{"name": "read_file", "arguments": {"path": "a"}}\n```', ''],
      ['{"name": "read_file", "arguments": {"path": "a"}}', ''],
    ]) {
      const out = shown(text as string, kept as string, sizes);
      expect(out).not.toContain('read_file');
      expect(out.trim()).toBe((kept as string).trim());
    }
  });

  it('makes escape sequences inert, even split across chunks', () => {
    const out = shown('a\x1b]52;c;aGk=\x07b\x1b[2J', 'a\x1b]52;c;aGk=\x07b\x1b[2J', [1]);
    expect(out).not.toContain('\x1b');
    expect(out).toContain('\\x1b]52');
  });
});

describe('outcomes and answers', () => {
  const result = (over: object) => ({
    type: 'tool_result' as const,
    call_id: 'c',
    tool: 'shell',
    output: '',
    is_error: false,
    files_changed: [],
    diff_lines: 0,
    duration_ms: 0,
    ...over,
  });
  it('says what a call came to', () => {
    expect(describeOutcome(result({ outcome: { exit_code: 2 }, is_error: true }))).toBe('exit 2');
    expect(describeOutcome(result({ outcome: { tests: { passed: 3, failed: 1, skipped: 0 } } }))).toBe(
      '3 passed, 1 failed',
    );
    expect(describeOutcome(result({ outcome: { added: 4, removed: 1 }, duration_ms: 1500 }))).toBe(
      '+4 -1 · 1.5 s',
    );
    expect(describeOutcome(result({ is_error: true, output: 'Error: no such file a.ts' }))).toBe(
      'no such file a.ts',
    );
  });

  it('reads y, a, n, nothing and a reason', () => {
    expect(parseAnswer('y')).toEqual({ allow: true });
    expect(parseAnswer('Always')).toEqual({ allow: true, always: true });
    // "always" is never a single key: `a` is a no, told to the model
    expect(parseAnswer('a')).toEqual({ allow: false, message: 'a' });
    expect(parseAnswer('')).toEqual({ allow: false });
    expect(parseAnswer('n')).toEqual({ allow: false });
    expect(parseAnswer('use a test instead')).toEqual({ allow: false, message: 'use a test instead' });
  });
});
