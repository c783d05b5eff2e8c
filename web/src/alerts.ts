/**
 * A question waiting for a person shows outside the page too: in the tab's title ("(1) Approval waiting"),
 * in the favicon (a mark with "!" in it), and, only when the person turned it on with the header's button
 * and the browser allowed it, as a desktop notification, once per session or build that starts waiting (a
 * build's tests wait for approval as a session's question does; its notification says it is a build and
 * opens its run). A server of several projects is watched whole: the counts are every served project's
 * (`GET /v1/projects`), the chooser's options say which project waits, and a notification names its project.
 */
import { api } from './api.js';
import { short } from './dom.js';
import { poll } from './poll.js';
import { choosing, openIn, type Project, showWaiting } from './projects.js';
import type { Run, Session } from './types.js';

const BASE_TITLE = 'keel workspace';
const OPT_IN = 'keel.notify';

function icon(waiting: boolean): string {
  const svg = waiting
    ? "<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 16 16'><circle cx='8' cy='8' r='8' fill='#c25400'/><text x='8' y='12.5' font-size='12' font-family='sans-serif' font-weight='700' text-anchor='middle' fill='#fff'>!</text></svg>"
    : "<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 16 16'><circle cx='8' cy='8' r='7' fill='#0b5cad'/></svg>";
  return `data:image/svg+xml,${encodeURIComponent(svg)}`;
}

/** The sessions a person must answer: a question waits in them. */
export function waitingSessions(sessions: Session[]): Session[] {
  return sessions.filter((s) => s.state === 'waiting' || s.pending_approvals.length > 0);
}

function notificationsOn(): boolean {
  return (
    'Notification' in window && Notification.permission === 'granted' && localStorage.getItem(OPT_IN) === 'on'
  );
}

/** The header's "Notify me" button: asks the browser once, and is the person's switch after that. */
function notifyButton(): void {
  const button = document.getElementById('notify') as HTMLButtonElement | null;
  if (!button) return;
  if (!('Notification' in window)) return;
  const paint = () => {
    const on = notificationsOn();
    button.setAttribute('aria-pressed', String(on));
    // beside the project chooser the header has less room: the words that fit, the name in full, and
    // the state a mark shows (and aria-pressed says)
    if (choosing()) {
      button.textContent = on ? '✓ Notify me' : 'Notify me';
      button.setAttribute('aria-label', 'Notify me of approvals');
    } else {
      button.textContent = on ? 'Notifications on' : 'Notify me of approvals';
      button.removeAttribute('aria-label');
    }
    button.title =
      Notification.permission === 'denied' ? 'The browser blocks notifications for this page' : '';
  };
  button.hidden = false;
  button.addEventListener('click', async () => {
    if (notificationsOn()) localStorage.removeItem(OPT_IN);
    else {
      const permission = await Notification.requestPermission();
      if (permission === 'granted') localStorage.setItem(OPT_IN, 'on');
    }
    paint();
  });
  paint();
}

/** One wait a notification tells of: where it waits, what it is, and the route that answers it. */
interface Wait {
  project: string | null;
  key: string;
  title: string;
  body: string;
  hash: string;
}

/** What waits in each served project that has any: its sessions, its builds (the one project: no name to send). */
async function waitingIn(projects: Project[], signal: AbortSignal): Promise<Wait[]> {
  const found: Wait[] = [];
  for (const p of projects) {
    if (!p.waiting) continue;
    const project = projects.length > 1 ? p.name : null;
    const scope = { signal, ...(project === null ? {} : { project }) };
    const where = project === null ? '' : ` in ${project}`;
    const builds = p.waiting_builds ?? 0;
    if (p.waiting > builds) {
      const { sessions } = await api<{ sessions: Session[] }>('/v1/sessions?state=waiting', scope);
      for (const s of waitingSessions(sessions))
        found.push({
          project,
          key: `s:${s.session_id}`,
          title: `keel: approval waiting${where}`,
          body: s.prompt || s.session_id,
          hash: `#/s/${s.session_id}`,
        });
    }
    if (builds > 0) {
      const { runs } = await api<{ runs: Run[] }>('/v1/runs', scope);
      for (const r of runs)
        if (r.kind === 'build' && (r.pending_approvals?.length ?? 0) > 0)
          found.push({
            project,
            key: `r:${r.run_id}`,
            title: `keel: build approval waiting${where}`,
            body: r.title || r.run_id,
            hash: `#/runs/${r.run_id}`,
          });
    }
  }
  return found;
}

export function watchApprovals(): () => void {
  notifyButton();
  const link = document.getElementById('favicon') as HTMLLinkElement | null;
  const told = new Set<string>();
  let shown = -1;
  return poll(
    async (signal) => {
      const { projects } = await api<{ projects: Project[] }>('/v1/projects', { signal });
      showWaiting(projects);
      const count = projects.reduce((n, p) => n + (p.waiting ?? 0), 0);
      if (count !== shown) {
        shown = count;
        document.title = shown ? `(${shown}) Approval waiting · ${BASE_TITLE}` : BASE_TITLE;
        if (link) {
          link.href = icon(shown > 0);
          link.dataset.state = shown ? 'waiting' : 'idle';
        }
      }
      const waiting = count ? await waitingIn(projects, signal) : [];
      for (const w of waiting) {
        // told once per wait; a wait from before the person turned notifications on is told then
        if (told.has(w.key) || !notificationsOn()) continue;
        told.add(w.key);
        const note = new Notification(w.title, { body: short(w.body, 120), tag: `keel-${w.key}` });
        note.onclick = () => {
          window.focus();
          openIn(w.project, w.hash);
        };
      }
      // what stops waiting may wait again later, and is told again then
      for (const key of [...told]) if (!waiting.some((w) => w.key === key)) told.delete(key);
    },
    2000,
    () => {},
  );
}
