/**
 * The hub project the user's config names (`hub_project`), read from the team store: its agents with
 * their presence and roles, recent messages (bodies as text, never markup), and its workflow runs; one
 * run shows its stages, the quorum evidence (message ids and hashes) and the signals it received.
 */
import { api } from '../api.js';
import { badge, el, replace, short } from '../dom.js';
import type { Stop } from '../main.js';
import { poll } from '../poll.js';

interface Hub {
  project: string | null;
  reason?: string;
  agents: Array<{ name: string; role: string | null; online: boolean; last_seen: number }>;
  messages: Array<{
    id: string;
    from: string;
    to: string;
    state: string;
    body: string;
    body_truncated: boolean;
    created_at: number;
  }>;
  runs: Array<{ id: string; workflow: string; status: string; event: string; created_at: number }>;
}

interface HubRun {
  id: string;
  workflow: string;
  workflow_sha256: string;
  source: string;
  event: string;
  status: string;
  stages: Array<{
    id: string;
    kind: string;
    state: string;
    attempt: number;
    min_producers: number | null;
    producers: number | null;
    signal: string | null;
    agents: string[];
    decision: { decision: string; by: string; reason: string | null; at: number } | null;
    evidence: Array<{
      agent: string;
      attempt: number;
      request_message_id: string;
      reply_message_id: string;
      request_hash: string;
      reply_hash: string;
    }>;
  }>;
  signals: Array<{
    id: string;
    name: string;
    body_sha256: string;
    received_at: number;
    consumed_by: string | null;
  }>;
  events: Array<{ seq: number; ts: number; type: string; hash: string }>;
}

const at = (ms: number): string => new Date(ms).toLocaleString();
/** A hash people compare by its start. */
const hash = (h: string): HTMLElement => el('code', { attrs: { title: h } }, h.slice(0, 12));

function table(caption: string, head: string[], rows: HTMLElement[]): HTMLElement {
  return el(
    'table',
    { class: 'list', attrs: { 'aria-label': caption } },
    el('thead', null, el('tr', null, ...head.map((h) => el('th', { attrs: { scope: 'col' } }, h)))),
    el('tbody', null, ...rows),
  );
}

function cell(label: string, ...children: Array<Node | string>): HTMLElement {
  return el('td', { attrs: { 'data-label': label } }, ...children);
}

export function hubView(main: HTMLElement): Stop {
  const body = el('div', { attrs: { 'aria-live': 'polite' } }, el('p', { class: 'muted' }, 'Loading…'));
  const error = el('p', { class: 'error', attrs: { role: 'alert' } });
  const title = el('h1', null, 'Hub');
  main.append(title, error, body);
  return poll(
    async (signal) => {
      const hub = await api<Hub>('/v1/hub', { signal });
      error.textContent = '';
      if (hub.project) replace(title, 'Hub ', el('code', null, hub.project));
      if (hub.reason) return replace(body, el('p', { class: 'muted' }, hub.reason));
      const online = hub.agents.filter((a) => a.online).length;
      replace(
        body,
        el(
          'section',
          { class: 'card' },
          el('h2', null, `Agents (${online} of ${hub.agents.length} online)`),
          hub.agents.length
            ? table(
                'Agents',
                ['Agent', 'Role', 'Presence', 'Last seen'],
                hub.agents.map((a) =>
                  el(
                    'tr',
                    { attrs: { 'data-agent': a.name } },
                    cell('Agent', el('strong', null, a.name)),
                    cell('Role', a.role ?? '—'),
                    cell('Presence', badge(a.online ? 'online' : 'offline')),
                    cell('Last seen', at(a.last_seen)),
                  ),
                ),
              )
            : el('p', { class: 'muted' }, 'No agent registered.'),
        ),
        el(
          'section',
          { class: 'card' },
          el('h2', null, 'Recent messages'),
          hub.messages.length
            ? table(
                'Recent messages',
                ['When', 'From', 'To', 'State', 'Body'],
                hub.messages.map((m) =>
                  el(
                    'tr',
                    { attrs: { 'data-message': m.id } },
                    cell('When', at(m.created_at)),
                    cell('From', m.from),
                    cell('To', m.to),
                    cell('State', badge(m.state)),
                    // text, never markup: textContent of a <td>
                    cell('Body', short(m.body, 300), m.body_truncated ? ' (cut)' : ''),
                  ),
                ),
              )
            : el('p', { class: 'muted' }, 'No message yet.'),
        ),
        el(
          'section',
          { class: 'card' },
          el('h2', null, 'Workflow runs'),
          hub.runs.length
            ? table(
                'Workflow runs',
                ['Run', 'Workflow', 'Status', 'Event', 'Started'],
                hub.runs.map((r) =>
                  el(
                    'tr',
                    { attrs: { 'data-run': r.id } },
                    cell('Run', el('a', { attrs: { href: `#/hub/runs/${r.id}` } }, r.id)),
                    cell('Workflow', r.workflow),
                    cell('Status', badge(r.status)),
                    cell('Event', r.event),
                    cell('Started', at(r.created_at)),
                  ),
                ),
              )
            : el('p', { class: 'muted' }, 'No workflow run.'),
        ),
      );
    },
    3000,
    (err) => {
      error.textContent = err.message;
    },
  );
}

/**
 * The decision a person makes on a parked approval stage: a reason (optional) and Approve or Reject.
 * Built once per parked stage and attempt, outside the polled part, so what is typed survives a refresh.
 */
function decisionForm(runId: string, stage: string, attempt: number): HTMLElement {
  const reason = el('input', {
    attrs: { type: 'text', id: `reason-${stage}`, maxlength: '2000', autocomplete: 'off' },
  });
  const status = el('p', { class: 'muted', attrs: { role: 'status' } });
  const buttons: HTMLButtonElement[] = [];
  const decide = async (decision: 'approve' | 'reject') => {
    for (const b of buttons) b.disabled = true;
    status.textContent = decision === 'approve' ? 'Approving…' : 'Rejecting…';
    try {
      const text = reason.value.trim();
      await api(`/v1/hub/runs/${encodeURIComponent(runId)}/stages/${encodeURIComponent(stage)}/approval`, {
        method: 'POST',
        body: { decision, ...(text ? { reason: text } : {}) },
      });
      // the next refresh shows the stage decided (and takes this form away)
      status.textContent = decision === 'approve' ? 'Approved.' : 'Rejected.';
    } catch (err) {
      status.textContent = (err as Error).message;
      for (const b of buttons) b.disabled = false;
    }
  };
  buttons.push(
    el('button', { attrs: { type: 'button' }, on: { click: () => void decide('approve') } }, 'Approve'),
    el(
      'button',
      { class: 'secondary', attrs: { type: 'button' }, on: { click: () => void decide('reject') } },
      'Reject',
    ),
  );
  return el(
    'section',
    { class: 'card', attrs: { 'data-approval': stage, 'data-attempt': String(attempt) } },
    el('h2', null, `Approval: ${stage}`),
    el('p', null, 'This run waits for a person to approve stage ', el('strong', null, stage), '.'),
    el('label', { attrs: { for: `reason-${stage}` } }, 'Reason (optional, kept in the sealed events)'),
    reason,
    el('p', { class: 'actions' }, ...buttons),
    status,
  );
}

export function hubRunView(id: string) {
  return (main: HTMLElement): Stop => {
    const body = el('div', { attrs: { 'aria-live': 'polite' } }, el('p', { class: 'muted' }, 'Loading…'));
    const error = el('p', { class: 'error', attrs: { role: 'alert' } });
    // the decision on a parked approval stage lives outside the polled body: rebuilt only when the
    // parked stage changes, so a reason being typed is not wiped by the next refresh
    const decisions = el('div');
    let parkedKey = '';
    main.classList.add('wide');
    main.append(el('h1', null, 'Workflow run ', el('code', null, id)), error, decisions, body);
    const stop = poll(
      async (signal) => {
        const r = await api<HubRun>(`/v1/hub/runs/${encodeURIComponent(id)}`, { signal });
        error.textContent = '';
        const parked = r.stages.find((s) => s.kind === 'approval' && s.state === 'parked');
        const key = parked ? `${parked.id}:${parked.attempt}` : '';
        if (key !== parkedKey) {
          parkedKey = key;
          if (parked) replace(decisions, decisionForm(r.id, parked.id, parked.attempt));
          else replace(decisions);
        }
        replace(
          body,
          el(
            'section',
            { class: 'card' },
            el(
              'p',
              null,
              'Workflow ',
              el('strong', null, r.workflow),
              ' ',
              hash(r.workflow_sha256),
              ' · status ',
              badge(r.status),
            ),
            el('p', null, `Started by ${r.source} ${r.event}`),
          ),
          el(
            'section',
            { class: 'card' },
            el('h2', null, 'Stages'),
            el(
              'ol',
              { class: 'stages' },
              ...r.stages.map((s) =>
                el(
                  'li',
                  { attrs: { 'data-stage': s.id } },
                  el('strong', null, s.id),
                  ` ${s.kind} `,
                  badge(s.state),
                  s.min_producers !== null && s.kind === 'quorum'
                    ? ` · ${s.evidence.length} replies of ${s.min_producers} needed`
                    : '',
                  s.signal ? ` · waits for signal ${s.signal}` : '',
                  s.kind === 'approval' && s.state === 'parked' ? ' · waits for a person to approve' : '',
                  s.decision
                    ? ` · ${s.decision.decision === 'approve' ? 'approved' : 'rejected'} by ${s.decision.by}${s.decision.reason ? `: ${s.decision.reason}` : ''}`
                    : '',
                  s.agents.length ? ` · agents: ${s.agents.join(', ')}` : '',
                  s.evidence.length
                    ? table(
                        `Evidence of stage ${s.id}`,
                        ['Agent', 'Request message', 'Reply message', 'Request hash', 'Reply hash'],
                        s.evidence.map((e) =>
                          el(
                            'tr',
                            { attrs: { 'data-evidence': e.reply_message_id } },
                            cell('Agent', e.agent),
                            cell('Request message', el('code', null, e.request_message_id)),
                            cell('Reply message', el('code', null, e.reply_message_id)),
                            cell('Request hash', hash(e.request_hash)),
                            cell('Reply hash', hash(e.reply_hash)),
                          ),
                        ),
                      )
                    : '',
                ),
              ),
            ),
          ),
          el(
            'section',
            { class: 'card' },
            el('h2', null, 'Signals'),
            r.signals.length
              ? table(
                  'Signals',
                  ['Signal', 'Name', 'Body hash', 'Received', 'Taken by'],
                  r.signals.map((g) =>
                    el(
                      'tr',
                      { attrs: { 'data-signal': g.id } },
                      cell('Signal', el('code', null, g.id)),
                      cell('Name', g.name),
                      cell('Body hash', hash(g.body_sha256)),
                      cell('Received', at(g.received_at)),
                      cell('Taken by', g.consumed_by ?? 'waiting'),
                    ),
                  ),
                )
              : el('p', { class: 'muted' }, 'No signal received.'),
          ),
          el(
            'section',
            { class: 'card' },
            el('h2', null, 'Sealed events'),
            el(
              'ol',
              null,
              ...r.events.map((e) => el('li', null, `${e.type} · ${at(e.ts)} · `, hash(e.hash))),
            ),
          ),
        );
      },
      3000,
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
