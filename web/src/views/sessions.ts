/** The session list (newest first, children under their parent) and the agent tree of one session. */
import { api } from '../api.js';
import { badge, el, money, replace, short, when } from '../dom.js';
import type { Stop } from '../main.js';
import { poll } from '../poll.js';
import type { Session } from '../types.js';

export function sessionList(main: HTMLElement): Stop {
  const body = el('div', { attrs: { 'aria-live': 'polite' } }, el('p', { class: 'muted' }, 'Loading…'));
  const error = el('p', { class: 'error', attrs: { role: 'alert' } });
  main.append(
    el(
      'div',
      { class: 'title-row' },
      el('h1', null, 'Sessions'),
      el('a', { class: 'button', attrs: { href: '#/new' } }, 'New session'),
    ),
    error,
    body,
  );
  let last = '';
  return poll(
    async (signal) => {
      const { sessions } = await api<{ sessions: Session[] }>('/v1/sessions', { signal });
      error.textContent = '';
      const key = JSON.stringify(sessions.map((s) => [s.session_id, s.state, s.cost_usd, s.children.length]));
      if (key === last) return;
      last = key;
      replace(
        body,
        sessions.length === 0 ? el('p', { class: 'muted' }, 'No sessions yet.') : table(sessions),
      );
    },
    2000,
    (err) => {
      error.textContent = err.message;
    },
  );
}

function table(sessions: Session[]): HTMLElement {
  const byId = new Map(sessions.map((s) => [s.session_id, s]));
  const tbody = el('tbody');
  const add = (s: Session, depth: number) => {
    tbody.appendChild(row(s, depth));
    for (const child of s.children) {
      const c = byId.get(child);
      if (c && depth < 8) add(c, depth + 1);
    }
  };
  for (const s of sessions) if (!s.parent_id || !byId.has(s.parent_id)) add(s, 0);
  return el(
    'table',
    { class: 'list sessions' },
    el(
      'thead',
      null,
      el(
        'tr',
        null,
        ...['Session', 'State', 'Mode', 'Cost', 'Started', 'Agents'].map((h) =>
          el('th', { attrs: { scope: 'col' } }, h),
        ),
      ),
    ),
    tbody,
  );
}

function row(s: Session, depth: number): HTMLElement {
  const link = el('a', { attrs: { href: `#/s/${s.session_id}` } }, short(s.prompt || s.session_id, 90));
  const cell = el(
    'td',
    { class: 'prompt', attrs: { 'data-label': 'Session' } },
    depth > 0
      ? el('span', { class: 'indent', attrs: { 'aria-hidden': 'true' } }, `${'  '.repeat(depth - 1)}└ `)
      : null,
    link,
  );
  return el(
    'tr',
    { attrs: { 'data-session': s.session_id, 'data-state': s.state } },
    cell,
    el(
      'td',
      { attrs: { 'data-label': 'State' } },
      badge(s.state),
      s.pending_approvals?.length ? el('span', { class: 'waiting' }, ' needs you') : null,
    ),
    el('td', { attrs: { 'data-label': 'Mode' } }, s.mode),
    el('td', { attrs: { 'data-label': 'Cost' } }, money(s.cost_usd)),
    el('td', { attrs: { 'data-label': 'Started' } }, when(s.started_at)),
    el('td', { attrs: { 'data-label': 'Agents' } }, s.children.length ? String(s.children.length) : '—'),
  );
}

/** Running / done / failed counts over a set of sessions. */
export function counts(sessions: Session[]): { running: number; done: number; failed: number } {
  const c = { running: 0, done: 0, failed: 0 };
  for (const s of sessions) {
    if (s.state === 'running' || s.state === 'waiting') c.running += 1;
    else if (s.state === 'completed') c.done += 1;
    else c.failed += 1;
  }
  return c;
}

/** The agent tree around `id`: from its root down, with counts of the descendants' states. */
export function agentTree(id: string, sessions: Session[]): HTMLElement {
  const byId = new Map(sessions.map((s) => [s.session_id, s]));
  let root = byId.get(id);
  for (let i = 0; root?.parent_id && byId.has(root.parent_id) && i < 16; i++) root = byId.get(root.parent_id);
  if (!root) return el('p', { class: 'muted' }, 'Not in the session list.');
  const all: Session[] = [];
  const node = (s: Session, depth: number): HTMLElement => {
    all.push(s);
    const label =
      s.session_id === id
        ? el('strong', { attrs: { 'aria-current': 'true' } }, short(s.prompt || s.session_id, 50))
        : el('a', { attrs: { href: `#/s/${s.session_id}` } }, short(s.prompt || s.session_id, 50));
    const li = el('li', null, label, ' ', badge(s.state));
    const kids = s.children.map((c) => byId.get(c)).filter((c): c is Session => !!c);
    if (kids.length && depth < 8) li.appendChild(el('ul', null, ...kids.map((k) => node(k, depth + 1))));
    return li;
  };
  const tree = el('ul', { class: 'tree' }, node(root, 0));
  const c = counts(all.slice(1));
  return el(
    'div',
    null,
    el(
      'p',
      { class: 'facts' },
      `${all.length - 1} subagents: ${c.running} running · ${c.done} done · ${c.failed} failed`,
    ),
    tree,
  );
}
