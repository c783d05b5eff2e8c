/**
 * Syntax colours for a fenced code block at a terminal. highlight.js's core and a few of its languages
 * (the ones the web page bundles too) are loaded on first need, so a start that shows no code pays
 * nothing; until they are loaded a block is shown plain, and `whenHighlighterLoads` says when to draw again.
 *
 * Only foreground colours from a fixed palette are written, each piece of text opened and closed on its
 * own line. highlight.js answers in HTML: its spans become colours, its entities text again, and that
 * text is made inert once more, so no escape sequence in the code (nor any in the info string, which only
 * ever picks a language by exact name) reaches the terminal.
 */
import { inert } from './inert.js';

/** The few parts of highlight.js used here (its own types reference the DOM library; keel's Node code does without). */
interface Highlighter {
  newInstance(): Highlighter;
  registerLanguage(name: string, language: unknown): void;
  highlight(code: string, options: { language: string; ignoreIllegals: boolean }): { value: string };
}
type Module<T> = { default: T };

/** Info-string names (lower-cased) → the language registered under that name. */
const LANGUAGES: Record<string, string> = {
  ts: 'typescript',
  tsx: 'typescript',
  mts: 'typescript',
  cts: 'typescript',
  typescript: 'typescript',
  js: 'javascript',
  jsx: 'javascript',
  mjs: 'javascript',
  cjs: 'javascript',
  javascript: 'javascript',
  node: 'javascript',
  py: 'python',
  python: 'python',
  python3: 'python',
  sh: 'bash',
  bash: 'bash',
  shell: 'bash',
  zsh: 'bash',
  console: 'shell',
  shellsession: 'shell',
  json: 'json',
  jsonc: 'json',
  diff: 'diff',
  patch: 'diff',
  go: 'go',
  golang: 'go',
  rust: 'rust',
  rs: 'rust',
};

/** highlight.js's scopes → SGR foreground codes (closed by 39). A scope not listed keeps its parent's colour. */
const PALETTE: Record<string, number> = {
  keyword: 35, // magenta
  built_in: 36, // cyan
  type: 36,
  literal: 36,
  number: 33, // yellow
  string: 32, // green
  regexp: 31, // red
  symbol: 33,
  comment: 90, // bright black
  doc: 90,
  meta: 90,
  title: 34, // blue
  'title.function': 34,
  'title.class': 33,
  attr: 36,
  attribute: 36,
  variable: 31,
  'template-variable': 31,
  subst: 39, // an interpolation inside a string is code again
  addition: 32,
  deletion: 31,
  section: 36,
};

let api: Highlighter | undefined;
let loading: Promise<void> | undefined;
const waiting: (() => void)[] = [];
/** A streamed answer redraws its blocks on every chunk: the last results are kept. */
const memo = new Map<string, string[]>();
const MEMO = 64;

/** Load highlight.js (once); resolves when blocks can be coloured. */
export function loadHighlighter(): Promise<void> {
  loading ??= (async () => {
    // each path is written as a sum so TypeScript leaves it unresolved (and its DOM types out), while
    // esbuild folds it back into one string and bundles the module into a chunk of its own
    const [core, ts, js, py, bash, shell, json, diff, go, rust] = (await Promise.all([
      import('highlight.js/lib/' + 'core'),
      import('highlight.js/lib/languages/' + 'typescript'),
      import('highlight.js/lib/languages/' + 'javascript'),
      import('highlight.js/lib/languages/' + 'python'),
      import('highlight.js/lib/languages/' + 'bash'),
      import('highlight.js/lib/languages/' + 'shell'),
      import('highlight.js/lib/languages/' + 'json'),
      import('highlight.js/lib/languages/' + 'diff'),
      import('highlight.js/lib/languages/' + 'go'),
      import('highlight.js/lib/languages/' + 'rust'),
    ])) as [Module<Highlighter>, ...Module<unknown>[]];
    const hljs = core.default.newInstance();
    const langs = { typescript: ts, javascript: js, python: py, bash, shell, json, diff, go, rust };
    for (const [name, mod] of Object.entries(langs)) hljs.registerLanguage(name, mod?.default);
    api = hljs;
    for (const done of waiting.splice(0)) done();
  })();
  return loading;
}

/** Whether blocks can be coloured now (highlight.js has loaded). */
export function highlighterLoaded(): boolean {
  return api !== undefined;
}

/** Call `redraw` once, when highlight.js has loaded (right away if it already has). */
export function whenHighlighterLoads(redraw: () => void): void {
  if (api) redraw();
  else waiting.push(redraw);
}

/** The language an info string names, or undefined (then the block stays plain). */
export function languageOf(info: string | undefined): string | undefined {
  const name = info?.trim().split(/\s/)[0]?.toLowerCase();
  return name && Object.hasOwn(LANGUAGES, name) ? LANGUAGES[name] : undefined;
}

/**
 * The lines of `code` coloured as `info` names, or undefined when the language is not one keel colours
 * or highlight.js is still loading (the load is started: see whenHighlighterLoads).
 */
export function highlightLines(code: string, info: string | undefined): string[] | undefined {
  const language = languageOf(info);
  if (!language) return undefined;
  if (!api) {
    void loadHighlighter();
    return undefined;
  }
  const key = `${language}\0${code}`;
  const known = memo.get(key);
  if (known) return known;
  const html = api.highlight(code, { language, ignoreIllegals: true }).value;
  const lines = paint(html);
  if (memo.size >= MEMO) memo.delete(memo.keys().next().value as string);
  memo.set(key, lines);
  return lines;
}

const ENTITIES: Record<string, string> = {
  '&amp;': '&',
  '&lt;': '<',
  '&gt;': '>',
  '&quot;': '"',
  '&#x27;': "'",
};

/** highlight.js's HTML → lines, each piece of text in its scope's colour, opened and closed on its line. */
function paint(html: string): string[] {
  const lines: string[] = [''];
  const colours: (number | undefined)[] = [];
  for (const [token, scope] of html.matchAll(/<span class="([^"]*)">|<\/span>|[^<]+/g)) {
    if (scope !== undefined) {
      colours.push(colourOf(scope) ?? colours.at(-1));
      continue;
    }
    if (token === '</span>') {
      colours.pop();
      continue;
    }
    const text = inert(token.replace(/&(?:amp|lt|gt|quot|#x27);/g, (e) => ENTITIES[e] ?? e));
    const colour = colours.at(-1);
    text.split('\n').forEach((part, i) => {
      if (i > 0) lines.push('');
      if (!part) return;
      lines[lines.length - 1] +=
        colour === undefined || colour === 39 ? part : `\x1b[${colour}m${part}\x1b[39m`;
    });
  }
  return lines;
}

/** `hljs-title function_` → the palette's colour for `title.function` (or `title`). */
function colourOf(classes: string): number | undefined {
  const [first, ...rest] = classes.split(' ');
  if (!first?.startsWith('hljs-')) return undefined;
  const scope = first.slice(5);
  const sub = rest.map((r) => r.replace(/_+$/, '')).find(Boolean);
  return (sub && PALETTE[`${scope}.${sub}`]) || PALETTE[scope];
}
