/** One session: its facts, live transcript, the approvals waiting for a person, messages, and its agent tree. */
import { Activity } from '../activity.js';
import { api } from '../api.js';
import { diffBlock, el, money, replace, short, stateBadge, when } from '../dom.js';
import { takeDraft, visitSession } from '../draft.js';
import type { Stop } from '../main.js';
import { poll } from '../poll.js';
import { openStream } from '../stream.js';
import { Transcript, toLogEvent } from '../transcript.js';
import type { Approval, Delta, Session, SessionState } from '../types.js';
import { RoundCharts } from './rounds.js';
import { agentTree } from './sessions.js';

export function tokenTotal(t: Session['tokens']): number {
  return typeof t === 'number' ? t : (t?.input ?? 0) + (t?.output ?? 0);
}

/** The state a terminal code stands for. */
function stateOfCode(code: string): SessionState {
  return code === 'COMPLETED' ? 'completed' : code === 'CANCELLED' ? 'cancelled' : 'failed';
}

/**
 * The state the page shows: the server's (is a turn of it running here?), refined by the log the page
 * follows: a question waiting is "waiting", a turn whose end is logged has ended.
 */
export function shownState(
  server: SessionState | null,
  activity: Activity,
  questions: number,
): SessionState | null {
  if (server !== 'running' && server !== 'waiting') return server;
  if (!activity.open && activity.ended !== null) return stateOfCode(activity.ended);
  return questions > 0 || activity.asked.size > 0 ? 'waiting' : 'running';
}

export function sessionView(id: string) {
  return (main: HTMLElement): Stop => {
    visitSession(id);
    const conn = document.getElementById('conn');
    const title = el('h1', { class: 'session-title' }, 'Session');
    // not a live region: a count that changes every second would be read out every second
    const status = el('p', { class: 'activity', attrs: { hidden: '' } });
    const facts = el('dl', { class: 'facts-grid' });
    const error = el('p', { class: 'error', attrs: { role: 'alert' } });
    // what the last refresh could not read (the server away): cleared as soon as one succeeds
    const stale = el('p', { class: 'error', attrs: { role: 'alert' } });
    const approvals = el('section', {
      class: 'approvals',
      attrs: { 'aria-label': 'Waiting for you', 'aria-live': 'assertive' },
    });
    const transcript = new Transcript();
    const activity = new Activity();
    const charts = new RoundCharts();
    const tree = el('div', null, el('p', { class: 'muted' }, 'Loading…'));
    // shown only when there are agents to show (never an empty "0 subagents")
    const agents = el(
      'section',
      { class: 'card agents', attrs: { hidden: '' } },
      el('h2', null, 'Agents'),
      tree,
    );
    const controls = actions(id, (msg) => (error.textContent = msg));
    const settings = settingsForm(id, (msg) => (error.textContent = msg));
    let server: Session | null = null;
    const files = el('ul', { class: 'files' });
    // one card per question, keyed by the question's id (a subagent and its parent may share a call id)
    const pending = new Map<string, HTMLElement>();

    const showApproval = (a: Approval) => {
      if (pending.has(a.id)) return;
      const card = approvalCard(
        id,
        a,
        () => settle(a.id),
        (msg) => {
          error.textContent = msg;
        },
      );
      pending.set(a.id, card);
      approvals.appendChild(card);
      if (pending.size === 1)
        card.querySelector<HTMLButtonElement>('button.allow')?.focus({ preventScroll: true });
      paint();
    };
    const settle = (questionId: string) => {
      pending.get(questionId)?.remove();
      pending.delete(questionId);
      paint();
    };

    /** The title's badge, the status line and the cancel button, from the server's view and the log. */
    let titled = '';
    const paint = () => {
      if (!server) return;
      const state = shownState(server.state, activity, pending.size) ?? server.state;
      const heading = short(server.prompt || server.session_id, 100);
      if (titled !== `${state}\u0000${heading}`) {
        titled = `${state}\u0000${heading}`;
        replace(title, heading, ' ', stateBadge(state));
      }
      const live = state === 'running' || state === 'waiting';
      const line = live && state === 'running' ? activity.line(Date.now()) : null;
      status.textContent = line ?? '';
      status.hidden = line === null;
      controls.cancel.hidden = !live;
      settings.show(server.mode, live);
    };
    const clock = setInterval(paint, 1000);

    const refresh = async (reconcile: boolean, signal?: AbortSignal) => {
      const s = await api<Session>(`/v1/sessions/${encodeURIComponent(id)}`, { signal });
      stale.textContent = '';
      server = s;
      showFacts(s);
      if (reconcile) {
        const ids = new Set(s.pending_approvals.map((a) => a.id));
        for (const questionId of [...pending.keys()]) if (!ids.has(questionId)) settle(questionId);
      }
      for (const a of s.pending_approvals) showApproval(a);
      paint();
      const { sessions } = await api<{ sessions: Session[] }>('/v1/sessions', { signal });
      const shown = agentTree(id, sessions);
      replace(tree, shown);
      agents.hidden = shown === null;
      agents.setAttribute('data-ready', '');
    };

    const showFacts = (s: Session) => {
      const rows: Array<[string, string]> = [
        ['Mode', s.mode],
        ['Model', s.model ?? 'the server’s'],
        ['Code', s.code ?? '—'],
        ['Rounds', String(s.rounds)],
        ['Tokens', String(tokenTotal(s.tokens))],
        ['Cost', money(s.cost_usd)],
        ['Started', when(s.started_at)],
        ['Ended', when(s.ended_at)],
      ];
      if (s.parent_id) rows.push([s.forked_at === null ? 'Parent' : 'Forked from', s.parent_id]);
      replace(facts, ...rows.flatMap(([k, v]) => [el('dt', null, k), el('dd', null, v)]));
      replace(
        files,
        ...(s.files_changed.length
          ? s.files_changed.map((f) => el('li', null, el('code', null, f)))
          : [
              el(
                'li',
                { class: 'muted' },
                s.state === 'running' || s.state === 'waiting' ? 'none yet' : 'none',
              ),
            ]),
      );
    };

    const stopStream = openStream(id, () => transcript.lastSeq, {
      frame(f) {
        let data: unknown;
        try {
          data = JSON.parse(f.data);
        } catch {
          return;
        }
        if (f.event === 'delta') {
          transcript.delta(data as Delta);
          if ((data as Delta).kind !== 'tool_output') activity.streamed();
        } else if (f.event === 'approval') showApproval(data as Approval);
        else if (f.event === 'approval_settled') settle(String((data as { id?: string }).id));
        else if (f.event === 'end') void refresh(false).catch(() => {});
        else {
          const ev = toLogEvent(f.event, data, f.id);
          if (!ev || !transcript.apply(ev)) return;
          activity.apply(ev);
          if (charts.apply(ev)) charts.paint();
          // a turn that starts is the server's news too (its state, its cancel)
          if (ev.type === 'session_start' || ev.type === 'session_resume')
            void refresh(false).catch(() => {});
          paint();
        }
      },
      open(resumed) {
        if (conn) conn.textContent = resumed ? 'reconnected' : 'live';
        conn?.setAttribute('data-state', 'live');
        stale.textContent = '';
        transcript.dropLive();
        if (resumed) void refresh(true).catch(() => {});
      },
      retry(ms, why) {
        if (conn) conn.textContent = `reconnecting in ${Math.ceil(ms / 100) / 10} s (${why})`;
        conn?.setAttribute('data-state', 'retry');
      },
      fatal(why) {
        if (conn) conn.textContent = '';
        error.textContent = `The event stream of ${id} is not available: ${why}`;
      },
    });
    const stopPoll = poll(
      (signal) => refresh(false, signal),
      3000,
      (err) => {
        stale.textContent = err.message;
      },
    );
    void refresh(true).catch(() => {});

    main.classList.add('wide');
    main.append(
      el(
        'div',
        { class: 'title-row' },
        title,
        el(
          'nav',
          { class: 'tabs', attrs: { 'aria-label': 'Session' } },
          el('a', { attrs: { href: `#/s/${id}`, 'aria-current': 'page' } }, 'Transcript'),
          el('a', { attrs: { href: `#/s/${id}/diff` } }, 'Diff'),
        ),
      ),
      status,
      stale,
      error,
      el(
        'div',
        { class: 'columns' },
        el(
          'div',
          { class: 'col-main' },
          approvals,
          transcript.root,
          messageForm(id, (msg) => (error.textContent = msg)),
        ),
        el(
          'aside',
          { class: 'col-side', attrs: { 'aria-label': 'About this session' } },
          el('section', { class: 'card' }, el('h2', null, 'Facts'), facts, controls.root),
          charts.root,
          el('section', { class: 'card' }, el('h2', null, 'Next turn'), settings.root),
          agents,
          el(
            'section',
            { class: 'card' },
            el('h2', null, 'Files changed'),
            files,
            el('a', { attrs: { href: `#/s/${id}/diff` } }, 'Open the diff'),
          ),
        ),
      ),
    );
    return () => {
      stopStream();
      stopPoll();
      clearInterval(clock);
      main.classList.remove('wide');
      if (conn) conn.textContent = '';
    };
  };
}

function approvalCard(id: string, a: Approval, done: () => void, fail: (msg: string) => void): HTMLElement {
  const reasonId = `reason-${a.id.replace(/[^\w-]/g, '_')}`;
  const reason = el('input', {
    attrs: { id: reasonId, type: 'text', placeholder: 'why not (sent to the model)', autocomplete: 'off' },
  });
  const allow = el('button', { class: 'allow', attrs: { type: 'button' } }, 'Allow');
  const deny = el('button', { class: 'deny', attrs: { type: 'submit' } }, 'Deny');
  const answer = async (decision: 'allow' | 'deny') => {
    allow.disabled = true;
    deny.disabled = true;
    try {
      const body: { decision: string; reason?: string } = { decision };
      if (decision === 'deny' && reason.value.trim()) body.reason = reason.value.trim();
      await api(`/v1/sessions/${encodeURIComponent(id)}/approvals/${encodeURIComponent(a.id)}`, {
        method: 'POST',
        body,
      });
      done();
    } catch (err) {
      fail((err as Error).message);
      allow.disabled = false;
      deny.disabled = false;
    }
  };
  allow.addEventListener('click', () => void answer('allow'));
  // Enter in the reason field denies with that reason
  const form = el(
    'form',
    { class: 'approval-actions' },
    allow,
    el('label', { class: 'sr', attrs: { for: reasonId } }, 'Reason to deny'),
    reason,
    deny,
  );
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    void answer('deny');
  });
  return el(
    'article',
    { class: 'approval card', attrs: { 'data-question': a.id, 'data-call': a.call_id } },
    el('h2', null, 'keel asks', a.agent ? ` (for ${a.agent})` : '', ': ', el('code', null, a.tool)),
    el('p', { class: 'question' }, a.question),
    a.diff
      ? diffBlock(a.diff)
      : el('pre', { class: 'output' }, typeof a.args === 'string' ? a.args : JSON.stringify(a.args, null, 2)),
    form,
  );
}

function messageForm(id: string, fail: (msg: string) => void): HTMLElement {
  const text = el('textarea', {
    attrs: { id: 'message', rows: '2', placeholder: 'Steer the run, or start the next turn' },
  });
  const send = el('button', { attrs: { type: 'submit' } }, 'Send');
  const status = el('span', { class: 'muted', attrs: { role: 'status' } });
  const form = el(
    'form',
    { class: 'message-form' },
    el('label', { attrs: { for: 'message' } }, 'Message'),
    text,
    el('div', { class: 'actions' }, send, status),
  );
  text.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      form.requestSubmit();
    }
  });
  // a selection the person sent from the file viewer: in the box once the form is on the page
  queueMicrotask(() => takeDraft(text));
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    if (!text.value.trim()) return;
    send.disabled = true;
    try {
      const r = await api<{ delivered: string }>(`/v1/sessions/${encodeURIComponent(id)}/messages`, {
        method: 'POST',
        body: { text: text.value },
      });
      text.value = '';
      status.textContent = r.delivered === 'steer' ? 'sent to the running turn' : 'started a new turn';
    } catch (err) {
      fail((err as Error).message);
    } finally {
      send.disabled = false;
    }
  });
  return form;
}

/** Cancel (shown only while a turn runs) and Fork. */
function actions(id: string, fail: (msg: string) => void): { root: HTMLElement; cancel: HTMLButtonElement } {
  const cancel = el('button', { class: 'secondary', attrs: { type: 'button', hidden: '' } }, 'Cancel run');
  const fork = el('button', { class: 'secondary', attrs: { type: 'button' } }, 'Fork');
  cancel.addEventListener('click', async () => {
    try {
      await api(`/v1/sessions/${encodeURIComponent(id)}/cancel`, { method: 'POST', body: {} });
    } catch (err) {
      fail((err as Error).message);
    }
  });
  fork.addEventListener('click', async () => {
    try {
      const r = await api<{ session_id: string }>(`/v1/sessions/${encodeURIComponent(id)}/fork`, {
        method: 'POST',
        body: {},
      });
      location.hash = `#/s/${r.session_id}`;
    } catch (err) {
      fail((err as Error).message);
    }
  });
  return { root: el('div', { class: 'actions' }, cancel, fork), cancel };
}

/** The mode and model the next turn runs with: POST /v1/sessions/:id/settings, disabled while a turn runs. */
function settingsForm(
  id: string,
  fail: (msg: string) => void,
): { root: HTMLElement; show(mode: string, live: boolean): void } {
  const mode = el(
    'select',
    { attrs: { id: 'next-mode' } },
    ...['ask', 'plan', 'edit', 'auto'].map((m) => el('option', { attrs: { value: m } }, m)),
  );
  const model = el('input', {
    attrs: { id: 'next-model', type: 'text', placeholder: 'unchanged', autocomplete: 'off' },
  });
  const apply = el('button', { class: 'secondary', attrs: { type: 'submit' } }, 'Apply');
  const status = el('span', { class: 'muted', attrs: { role: 'status' } });
  const form = el(
    'form',
    { class: 'settings-form' },
    el('label', { attrs: { for: 'next-mode' } }, 'Mode'),
    mode,
    el('label', { attrs: { for: 'next-model' } }, 'Model'),
    model,
    el('div', { class: 'actions' }, apply, status),
  );
  let shown = '';
  let running = false;
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    apply.disabled = true;
    try {
      const body: { mode: string; model?: string } = { mode: mode.value };
      if (model.value.trim()) body.model = model.value.trim();
      const r = await api<Session>(`/v1/sessions/${encodeURIComponent(id)}/settings`, {
        method: 'POST',
        body,
      });
      shown = r.mode;
      model.value = '';
      status.textContent = `the next turn runs in ${r.mode}${r.model ? ` with ${r.model}` : ''}`;
    } catch (err) {
      fail((err as Error).message);
    } finally {
      apply.disabled = running;
    }
  });
  return {
    root: form,
    show(current, live) {
      running = live;
      apply.disabled = live;
      apply.title = live ? 'the running turn keeps its mode; change it when it has ended' : '';
      // the person's choice stays in the box until the server's mode changes
      if (current !== shown) {
        shown = current;
        mode.value = current;
      }
    },
  };
}
