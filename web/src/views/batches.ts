/**
 * Batch runs (`keel batch`) of this project, read from the team store: the list, and one run's
 * progress, each task's state and verdict, its spend over time and its ledger of model calls. Charts
 * carry their values as text (readable without colour); a run still going is read again every 2 s.
 */
import { api } from '../api.js';
import { barChart, describe, type Group, lineChart } from '../chart.js';
import { badge, el, replace, short, when } from '../dom.js';
import type { Stop } from '../main.js';
import { poll } from '../poll.js';
import { tierCharts, tierShares, usd } from '../tier-charts.js';

type Counts = Record<'queued' | 'running' | 'done' | 'failed' | 'cancelled', number>;

interface BatchSummary {
  run_id: string;
  status: string;
  status_reason?: string;
  created_at: string;
  concurrency: number;
  counts: Counts;
  tasks_total: number;
  tasks_ended: number;
  cost_usd?: number;
}

interface Batch extends BatchSummary {
  tasks: Array<{
    task_id: string;
    state: string;
    attempt: number;
    issue: string;
    verdict: string;
    branch: string | null;
    error: string | null;
    calls: number;
    cost_usd: number;
  }>;
  totals: { tasks: number; verified: number; calls: number; cost_usd: number; unknown_cost_calls: number };
  spend: Array<{ seq: number; ts: number; task_id: string | null; cost_usd: number }>;
  ledger: Array<{
    seq: number;
    ts: number;
    task_id: string | null;
    model: string;
    tier: string | null;
    prompt_tokens: number;
    completion_tokens: number;
    latency_ms: number;
    cost_usd: number | null;
    cost_source: string;
  }>;
}

/** A chart wider than a phone scrolls inside its figure, which the keyboard can reach to scroll it. */
const FIG = { attrs: { tabindex: '0' } };

const STATES = ['queued', 'running', 'done', 'failed', 'cancelled'] as const;

function table(head: string[], rows: HTMLElement[], cls = 'list'): HTMLElement {
  return el(
    'table',
    { class: cls },
    el('thead', null, el('tr', null, ...head.map((h) => el('th', { attrs: { scope: 'col' } }, h)))),
    el('tbody', null, ...rows),
  );
}

function cell(label: string, ...children: Array<Node | string>): HTMLElement {
  return el('td', { attrs: { 'data-label': label } }, ...children);
}

function progress(b: BatchSummary): HTMLElement {
  return el(
    'p',
    { class: 'progress-line' },
    el('progress', {
      class: 'batch',
      attrs: {
        max: String(Math.max(1, b.tasks_total)),
        value: String(b.tasks_ended),
        'aria-label': `${b.tasks_ended} of ${b.tasks_total} tasks ended`,
      },
    }),
    ` ${b.tasks_ended} of ${b.tasks_total} tasks ended · ${b.counts.running} running · ${b.counts.queued} queued`,
  );
}

export function batchList(main: HTMLElement): Stop {
  const body = el('div', { attrs: { 'aria-live': 'polite' } }, el('p', { class: 'muted' }, 'Loading…'));
  const error = el('p', { class: 'error', attrs: { role: 'alert' } });
  main.append(el('h1', null, 'Batch runs'), error, body);
  return poll(
    async (signal) => {
      const { batches } = await api<{ batches: BatchSummary[] }>('/v1/batches', { signal });
      error.textContent = '';
      if (!batches.length)
        return replace(
          body,
          el('p', { class: 'muted' }, 'No batch runs of this project (keel batch TASKS.jsonl).'),
        );
      replace(
        body,
        table(
          ['Run', 'Status', 'Progress', 'Spend', 'Started'],
          batches.map((b) =>
            el(
              'tr',
              { attrs: { 'data-batch': b.run_id } },
              cell('Run', el('a', { attrs: { href: `#/batches/${b.run_id}` } }, b.run_id)),
              cell('Status', badge(b.status === 'paused_provider' ? 'waiting' : b.status, b.status)),
              cell('Progress', `${b.tasks_ended} of ${b.tasks_total} ended`),
              cell('Spend', usd(b.cost_usd ?? 0)),
              cell('Started', when(b.created_at)),
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

export function batchView(id: string) {
  return (main: HTMLElement): Stop => {
    const body = el('div', { attrs: { 'aria-live': 'polite' } }, el('p', { class: 'muted' }, 'Loading…'));
    const error = el('p', { class: 'error', attrs: { role: 'alert' } });
    main.classList.add('wide');
    main.append(el('h1', null, 'Batch run ', el('code', null, id)), error, body);
    let final = false;
    const stop = poll(
      async (signal) => {
        if (final) return;
        const b = await api<Batch>(`/v1/batches/${encodeURIComponent(id)}`, { signal });
        error.textContent = '';
        final = b.counts.queued + b.counts.running === 0;
        const states: Group[] = STATES.map((s) => ({
          label: s,
          bars: [{ series: s, value: b.counts[s], text: `${b.counts[s]} ${s}` }],
        }));
        const start = Date.parse(b.created_at);
        const points = b.spend.map((p) => ({
          x: Math.max(0, (p.ts - start) / 1000),
          value: p.cost_usd,
          text: usd(p.cost_usd),
        }));
        replace(
          body,
          el(
            'section',
            { class: 'card' },
            el('h2', null, 'Progress'),
            el(
              'p',
              null,
              'Status ',
              badge(b.status === 'paused_provider' ? 'waiting' : b.status, b.status),
              b.status_reason ? ` — ${b.status_reason}` : '',
            ),
            progress(b),
            el(
              'p',
              null,
              `${b.totals.verified} verified · ${b.totals.calls} model calls · spent ${usd(b.totals.cost_usd)}`,
              b.totals.unknown_cost_calls
                ? ` (and ${b.totals.unknown_cost_calls} calls of unknown cost)`
                : '',
            ),
          ),
          el(
            'section',
            { class: 'card', attrs: { 'aria-label': 'Charts' } },
            el(
              'div',
              { class: 'charts' },
              el(
                'figure',
                FIG,
                barChart({ title: 'Tasks by state', desc: describe(states), groups: states }),
                el('figcaption', null, 'Tasks by state: each bar says its count and state'),
              ),
              points.length
                ? el(
                    'figure',
                    FIG,
                    lineChart({
                      title: 'Spend over time',
                      desc: points.map((p) => `+${Math.round(p.x)} s: ${p.text}`).join('; '),
                      points,
                    }),
                    el(
                      'figcaption',
                      null,
                      'Spend over time: the run’s total after each model call, seconds from its start',
                    ),
                  )
                : el('p', { class: 'muted' }, 'No model call recorded yet.'),
              ...tierCharts(tierShares(b.ledger)),
            ),
          ),
          el(
            'section',
            { class: 'card' },
            el('h2', null, 'Tasks'),
            table(
              ['Task', 'State', 'Verdict', 'Attempts', 'Calls', 'Spend', 'Branch or error'],
              b.tasks.map((t) =>
                el(
                  'tr',
                  { attrs: { 'data-task': t.task_id } },
                  cell('Task', el('strong', null, t.task_id), el('br'), short(t.issue, 100)),
                  cell('State', badge(t.state)),
                  cell('Verdict', badge(t.verdict)),
                  cell('Attempts', String(t.attempt)),
                  cell('Calls', String(t.calls)),
                  cell('Spend', usd(t.cost_usd)),
                  cell('Branch or error', t.branch ? el('code', null, t.branch) : (t.error ?? '—')),
                ),
              ),
            ),
          ),
          el(
            'section',
            { class: 'card' },
            el('h2', null, 'Ledger'),
            b.ledger.length
              ? table(
                  ['#', 'Task', 'Model', 'Tokens in / out', 'Latency', 'Cost', 'Source'],
                  b.ledger.map((c) =>
                    el(
                      'tr',
                      { attrs: { 'data-call': String(c.seq) } },
                      cell('#', String(c.seq)),
                      cell('Task', c.task_id ?? '—'),
                      cell('Model', c.tier ? `${c.model} (${c.tier})` : c.model),
                      cell('Tokens in / out', `${c.prompt_tokens} / ${c.completion_tokens}`),
                      cell('Latency', `${c.latency_ms} ms`),
                      cell('Cost', usd(c.cost_usd)),
                      cell('Source', c.cost_source),
                    ),
                  ),
                )
              : el('p', { class: 'muted' }, 'No model call recorded yet.'),
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
      main.classList.remove('wide');
    };
  };
}
