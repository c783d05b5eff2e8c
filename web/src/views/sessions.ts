/**
 * The session list (this project's, newest first; subagents and forks under their parent) and the agent
 * tree of one session. A fork is a session branched from another, not an agent: it is listed under its
 * source, marked as a fork, and counted in neither the Agents column nor the agent tree.
 */
import { api } from '../api.js';
import { count, el, money, replace, short, stateBadge, when } from '../dom.js';
import type { Stop } from '../main.js';
import { poll } from '../poll.js';
import type { Session } from '../types.js';

export function sessionList(main: HTMLElement): Stop {
  const body = el('div', { attrs: { 'aria-live': 'polite' } }, el('p', { class: 'muted' }, 'Loading…'));
  const error = el('p', { class: 'error', attrs: { role: 'alert' } });
  // keel serve serves one project: the list is that project's, and says which
  const project = el('p', { class: 'project muted' });
  const search = el('input', {
    attrs: {
      id: 'session-search',
      type: 'search',
      autocomplete: 'off',
      placeholder: 'words of the first message',
    },
  });
  const state = el(
    'select',
    { attrs: { id: 'session-state' } },
    el('option', { attrs: { value: '' } }, 'any state'),
    ...STATES.map((s) => el('option', { attrs: { value: s } }, s === 'waiting' ? 'waiting for approval' : s)),
  );
  const filters = el(
    'div',
    { class: 'session-filters', attrs: { role: 'search', 'aria-label': 'Sessions' } },
    el('div', null, el('label', { attrs: { for: 'session-search' } }, 'Search sessions'), search),
    el('div', null, el('label', { attrs: { for: 'session-state' } }, 'State'), state),
  );
  main.append(
    el(
      'div',
      { class: 'title-row' },
      el('h1', null, 'Sessions'),
      el('a', { class: 'button', attrs: { href: '#/new' } }, 'New session'),
    ),
    project,
    filters,
    error,
    body,
  );
  let last = '';
  let all: Session[] | null = null;
  const show = () => {
    if (!all) return;
    const q = search.value.trim().toLowerCase();
    const shown = all.filter(
      (s) =>
        (!state.value || s.state === state.value) &&
        (!q || `${s.prompt}\n${s.session_id}`.toLowerCase().includes(q)),
    );
    const key = JSON.stringify([
      q,
      state.value,
      shown.map((s) => [s.session_id, s.state, s.cost_usd, s.children.length]),
    ]);
    if (key === last) return;
    last = key;
    replace(
      body,
      all.length === 0
        ? el('p', { class: 'muted' }, 'No sessions yet.')
        : shown.length === 0
          ? el('p', { class: 'muted' }, 'No session matches.')
          : table(shown),
    );
  };
  search.addEventListener('input', show);
  state.addEventListener('change', show);
  return poll(
    async (signal) => {
      const res = await api<{ project?: string; sessions: Session[] }>('/v1/sessions', { signal });
      error.textContent = '';
      if (res.project) project.textContent = `This project's sessions: ${res.project}`;
      all = res.sessions;
      show();
    },
    2000,
    (err) => {
      error.textContent = err.message;
    },
  );
}

const STATES = ['running', 'waiting', 'completed', 'failed', 'cancelled'] as const;

function table(sessions: Session[]): HTMLElement {
  const byId = new Map(sessions.map((s) => [s.session_id, s]));
  const tbody = el('tbody');
  const add = (s: Session, depth: number) => {
    tbody.appendChild(row(s, depth, byId));
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

/** A fork: branched from its parent by a person, not an agent its parent started. */
export function isFork(s: Session): boolean {
  return s.forked_at !== null && s.forked_at !== undefined;
}

/** The subagents of `s` among `sessions` (its children that are not forks). */
function subagents(s: Session, byId: Map<string, Session>): Session[] {
  return s.children.map((c) => byId.get(c)).filter((c): c is Session => !!c && !isFork(c));
}

function row(s: Session, depth: number, byId: Map<string, Session>): HTMLElement {
  const link = el('a', { attrs: { href: `#/s/${s.session_id}` } }, short(s.prompt || s.session_id, 90));
  const cell = el(
    'td',
    { class: 'prompt', attrs: { 'data-label': 'Session' } },
    depth > 0
      ? el('span', { class: 'indent', attrs: { 'aria-hidden': 'true' } }, `${'  '.repeat(depth - 1)}└ `)
      : null,
    isFork(s) && depth > 0 ? el('span', { class: 'kind' }, 'fork ') : null,
    link,
  );
  const agents = subagents(s, byId).length;
  return el(
    'tr',
    {
      attrs: {
        'data-session': s.session_id,
        'data-state': s.state,
        'data-depth': String(depth),
        'data-kind': depth === 0 ? 'session' : isFork(s) ? 'fork' : 'subagent',
      },
    },
    cell,
    el('td', { attrs: { 'data-label': 'State' } }, stateBadge(s.state)),
    el('td', { attrs: { 'data-label': 'Mode' } }, s.mode),
    el('td', { attrs: { 'data-label': 'Cost' } }, money(s.cost_usd)),
    el('td', { attrs: { 'data-label': 'Started' } }, when(s.started_at)),
    el('td', { attrs: { 'data-label': 'Agents' } }, agents ? String(agents) : '—'),
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

/**
 * The agent tree around `id`: from the session that started its line of agents down, with counts of the
 * subagents' states; null when there is no agent to show (no subagent, and not one itself).
 */
export function agentTree(id: string, sessions: Session[]): HTMLElement | null {
  const byId = new Map(sessions.map((s) => [s.session_id, s]));
  let root = byId.get(id);
  // a fork's source is not its parent agent: the line of agents stops there
  for (let i = 0; root && !isFork(root) && root.parent_id && byId.has(root.parent_id) && i < 16; i++)
    root = byId.get(root.parent_id);
  if (!root || subagents(root, byId).length === 0) return null;
  const all: Session[] = [];
  const node = (s: Session, depth: number): HTMLElement => {
    all.push(s);
    const label =
      s.session_id === id
        ? el('strong', { attrs: { 'aria-current': 'true' } }, short(s.prompt || s.session_id, 50))
        : el('a', { attrs: { href: `#/s/${s.session_id}` } }, short(s.prompt || s.session_id, 50));
    const li = el('li', null, label, ' ', stateBadge(s.state));
    const kids = subagents(s, byId);
    if (kids.length && depth < 8) li.appendChild(el('ul', null, ...kids.map((k) => node(k, depth + 1))));
    return li;
  };
  const tree = el('ul', { class: 'tree' }, node(root, 0));
  const c = counts(all.slice(1));
  const states = [
    c.running ? `${c.running} running` : '',
    c.done ? `${c.done} done` : '',
    c.failed ? `${c.failed} failed` : '',
  ].filter(Boolean);
  return el(
    'div',
    null,
    el('p', { class: 'facts' }, `${count(all.length - 1, 'subagent')}: ${states.join(' · ')}`),
    tree,
  );
}
