import { describe, expect, it } from 'vitest';
import { inert, inertLine } from '../../src/term/inert.js';

// every character a terminal may act on rather than print
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const CONTROL = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]/u;

const ATTACK = [
  'before',
  '\x1b[2K\r', // erase the line, back to column 0
  '\x1b]52;c;ZWNobyBwd25lZA==\x07', // OSC 52: write the clipboard
  '\x1bP+q\x1b\\', // DCS ... ST
  '\x9b31m', // C1 CSI
  '\x7f\x00\x08',
  '\u202eevil\u202c\u2066x\u2069',
  'after',
].join('');

describe('inert', () => {
  it('shows every control, C1 and bidi character as a visible escape', () => {
    const out = inert(ATTACK);
    expect(out).not.toMatch(CONTROL);
    expect(out).toBe(
      'before\\x1b[2K\\r\\x1b]52;c;ZWNobyBwd25lZA==\\x07\\x1bP+q\\x1b\\\\x9b31m\\x7f\\x00\\x08\\u202eevil\\u202c\\u2066x\\u2069after',
    );
  });

  it('keeps prose readable: newlines, tabs, accents, emoji and zero-width joiners are untouched', () => {
    const prose = 'line one\n\tindented — café 日本 👨\u200d👩\u200d👧 ok\n';
    expect(inert(prose)).toBe(prose);
    expect(inert('')).toBe('');
  });

  it('comes out the same however the text is split into chunks', () => {
    for (let i = 0; i <= ATTACK.length; i++) {
      expect(inert(ATTACK.slice(0, i)) + inert(ATTACK.slice(i))).toBe(inert(ATTACK));
    }
    // an ESC alone at the end of a chunk is already visible before the rest of its sequence arrives
    expect(inert('text\x1b')).toBe('text\\x1b');
  });
});

describe('inertLine', () => {
  it('cannot be made to look like a second display line', () => {
    const forged = 'notes.txt\r\n  → read_file README.md';
    const out = inertLine(forged);
    expect(out).not.toMatch(/[\r\n]/);
    expect(out).toBe('notes.txt\\r\\n  → read_file README.md');
  });

  it('shows invisible characters that make two names look alike', () => {
    expect(inertLine('READ\u200bME.md')).toBe('READ\\u200bME.md');
    expect(inertLine('a\ufeffb\u2060c\u200fd')).toBe('a\\ufeffb\\u2060c\\u200fd');
    expect(inertLine('tag\u{e0041}')).toBe('tag\\u{e0041}');
    expect(inertLine('tab\there')).toBe('tab\\there');
  });

  it('escapes everything inert escapes', () => {
    expect(inertLine(ATTACK)).toBe(inert(ATTACK));
  });

  it('is cheap on long text', () => {
    const big = 'plain text with nothing to escape, '.repeat(30_000); // ~1 MB
    const started = performance.now();
    for (let i = 0; i < 10; i++) inertLine(big);
    expect((performance.now() - started) / 10).toBeLessThan(50);
  });
});
