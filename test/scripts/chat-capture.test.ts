/** The chat captures in docs/screenshots: the ANSI renderer draws what tmux kept, and the committed capture shows the session. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
// @ts-expect-error: a plain ES module script, no types
import { ansiToSvg, parseAnsi } from '../../scripts/chat-capture.mjs';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
type Cell = { ch: string; style: { fg: string | null; bg: string | null; bold: boolean; dim: boolean } };

describe('scripts/chat-capture.mjs', () => {
  it('reads colours (16, 256, true colour), attributes and resets, and keeps indentation and markup as text', () => {
    const rows = parseAnsi(
      '\x1b[1m\x1b[36mhi\x1b[0m  x\n\x1b[38;5;196mr\x1b[48;2;0;128;255mb\x1b[49m\x1b[39m\x1b]8;;http://x\x07<&>\n',
    ) as Cell[][];
    expect(rows).toHaveLength(2);
    expect(rows[0]?.map((c) => c.ch).join('')).toBe('hi  x');
    expect(rows[0]?.[0]?.style).toMatchObject({ fg: '#11a8cd', bold: true });
    expect(rows[0]?.[4]?.style).toMatchObject({ fg: null, bold: false });
    expect(rows[1]?.[0]?.style.fg).toBe('#ff0000');
    expect(rows[1]?.[1]?.style.bg).toBe('#0080ff');
    // the OSC link is dropped, not printed
    expect(rows[1]?.map((c) => c.ch).join('')).toBe('rb<&>');

    const svg = ansiToSvg('  \x1b[33mcode\x1b[39m <b>\n', { cols: 20 }) as string;
    expect(svg).toMatch(/^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"/);
    // each run sits at its column; spaces stay (no-break), markup is text
    expect(svg).toContain('<tspan x="28.8" fill="#e5e510">code</tspan>');
    expect(svg).toContain('\u00a0&lt;b&gt;');
    expect(svg).not.toContain('<b>');
  });

  it('the committed capture is the session the README promises: the question asked, the command allowed, a code block, ttft and tok/s', () => {
    const text = readFileSync(join(ROOT, 'docs/screenshots/chat.txt'), 'utf8');
    // biome-ignore lint/suspicious/noControlCharactersInRegex: the capture's colour escapes, taken out
    const plain = text.replace(/\x1b\[[0-9;]*m/g, '');
    expect(plain).toContain('› Why does npm test fail?');
    expect(plain).toMatch(/shell \$ npm test\n\s+└ allowed · exit 1/);
    expect(plain).toContain('```js');
    expect(plain).toMatch(/ttft \d+\.\d s · \d+ tok\/s/);
    expect(text).toContain('\x1b[');
    expect(readFileSync(join(ROOT, 'docs/screenshots/chat-approval.txt'), 'utf8')).toContain('keel asks');
    const svg = readFileSync(join(ROOT, 'docs/screenshots/chat.svg'), 'utf8');
    expect(svg).toContain('tok/s');
    expect(readFileSync(join(ROOT, 'README.md'), 'utf8')).toContain('(docs/screenshots/chat.svg)');
  });
});
