/**
 * Markdown for a person at a terminal (a one-shot answer, a fix run's rationale), drawn by the
 * renderer chat uses (pi-tui's, over marked). Text is made inert before the renderer sees it, so the
 * only escape sequences that reach the terminal are the theme's own; links always show their address
 * (no OSC 8 hyperlink hides where one goes). `--json` and pipes never come here: they keep the text.
 */
import { Markdown, type MarkdownTheme, setCapabilities } from '@mariozechner/pi-tui';
import { inert } from '../term/inert.js';

const plain = process.env.NO_COLOR !== undefined || process.env.TERM === 'dumb';
const sgr = (open: number, close: number) => (s: string) => (plain ? s : `\x1b[${open}m${s}\x1b[${close}m`);
const bold = sgr(1, 22);
const dim = sgr(2, 22);
const italic = sgr(3, 23);
const cyan = sgr(36, 39);
const yellow = sgr(33, 39);

const theme: MarkdownTheme = {
  heading: (s) => bold(cyan(s)),
  link: cyan,
  linkUrl: dim,
  code: yellow,
  codeBlock: (s) => s,
  codeBlockBorder: dim,
  quote: italic,
  quoteBorder: dim,
  hr: dim,
  listBullet: cyan,
  bold,
  italic,
  strikethrough: (s) => s,
  underline: (s) => s,
};

// a link's address is printed after its text, never hidden inside an OSC 8 sequence
setCapabilities({ images: null, trueColor: false, hyperlinks: false });

/** The terminal's width for rendering, within reason. */
function columns(out: NodeJS.WriteStream): number {
  return Math.max(20, Math.min(out.columns || 80, 160));
}

/** Finished Markdown drawn for a terminal `width` columns wide, one string ending in a newline ('' for blank text). */
export function renderMarkdown(text: string, width = columns(process.stdout)): string {
  if (!text.trim()) return '';
  const lines = new Markdown(inert(text), 0, 0, theme).render(width);
  // the renderer pads each line to the width: a copied answer should not carry the spaces
  return `${lines.map((l) => l.replace(/ +$/, '')).join('\n')}\n`;
}

/**
 * An answer rendered as it streams: each finished block (a paragraph, a list, a closed code fence)
 * is drawn once the next block begins, the rest when the message ends.
 */
export class MarkdownStream {
  private buffer = '';
  private blocks = 0;
  constructor(private readonly out: NodeJS.WriteStream) {}

  write(text: string): void {
    this.buffer += text;
    const cut = blockEnd(this.buffer);
    if (cut <= 0) return;
    this.draw(this.buffer.slice(0, cut));
    this.buffer = this.buffer.slice(cut);
  }

  /** The message is complete: draw what is left. */
  end(): void {
    this.draw(this.buffer);
    this.buffer = '';
    this.blocks = 0;
  }

  private draw(block: string): void {
    const shown = renderMarkdown(block.replace(/\n+$/, ''), columns(this.out));
    if (!shown) return;
    this.out.write(this.blocks++ ? `\n${shown}` : shown);
  }
}

const FENCE = /^ {0,3}(`{3,}|~{3,})/;

/**
 * Where the finished blocks of `text` end: after the last blank line (outside a code fence) that a
 * new unindented line follows, so a list item's indented continuation stays with its list. 0 when none.
 */
function blockEnd(text: string): number {
  let fence: string | undefined;
  let cut = 0;
  let pos = 0;
  let blank = false;
  for (const line of text.split('\n')) {
    const start = pos;
    pos += line.length + 1;
    const open = FENCE.exec(line)?.[1];
    if (fence === undefined && blank && line !== '' && !/^\s/.test(line)) cut = start;
    if (open !== undefined) {
      if (fence === undefined) fence = open;
      else if (open[0] === fence[0] && open.length >= fence.length) fence = undefined;
    }
    blank = fence === undefined && line.trim() === '';
  }
  return cut;
}
