/**
 * Fix runs: the list, and one run's verdict, attempts, cost, rationale, PR text and diff. A build run
 * first shows the tests it wrote, waiting for the person's Approve or Reject, then is followed as a fix run.
 */
import { api, headers, scoped } from '../api.js';
import { badge, diffBlock, el, money, replace, short, stateBadge, when } from '../dom.js';
import type { Stop } from '../main.js';
import { markdown } from '../markdown.js';
import { poll } from '../poll.js';
import { type TierShare, tierCharts } from '../tier-charts.js';
import type { Approval, Run } from '../types.js';
import { RunTimeline } from './run-timeline.js';

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
                  el(
                    'a',
                    { attrs: { href: `#/runs/${r.run_id}` } },
                    short(r.title || r.task || r.run_id, 80),
                  ),
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
    const actions = el('section', {
      class: 'card apply',
      attrs: { hidden: '', 'aria-label': 'Apply the fix' },
    });
    const question = el('section', {
      class: 'card approval',
      attrs: { hidden: '', 'aria-label': 'Approve the tests' },
    });
    main.classList.add('wide');
    let final = false;
    const heading = el('h1', null, 'Fix run ', el('code', null, id));
    // the log's stream shows each step as it happens; its end makes the report be read once more. A
    // build's fix run has a log only once its tests are approved: the stream is opened then.
    let timeline: RunTimeline | undefined;
    const follow = () => {
      if (timeline) return;
      timeline = new RunTimeline(id, () => {
        final = false;
      });
      body.before(timeline.root, timeline.chart.root);
    };
    let asked = '';
    main.append(heading, error, question, actions, body);
    const stop = poll(
      async (signal) => {
        if (final) return;
        const r = await api<Run>(`/v1/runs/${encodeURIComponent(id)}`, { signal });
        error.textContent = '';
        final = r.status !== 'running' && r.status !== 'waiting';
        if (r.kind !== 'build' || r.fix_run) follow();
        if (r.kind === 'build') replace(heading, 'Build run ', el('code', null, id));
        const waiting = r.pending_approvals?.[0];
        // the question is drawn once while it waits (a redraw would drop a click in flight)
        if (waiting && asked !== waiting.id) {
          asked = waiting.id;
          showQuestion(question, r, waiting);
        } else if (!waiting) question.hidden = true;
        if (final) showActions(actions, r);
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
                  ['Verdict', r.status === 'waiting' ? stateBadge(r.status) : badge(r.status)],
                  ...(r.kind === 'build'
                    ? ([
                        ['Tests', r.tests?.length ? r.tests.join(', ') : '—'],
                        ['Reason', r.reason ?? '—'],
                      ] as Array<[string, string]>)
                    : []),
                  ['Attempts', String(r.attempts)],
                  ['Cost', money(r.cost_usd)],
                  ['Branch', r.branch ? el('code', null, r.branch) : '—'],
                  ['Started', when(r.started_at)],
                  ['Ended', when(r.ended_at)],
                ] as Array<[string, string | HTMLElement]>
              ).flatMap(([k, v]) => [el('dt', null, k), el('dd', null, v)]),
            ),
          ),
          ...routing(r.tiers),
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
      timeline?.close();
      main.classList.remove('wide');
    };
  };
}

/**
 * A build's tests waiting for the person: their diff, then Approve or Reject (with a reason), answered
 * as a session's question is; the server logs the answer. No answer in time is a no (the server's timeout).
 */
function showQuestion(section: HTMLElement, r: Run, q: Approval): void {
  const result = el('p', { attrs: { role: 'status' } });
  const reason = el('input', {
    attrs: { id: 'reject-reason', type: 'text', placeholder: 'why not (optional)' },
  });
  const answer = async (decision: 'allow' | 'deny') => {
    for (const b of buttons) b.disabled = true;
    try {
      const body: Record<string, string> = { decision };
      if (decision === 'deny' && reason.value.trim()) body.reason = reason.value.trim();
      await api(`/v1/runs/${encodeURIComponent(r.run_id)}/approvals/${encodeURIComponent(q.id)}`, {
        method: 'POST',
        body,
      });
      result.className = 'ok';
      result.textContent =
        decision === 'allow'
          ? 'Approved: the tests are frozen and the feature is built.'
          : 'Rejected: nothing is built.';
    } catch (err) {
      for (const b of buttons) b.disabled = false;
      result.className = 'error';
      result.textContent = (err as Error).message;
    }
  };
  const buttons = [
    el('button', { attrs: { type: 'button' }, on: { click: () => answer('allow') } }, 'Approve'),
    el(
      'button',
      { class: 'secondary', attrs: { type: 'button' }, on: { click: () => answer('deny') } },
      'Reject',
    ),
  ];
  replace(
    section,
    el('h2', null, 'Approve the tests'),
    el('p', null, q.question),
    q.diff ? diffBlock(q.diff) : el('p', { class: 'muted' }, 'No diff.'),
    el('label', { attrs: { for: 'reject-reason' } }, 'Reason for a rejection'),
    reason,
    el('div', { class: 'button-row' }, ...buttons),
    result,
  );
  section.hidden = false;
}

/** The routing tiers' share of the run's calls and cost, when its calls were routed by tier. */
function routing(tiers: TierShare[] | undefined): HTMLElement[] {
  const charts = tierCharts(tiers ?? []);
  if (!charts.length) return [];
  return [
    el(
      'section',
      { class: 'card', attrs: { 'aria-label': 'Routing tiers' } },
      el('h2', null, 'Routing tiers'),
      el('div', { class: 'charts' }, ...charts),
    ),
  ];
}

/**
 * A verified fix: merge it into the checked-out branch (after the person says yes: the CLI's `keel runs
 * apply` asks the same), or download its patch. The server makes every check again (src/fix/apply.ts).
 */
function showActions(section: HTMLElement, r: Run): void {
  if (!r.applicable) {
    section.hidden = true;
    return;
  }
  const result = el('p', { attrs: { role: 'status' } });
  const merge = el(
    'button',
    {
      attrs: { type: 'button' },
      on: {
        click: async () => {
          if (!window.confirm(`Fast-forward the checked-out branch to this verified fix (${r.branch})?`))
            return;
          merge.disabled = true;
          try {
            const done = await api<{ into: string; commit: string }>(
              `/v1/runs/${encodeURIComponent(r.run_id)}/apply`,
              { method: 'POST', body: { confirm: true } },
            );
            result.className = 'ok';
            result.textContent = `Applied: ${done.into} is now at ${done.commit.slice(0, 12)}.`;
          } catch (err) {
            merge.disabled = false;
            result.className = 'error';
            result.textContent = (err as Error).message;
          }
        },
      },
    },
    'Merge into the current branch',
  );
  const download = el(
    'button',
    {
      class: 'secondary',
      attrs: { type: 'button' },
      on: {
        click: async () => {
          try {
            const res = await fetch(scoped(`/v1/runs/${encodeURIComponent(r.run_id)}/patch`), {
              headers: headers(),
              credentials: 'omit',
              cache: 'no-store',
            });
            if (!res.ok) throw new Error(`the patch: HTTP ${res.status}`);
            const url = URL.createObjectURL(await res.blob());
            const a = el('a', { attrs: { href: url, download: `keel-fix-${r.run_id}.patch` } });
            document.body.append(a);
            a.click();
            a.remove();
            setTimeout(() => URL.revokeObjectURL(url), 10_000);
          } catch (err) {
            result.className = 'error';
            result.textContent = (err as Error).message;
          }
        },
      },
    },
    'Download the patch',
  );
  replace(
    section,
    el('h2', null, 'Apply the fix'),
    el(
      'p',
      { class: 'muted' },
      'A fast-forward: the branch gets exactly the tree the tests verified; a branch that moved since the run is refused (download the patch then).',
    ),
    el('div', { class: 'button-row' }, merge, download),
    result,
  );
  section.hidden = false;
}

/** A report's Markdown, rendered safely (markdown.ts), or a dash when there is none. */
function prose(text: string | null): HTMLElement {
  if (!text?.trim()) return el('p', { class: 'muted' }, '—');
  const div = el('div', { class: 'prose md' }, markdown(text));
  // a code block wider than a phone scrolls: the keyboard must reach it to scroll it
  for (const pre of div.querySelectorAll('pre')) pre.tabIndex = 0;
  return div;
}
