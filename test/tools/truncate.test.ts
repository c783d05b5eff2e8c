import { describe, expect, it } from 'vitest';
import { countDiffLines } from '../../src/tools/file-change.js';
import { clipLine, LIMITS, truncateHead, truncateMiddle } from '../../src/tools/truncate.js';

const numbered = (n: number) => Array.from({ length: n }, (_, i) => `line ${i + 1}`).join('\n');

describe('truncateHead', () => {
  it('leaves short output alone', () => {
    expect(truncateHead('a\nb', 'narrow it')).toBe('a\nb');
  });

  it('cuts at the line cap and says how many lines and how to get the rest', () => {
    const out = truncateHead(numbered(10), 'narrow the pattern', { maxLines: 2 });
    expect(out).toBe(
      'line 1\nline 2\n[truncated: 8 more lines not shown (2-line limit); narrow the pattern]',
    );
  });

  it('cuts at the byte cap and names it', () => {
    const out = truncateHead(numbered(1000).replaceAll('line', 'x'.repeat(100)), 'narrow the path');
    expect(Buffer.byteLength(out)).toBeLessThan(LIMITS.bytes + 200);
    expect(out).toMatch(/\[truncated: \d+ more lines not shown \(50 KB limit\); narrow the path\]$/);
  });

  it('cuts long lines with a marker', () => {
    expect(clipLine('x'.repeat(10), 4)).toBe('xxxx… [line cut at 4 chars]');
    const out = truncateHead('y'.repeat(5000), 'hint');
    expect(out).toBe(`${'y'.repeat(LIMITS.lineChars)}… [line cut at ${LIMITS.lineChars} chars]`);
  });
});

describe('truncateMiddle', () => {
  it('keeps the head and the tail and counts the omitted bytes', () => {
    const text = numbered(10_000);
    const out = truncateMiddle(text, { maxLines: 10 });
    const lines = out.split('\n');
    expect(lines.slice(0, 5)).toEqual(['line 1', 'line 2', 'line 3', 'line 4', 'line 5']);
    expect(lines.at(-1)).toBe('line 10000');
    const marker = lines[5] ?? '';
    const omitted = Number(/\[\.\.\. (\d+) bytes omitted \.\.\.\] \(9990 lines\)/.exec(marker)?.[1]);
    // the omitted middle excludes the two newlines that join it to the head and the tail
    const kept =
      Buffer.byteLength(lines.slice(0, 5).join('\n')) + Buffer.byteLength(lines.slice(6).join('\n')) + 2;
    expect(omitted).toBe(Buffer.byteLength(text) - kept);
  });

  it('leaves output within the caps alone', () => {
    expect(truncateMiddle('ok\n')).toBe('ok\n');
  });
});

describe('countDiffLines', () => {
  it('counts added and removed lines around a change', () => {
    expect(countDiffLines('a\nb\nc\n', 'a\nB\nB2\nc\n')).toEqual({ added: 2, removed: 1 });
    expect(countDiffLines('', 'a\nb\n')).toEqual({ added: 2, removed: 0 });
    expect(countDiffLines('same', 'same')).toEqual({ added: 0, removed: 0 });
  });
});
