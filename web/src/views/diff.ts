/** What a session changed, file by file, as coloured unified diffs. */
import { api } from '../api.js';
import { diffBlock, el, replace } from '../dom.js';
import type { Stop } from '../main.js';

export function sessionDiff(id: string) {
  return (main: HTMLElement): Stop => {
    const body = el('div', { attrs: { 'aria-live': 'polite' } }, el('p', { class: 'muted' }, 'Loading…'));
    main.classList.add('wide');
    main.append(
      el(
        'div',
        { class: 'title-row' },
        el('h1', null, 'Diff'),
        el(
          'nav',
          { class: 'tabs', attrs: { 'aria-label': 'Session' } },
          el('a', { attrs: { href: `#/s/${id}` } }, 'Transcript'),
          el('a', { attrs: { href: `#/s/${id}/diff`, 'aria-current': 'page' } }, 'Diff'),
        ),
      ),
      body,
    );
    const stop = new AbortController();
    api<{ files: Array<{ path: string; diff: string }> }>(`/v1/sessions/${encodeURIComponent(id)}/diff`, {
      signal: stop.signal,
    })
      .then(({ files }) => {
        if (files.length === 0)
          return replace(body, el('p', { class: 'muted' }, 'This session changed no files.'));
        replace(
          body,
          el('p', { class: 'facts' }, `${files.length} file${files.length === 1 ? '' : 's'} changed`),
          ...files.map((f) =>
            el(
              'section',
              { class: 'card file-diff' },
              el('h2', null, el('code', null, f.path)),
              diffBlock(f.diff),
            ),
          ),
        );
      })
      .catch((err: Error) => {
        if (!stop.signal.aborted)
          replace(body, el('p', { class: 'error', attrs: { role: 'alert' } }, err.message));
      });
    return () => {
      stop.abort();
      main.classList.remove('wide');
    };
  };
}
