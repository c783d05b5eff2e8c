/**
 * A file's text as numbered, highlighted lines: highlight.js (the grammars markdown.ts registers) colours
 * the whole text, DOMPurify keeps only its spans, and the result is cut into one element per line (spans
 * that cross a line end are closed and reopened) so a line can be linked to (`#L12`) and a selection
 * knows its lines.
 */
import DOMPurify from 'dompurify';
import { hljs } from './markdown.js';

const LANGUAGES: Record<string, string> = {
  ts: 'typescript',
  tsx: 'typescript',
  mts: 'typescript',
  cts: 'typescript',
  js: 'javascript',
  jsx: 'javascript',
  mjs: 'javascript',
  cjs: 'javascript',
  json: 'json',
  py: 'python',
  rs: 'rust',
  go: 'go',
  sh: 'bash',
  bash: 'bash',
  diff: 'diff',
  patch: 'diff',
};

/** The highlight.js language for a file name, or '' for plain text. */
export function languageFor(path: string): string {
  const ext = /\.([A-Za-z0-9]+)$/.exec(path)?.[1]?.toLowerCase() ?? '';
  return LANGUAGES[ext] ?? '';
}

function escapeHtml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** Sanitized highlight markup cut at line ends: each piece is balanced markup of one line. */
function splitLines(html: string): string[] {
  const lines: string[] = [];
  const open: string[] = [];
  let line = '';
  for (const part of html.split(/(<span[^>]*>|<\/span>|\n)/)) {
    if (part === '\n') {
      lines.push(line + '</span>'.repeat(open.length));
      line = open.join('');
    } else if (part.startsWith('<span')) {
      open.push(part);
      line += part;
    } else if (part === '</span>') {
      open.pop();
      line += part;
    } else line += part;
  }
  lines.push(line + '</span>'.repeat(open.length));
  return lines;
}

/** The text as a `<pre>` of numbered lines, each `<span class="ln" id="L{n}" data-line="{n}">`. */
export function codeBlock(text: string, language: string): HTMLElement {
  let html = escapeHtml(text);
  if (language && hljs.getLanguage(language)) {
    try {
      html = hljs.highlight(text, { language, ignoreIllegals: true }).value;
    } catch {
      // shown as plain text
    }
  }
  const clean = DOMPurify.sanitize(html, { ALLOWED_TAGS: ['span'], ALLOWED_ATTR: ['class'] });
  const lines = splitLines(clean.replace(/\n$/, ''));
  const pre = document.createElement('pre');
  pre.className = 'code hljs';
  const code = document.createElement('code');
  code.innerHTML = DOMPurify.sanitize(
    lines.map((l, i) => `<span class="ln" id="L${i + 1}" data-line="${i + 1}">${l}\n</span>`).join(''),
    { ALLOWED_TAGS: ['span'], ALLOWED_ATTR: ['class', 'id', 'data-line'] },
  );
  pre.appendChild(code);
  return pre;
}

/** The first and last line numbers a selection inside `root` covers, or null when it is not in it. */
export function selectedLines(root: HTMLElement): { from: number; to: number; text: string } | null {
  const sel = window.getSelection();
  if (!sel || sel.isCollapsed || sel.rangeCount === 0) return null;
  const text = sel.toString();
  const range = sel.getRangeAt(0);
  if (!root.contains(range.commonAncestorContainer) || !text.trim()) return null;
  const lineOf = (node: Node): number => {
    const elem = node instanceof Element ? node : node.parentElement;
    return Number(elem?.closest('[data-line]')?.getAttribute('data-line') ?? 0);
  };
  const from = lineOf(range.startContainer);
  const to = lineOf(range.endContainer);
  return { from, to: Math.max(from, to), text };
}
