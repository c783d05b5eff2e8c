#!/usr/bin/env node
/**
 * Regenerate the chat captures in docs/screenshots/: the real `keel chat` in a tmux pane (120x32) against
 * the scripted model, in a temporary copy of the `stats` fixture: a question, a command keel asks about
 * (`approvals = "shell"`) and the person allows, and an answer with a code block, with the status line's
 * context, cost, time to first token and tokens per second. Each capture is `tmux capture-pane -e -p`
 * saved as text (`chat-*.txt`, the ANSI escapes kept: `cat` shows it in colour) and rendered as SVG
 * (`chat-*.svg`) by the small ANSI renderer below (no dependency). Run after `npm run build`:
 *
 *   node scripts/chat-capture.mjs           # needs tmux; scripts/screenshots.mjs runs it too
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { demoRepo } from './demo-repo.mjs';

const ROOT = dirname(dirname(fileURLToPath(import.meta.url)));
const COLS = 120;
const ROWS = 32;

// xterm's 16 colours (the VS Code dark palette's), then the 6x6x6 cube and the grey ramp of the 256
const BASE16 = [
  '#000000',
  '#cd3131',
  '#0dbc79',
  '#e5e510',
  '#2472c8',
  '#bc3fbc',
  '#11a8cd',
  '#e5e5e5',
  '#666666',
  '#f14c4c',
  '#23d18b',
  '#f5f543',
  '#3b8eea',
  '#d670d6',
  '#29b8db',
  '#ffffff',
];
const FG = '#d4d4d4';
const BG = '#1e1e1e';

function color256(n) {
  if (n < 16) return BASE16[n];
  if (n < 232) {
    const i = n - 16;
    const level = (v) => (v === 0 ? 0 : 55 + v * 40);
    const hex = (v) => level(v).toString(16).padStart(2, '0');
    return `#${hex(Math.floor(i / 36))}${hex(Math.floor(i / 6) % 6)}${hex(i % 6)}`;
  }
  const grey = (8 + (n - 232) * 10).toString(16).padStart(2, '0');
  return `#${grey}${grey}${grey}`;
}

/** Apply one SGR sequence's parameters to a style. */
function sgr(style, params) {
  const p = params.length ? params : [0];
  for (let i = 0; i < p.length; i++) {
    const n = p[i];
    if (n === 0)
      Object.assign(style, {
        fg: null,
        bg: null,
        bold: false,
        dim: false,
        italic: false,
        underline: false,
        inverse: false,
      });
    else if (n === 1) style.bold = true;
    else if (n === 2) style.dim = true;
    else if (n === 3) style.italic = true;
    else if (n === 4) style.underline = true;
    else if (n === 7) style.inverse = true;
    else if (n === 22) style.bold = style.dim = false;
    else if (n === 23) style.italic = false;
    else if (n === 24) style.underline = false;
    else if (n === 27) style.inverse = false;
    else if (n >= 30 && n <= 37) style.fg = BASE16[n - 30];
    else if (n === 39) style.fg = null;
    else if (n >= 40 && n <= 47) style.bg = BASE16[n - 40];
    else if (n === 49) style.bg = null;
    else if (n >= 90 && n <= 97) style.fg = BASE16[n - 90 + 8];
    else if (n >= 100 && n <= 107) style.bg = BASE16[n - 100 + 8];
    else if (n === 38 || n === 48) {
      let value = null;
      if (p[i + 1] === 5) {
        value = color256(p[i + 2] ?? 0);
        i += 2;
      } else if (p[i + 1] === 2) {
        const [r, g, b] = [p[i + 2] ?? 0, p[i + 3] ?? 0, p[i + 4] ?? 0];
        value = `#${[r, g, b].map((v) => v.toString(16).padStart(2, '0')).join('')}`;
        i += 4;
      }
      if (n === 38) style.fg = value;
      else style.bg = value;
    }
  }
}

/** The screen as rows of cells ({ch, style}), from capture-pane -e's text (SGR only; other sequences are dropped). */
export function parseAnsi(text) {
  const style = {
    fg: null,
    bg: null,
    bold: false,
    dim: false,
    italic: false,
    underline: false,
    inverse: false,
  };
  const rows = [];
  for (const line of text.replace(/\n$/, '').split('\n')) {
    const row = [];
    for (let i = 0; i < line.length; ) {
      if (line[i] === '\x1b') {
        // biome-ignore lint/suspicious/noControlCharactersInRegex: reading escape sequences is the point
        const m = /^\x1b\[([0-9;:]*)([A-Za-z])/.exec(line.slice(i));
        if (m) {
          if (m[2] === 'm') sgr(style, m[1] ? m[1].split(/[;:]/).map((v) => Number(v) || 0) : []);
          i += m[0].length;
          continue;
        }
        // an OSC or another sequence: skip to its end
        // biome-ignore lint/suspicious/noControlCharactersInRegex: reading escape sequences is the point
        const osc = /^\x1b\][^\x07\x1b]*(\x07|\x1b\\)/.exec(line.slice(i));
        i += osc ? osc[0].length : 1;
        continue;
      }
      const ch = String.fromCodePoint(line.codePointAt(i));
      row.push({ ch, style: { ...style } });
      i += ch.length;
    }
    rows.push(row);
  }
  return rows;
}

const esc = (s) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** An SVG of the screen: a monospace grid, each run of same-styled cells one <tspan> at its column. */
export function ansiToSvg(text, { cols = COLS, title = 'keel chat' } = {}) {
  const rows = parseAnsi(text);
  const cw = 8.4;
  const lh = 18;
  const pad = 12;
  const width = Math.ceil(cols * cw + pad * 2);
  const height = rows.length * lh + pad * 2;
  const out = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img" aria-label="${esc(title)}">`,
    `<title>${esc(title)}</title>`,
    `<rect width="100%" height="100%" rx="6" fill="${BG}"/>`,
    `<g font-family="'DejaVu Sans Mono', Menlo, Consolas, monospace" font-size="14" xml:space="preserve" style="white-space: pre">`,
  ];
  rows.forEach((row, r) => {
    const y = pad + r * lh;
    // runs of cells with one style
    const runs = [];
    for (const [c, cell] of row.entries()) {
      const last = runs.at(-1);
      if (last && JSON.stringify(last.style) === JSON.stringify(cell.style)) last.text += cell.ch;
      else runs.push({ col: c, text: cell.ch, style: cell.style });
    }
    const spans = [];
    for (const run of runs) {
      const s = run.style;
      let fg = s.fg ?? FG;
      let bg = s.bg;
      if (s.inverse) [fg, bg] = [bg ?? BG, fg];
      const x = (pad + run.col * cw).toFixed(1);
      if (bg)
        out.push(
          `<rect x="${x}" y="${y}" width="${(run.text.length * cw).toFixed(1)}" height="${lh}" fill="${bg}"/>`,
        );
      if (!run.text.trim()) continue;
      const attrs = [`x="${x}"`, `fill="${fg}"`];
      if (s.bold) attrs.push('font-weight="bold"');
      if (s.dim) attrs.push('fill-opacity="0.6"');
      if (s.italic) attrs.push('font-style="italic"');
      if (s.underline) attrs.push('text-decoration="underline"');
      // spaces as no-break spaces: an SVG renderer collapses runs of plain ones, and indentation is content
      spans.push(`<tspan ${attrs.join(' ')}>${esc(run.text).replace(/ /g, '\u00a0')}</tspan>`);
    }
    if (spans.length) out.push(`<text y="${y + 14}">${spans.join('')}</text>`);
  });
  out.push('</g>', '</svg>');
  return `${out.join('\n')}\n`;
}

/** Run the session in tmux and write docs/screenshots/chat-*.{txt,svg}; returns the files written. */
export async function captureChat(out = join(ROOT, 'docs', 'screenshots')) {
  if (!existsSync(join(ROOT, 'dist', 'cli', 'main.js'))) throw new Error('run npm run build first');
  const { startScriptServer } = await import('../dist/model/script-server.js');
  const temp = mkdtempSync(join(tmpdir(), 'keel-chat-shots-'));
  const repo = join(temp, 'stats');
  const home = join(temp, 'home');
  demoRepo(repo, temp);
  mkdirSync(home);
  // keel asks before every command; the demo model is priced
  writeFileSync(
    join(home, 'config.toml'),
    'approvals = "shell"\n[pricing.demo]\ninput_per_mtok = 2.0\noutput_per_mtok = 10.0\n',
  );

  const answer = [
    'The tests fail on `mean()`: it divides by one too many.',
    '',
    '```js',
    'export function mean(values) {',
    '  if (values.length === 0) return 0;',
    '  return sum(values) / values.length; // was values.length + 1',
    '}',
    '```',
    '',
    'With that change `mean([2, 4, 6])` is **4**.',
  ].join('\n');
  const model = await startScriptServer({
    turns: [
      {
        text: "I'll run the tests first.",
        tool_calls: [{ name: 'shell', arguments: { command: 'npm test' } }],
        usage: { prompt_tokens: 2140, completion_tokens: 38 },
        delay_ms: 420,
        chunk_delay_ms: 40,
      },
      {
        text: answer,
        usage: { prompt_tokens: 2960, completion_tokens: 118 },
        delay_ms: 380,
        chunk_size: 12,
        chunk_delay_ms: 45,
      },
    ],
  });
  const socket = `keel-chat-shots-${process.pid}`;
  const tmux = (...args) => execFileSync('tmux', ['-L', socket, ...args], { encoding: 'utf8' });
  const quote = (s) => `'${s.replace(/'/g, "'\\''")}'`;
  const env = {
    PATH: process.env.PATH,
    HOME: home,
    KEEL_HOME: home,
    LANG: 'C.UTF-8',
    TERM: 'xterm-256color',
  };
  const command = `env -i ${Object.entries(env)
    .map(([k, v]) => `${k}=${quote(v)}`)
    .join(
      ' ',
    )} ${quote(process.execPath)} ${quote(join(ROOT, 'bin', 'keel.js'))} chat --mode edit --provider openai --base-url ${quote(model.url)} --model demo; sleep 600`;
  const screen = (escapes) => tmux('capture-pane', '-p', ...(escapes ? ['-e'] : []), '-t', 'chat');
  const waitFor = async (re) => {
    for (let i = 0; i < 600; i++) {
      if (re.test(screen(false))) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`the chat never showed ${re}:\n${screen(false)}`);
  };
  const written = [];
  const save = (name, title) => {
    // the rows below the status line are empty: left out
    // biome-ignore lint/suspicious/noControlCharactersInRegex: trailing empty rows, escapes and all
    const text = `${screen(true).replace(/(\n(\x1b\[[0-9;]*m)*[ \t]*)+$/, '')}\n`;
    mkdirSync(out, { recursive: true });
    for (const [file, body] of [
      [`${name}.txt`, text],
      [`${name}.svg`, ansiToSvg(text, { title })],
    ]) {
      writeFileSync(join(out, file), body);
      written.push(join(out, file));
      console.log(`${join(out, file)}: ${Buffer.byteLength(body)} bytes`);
    }
  };
  try {
    tmux('new-session', '-d', '-x', String(COLS), '-y', String(ROWS), '-s', 'chat', '-c', repo, command);
    await waitFor(/ctx \d/);
    tmux('send-keys', '-t', 'chat', '-l', 'Why does npm test fail?');
    tmux('send-keys', '-t', 'chat', 'Enter');
    await waitFor(/then Enter/);
    save('chat-approval', 'keel chat asks before running npm test');
    tmux('send-keys', '-t', 'chat', '-l', 'y');
    tmux('send-keys', '-t', 'chat', 'Enter');
    await waitFor(/this turn: 2 rounds/);
    save('chat', 'keel chat: the command allowed, its outcome, an answer with a code block, the status line');
  } finally {
    try {
      tmux('kill-server');
    } catch {
      // already gone
    }
    await model.close();
    rmSync(temp, { recursive: true, force: true });
  }
  return written;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await captureChat();
