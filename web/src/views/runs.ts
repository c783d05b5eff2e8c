/** Fix runs: the list, and one run's verdict, attempts, cost, rationale, PR text and diff. */
import { api } from '../api.js';
import { badge, diffBlock, el, money, replace, short, when } from '../dom.js';
import type { Stop } from '../main.js';
import { markdown } from '../markdown.js';
import { poll } from '../poll.js';
import type { Run } from '../types.js';
import { AttemptChart } from './attempts.js';

export function runList(main: HTMLElement): Stop {
  const body = el('div', { attrs: { 'aria-live': 'polite' } }, el('p', { class: 'muted' }, 'Loading…'));
  const error = el('p', { class: 'error', attrs: { role: 'alert' } });
  main.append(
    el(
      'div',
      { class: 'title-row' },
      el('h1', null, 'Fix runs'),
      el('a', { class: 'button', attrs: { href: '#/fix' } }, 'New fix'),
    ),
    error,
    body,
  );
  return poll(
    async (signal) => {
      const { runs } = await api<{ runs: Run[] }>('/v1/runs', { signal });
      error.textContent = '';
      if (runs.length === 0) return replace(body, el('p', { class: 'muted' }, 'No fix runs yet.'));
      replace(
        body,
        el(
          'table',
          { class: 'list runs' },
          el(
            'thead',
            null,
            el(
              'tr',
              null,
              ...['Run', 'Verdict', 'Attempts', 'Cost', 'Started'].map((h) =>
                el('th', { attrs: { scope: 'col' } }, h),
              ),
            ),
          ),
          el(
            'tbody',
            null,
            ...runs.map((r) =>
              el(
                'tr',
                { attrs: { 'data-run': r.run_id } },
                el(
                  'td',
                  { attrs: { 'data-label': 'Run' } },
                  el('a', { attrs: { href: `#/runs/${r.run_id}` } }, short(r.task || r.run_id, 80)),
                ),
                el('td', { attrs: { 'data-label': 'Verdict' } }, badge(r.status)),
                el('td', { attrs: { 'data-label': 'Attempts' } }, String(r.attempts)),
                el('td', { attrs: { 'data-label': 'Cost' } }, money(r.cost_usd)),
                el('td', { attrs: { 'data-label': 'Started' } }, when(r.started_at)),
              ),
            ),
          ),
        ),
      );
    },
    3000,
    (err) => {
      error.textContent = err.message;
    },
  );
}

export function runView(id: string) {
  return (main: HTMLElement): Stop => {
    const body = el('div', { attrs: { 'aria-live': 'polite' } }, el('p', { class: 'muted' }, 'Loading…'));
    const error = el('p', { class: 'error', attrs: { role: 'alert' } });
    main.classList.add('wide');
    const chart = new AttemptChart(id);
    main.append(el('h1', null, 'Fix run ', el('code', null, id)), error, chart.root, body);
    let final = false;
    const stop = poll(
      async (signal) => {
        if (final) return;
        const r = await api<Run>(`/v1/runs/${encodeURIComponent(id)}`, { signal });
        error.textContent = '';
        final = r.status !== 'running';
        replace(
          body,
          el(
            'section',
            { class: 'card' },
            el(
              'dl',
              { class: 'facts-grid' },
              ...(
                [
                  ['Verdict', badge(r.status)],
                  ['Attempts', String(r.attempts)],
                  ['Cost', money(r.cost_usd)],
                  ['Started', when(r.started_at)],
                  ['Ended', when(r.ended_at)],
                ] as Array<[string, string | HTMLElement]>
              ).flatMap(([k, v]) => [el('dt', null, k), el('dd', null, v)]),
            ),
          ),
          el('section', { class: 'card' }, el('h2', null, 'Rationale'), prose(r.rationale)),
          el('section', { class: 'card' }, el('h2', null, 'Pull request text'), prose(r.pr_description)),
          el(
            'section',
            { class: 'card' },
            el('h2', null, 'Diff'),
            r.diff ? diffBlock(r.diff) : el('p', { class: 'muted' }, 'No change.'),
          ),
        );
      },
      2000,
      (err) => {
        error.textContent = err.message;
      },
    );
    return () => {
      stop();
      chart.close();
      main.classList.remove('wide');
    };
  };
}

/** A report's Markdown, rendered safely (markdown.ts), or a dash when there is none. */
function prose(text: string | null): HTMLElement {
  return text?.trim() ? el('div', { class: 'prose md' }, markdown(text)) : el('p', { class: 'muted' }, '—');
}
