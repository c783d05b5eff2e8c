/**
 * The project's files, read-only: a tree (folders open on demand, native disclosure so a keyboard opens
 * them) and a viewer with highlighted, numbered lines, a Markdown preview for .md files, the line an
 * address names (`#/files/src/app.ts:42`) marked and scrolled to, and "Insert into message" for a selection.
 */
import { api } from '../api.js';
import { codeBlock, languageFor, selectedLines } from '../code.js';
import { el, replace } from '../dom.js';
import { sendToMessage } from '../draft.js';
import { fileHref } from '../file-links.js';
import type { Stop } from '../main.js';
import { markdown } from '../markdown.js';

interface Entry {
  name: string;
  path: string;
  kind: 'dir' | 'file';
  size?: number;
}

/** `src/app.ts:42` → the path and the line. */
export function parseTarget(raw: string): { path: string; line: number | null } {
  let text = raw;
  try {
    text = decodeURI(raw);
  } catch {
    // shown as it came
  }
  const m = /^(.*?):(\d+)$/.exec(text);
  return m ? { path: m[1] ?? '', line: Number(m[2]) } : { path: text, line: null };
}

export function fileView(target: string) {
  return (main: HTMLElement): Stop => {
    const { path, line } = parseTarget(target);
    const controller = new AbortController();
    const error = el('p', { class: 'error', attrs: { role: 'alert' } });
    const tree = el('nav', { class: 'file-tree card', attrs: { 'aria-label': 'Project files' } });
    const viewer = el('section', { class: 'viewer', attrs: { 'aria-label': 'File' } });
    main.classList.add('wide');
    main.append(el('h1', null, 'Files'), error, el('div', { class: 'columns files-layout' }, tree, viewer));

    const open = path ? path.split('/').slice(0, -1) : [];
    const folder = async (dir: string, depth: number): Promise<HTMLElement> => {
      const res = await api<{ entries: Entry[]; truncated: boolean }>(
        `/v1/files?dir=${encodeURIComponent(dir)}`,
        { signal: controller.signal },
      );
      const list = el('ul', { class: 'tree-list' });
      for (const e of res.entries) {
        if (e.kind === 'file') {
          const current = e.path === path;
          list.appendChild(
            el(
              'li',
              null,
              el(
                'a',
                { attrs: { href: fileHref(e.path), ...(current ? { 'aria-current': 'page' } : {}) } },
                e.name,
              ),
            ),
          );
          continue;
        }
        const summary = el('summary', null, `${e.name}/`);
        const details = el('details', { attrs: { 'data-dir': e.path } }, summary);
        let loaded = false;
        const load = async () => {
          if (loaded) return;
          loaded = true;
          try {
            details.appendChild(await folder(e.path, depth + 1));
          } catch (err) {
            if ((err as Error).name !== 'AbortError') error.textContent = (err as Error).message;
          }
        };
        details.addEventListener('toggle', () => {
          if (details.open) void load();
        });
        if (open[depth] === e.name && open.slice(0, depth + 1).join('/') === e.path) details.open = true;
        list.appendChild(el('li', null, details));
      }
      if (res.truncated) list.appendChild(el('li', { class: 'muted' }, 'more entries not shown'));
      if (res.entries.length === 0) list.appendChild(el('li', { class: 'muted' }, 'empty'));
      return list;
    };
    folder('', 0)
      .then((list) => replace(tree, el('h2', null, 'Project'), list))
      .catch((err) => {
        if ((err as Error).name !== 'AbortError') error.textContent = (err as Error).message;
      });

    if (!path) replace(viewer, el('p', { class: 'muted' }, 'Choose a file in the tree.'));
    else void showFile(viewer, path, line, controller.signal, (msg) => (error.textContent = msg));
    return () => {
      controller.abort();
      main.classList.remove('wide');
    };
  };
}

async function showFile(
  viewer: HTMLElement,
  path: string,
  line: number | null,
  signal: AbortSignal,
  fail: (msg: string) => void,
): Promise<void> {
  replace(viewer, el('p', { class: 'muted' }, 'Loading…'));
  let file: { path: string; size: number; text: string };
  try {
    file = await api(`/v1/files/content?path=${encodeURIComponent(path)}`, { signal });
  } catch (err) {
    if ((err as Error).name === 'AbortError') return;
    replace(viewer, el('h2', { class: 'file-path' }, path));
    fail((err as Error).message);
    return;
  }
  const language = languageFor(file.path);
  const source = codeBlock(file.text, language);
  source.setAttribute('tabindex', '0');
  source.setAttribute('aria-label', `${file.path}, ${file.text.split('\n').length} lines`);
  const isMarkdown = /\.(?:md|markdown)$/i.test(file.path);
  const preview = isMarkdown ? el('div', { class: 'prose md preview' }, markdown(file.text)) : null;
  const status = el('span', { class: 'muted', attrs: { role: 'status' } });
  const insert = el(
    'button',
    { class: 'secondary', attrs: { type: 'button' } },
    'Insert selection into message',
  );
  insert.addEventListener('click', () => {
    const shown = preview && !preview.hidden ? preview : source;
    const sel = selectedLines(shown);
    if (!sel) {
      status.textContent = 'Select some text in the file first.';
      return;
    }
    const where =
      shown === source && sel.from
        ? `${file.path}:${sel.from}${sel.to > sel.from ? `-${sel.to}` : ''}`
        : file.path;
    const fence = '```';
    location.hash = sendToMessage(
      `${where}\n${fence}${language}\n${sel.text.replace(/\n$/, '')}\n${fence}\n`,
    );
  });
  const toggle = isMarkdown
    ? el('button', { class: 'secondary', attrs: { type: 'button', 'aria-pressed': 'false' } }, 'Show source')
    : null;
  const showSource = (on: boolean) => {
    if (!preview || !toggle) return;
    preview.hidden = on;
    source.hidden = !on;
    toggle.setAttribute('aria-pressed', String(on));
    toggle.textContent = on ? 'Show preview' : 'Show source';
  };
  toggle?.addEventListener('click', () => showSource(preview?.hidden === false));
  replace(
    viewer,
    el(
      'div',
      { class: 'title-row' },
      el('h2', { class: 'file-path' }, file.path),
      el('div', { class: 'actions' }, toggle, insert, status),
    ),
    preview,
    source,
  );
  // a line asked for is shown in the source, marked and scrolled to
  showSource(line !== null);
  if (line !== null) {
    const target = source.querySelector<HTMLElement>(`#L${line}`);
    if (target) {
      target.classList.add('target');
      target.setAttribute('aria-current', 'location');
      target.scrollIntoView({ block: 'center' });
    }
  }
}
