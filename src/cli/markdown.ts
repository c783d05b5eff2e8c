/**
 * Markdown for a person at a terminal (a one-shot answer, a fix run's rationale), drawn by the
 * renderer chat uses (pi-tui's, over marked), with chat's syntax colours for a fenced block that names
 * a language (src/term/highlight.ts; none under NO_COLOR). Text is made inert before the renderer sees it, so the
 * only escape sequences that reach the terminal are the theme's own; links always show their address
 * (no OSC 8 hyperlink hides where one goes). `--json` and pipes never come here: they keep the text.
 */
import { Markdown, type MarkdownTheme, setCapabilities } from '@mariozechner/pi-tui';
import { highlighterLoaded, highlightLines, languageOf, loadHighlighter } from '../term/highlight.js';
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
  // a fence naming a language keel colours, once highlight.js has loaded (the stream below waits for it)
  ...(plain ? {} : { highlightCode: (code, lang) => highlightLines(code, lang) ?? code.split('\n') }),
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
 * is drawn once the next block begins, the rest when the message ends. The first fence naming a language
 * keel colours starts loading highlight.js (while the answer still streams); a block that needs it before
 * it has loaded is held, with the blocks after it, until it has (`drained` waits for that).
 */
export class MarkdownStream {
  private buffer = '';
  private blocks = 0;
  private readonly held: (string | typeof END)[] = [];
  private loading: Promise<void> | undefined;
  constructor(private readonly out: NodeJS.WriteStream) {}

  write(text: string): void {
    this.buffer += text;
    if (!plain && !this.loading && colours(this.buffer)) this.loading = this.load();
    const cut = blockEnd(this.buffer);
    if (cut <= 0) return;
    this.draw(this.buffer.slice(0, cut));
    this.buffer = this.buffer.slice(cut);
  }

  /** The message is complete: draw what is left. */
  end(): void {
    this.draw(this.buffer);
    this.buffer = '';
    this.held.push(END);
    this.flush();
  }

  /** Every block is on the screen (after highlight.js loaded, when a block waited for it). */
  async drained(): Promise<void> {
    await this.loading;
  }

  private async load(): Promise<void> {
    try {
      await loadHighlighter();
    } catch {
      // no colours then: the held blocks are drawn plain
    }
    this.flush(true);
  }

  private draw(block: string): void {
    this.held.push(block.replace(/\n+$/, ''));
    this.flush();
  }

  /** Draw the held blocks in order, up to one that needs colours not loaded yet (unless `anyway`). */
  private flush(anyway = false): void {
    while (this.held.length) {
      const block = this.held[0] as string | typeof END;
      if (block === END) this.blocks = 0;
      else {
        if (!anyway && !plain && !highlighterLoaded() && colours(block)) return;
        const shown = renderMarkdown(block, columns(this.out));
        if (shown) this.out.write(this.blocks++ ? `\n${shown}` : shown);
      }
      this.held.shift();
    }
  }
}

/** Where a message ended among the held blocks: the next message's first block has no blank line before it. */
const END = Symbol('end');

/** Whether `text` opens a fence naming a language keel colours. */
function colours(text: string): boolean {
  for (const m of text.matchAll(/^ {0,3}(?:`{3,}|~{3,})[ \t]*([^\s`]+)/gm)) if (languageOf(m[1])) return true;
  return false;
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
