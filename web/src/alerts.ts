/**
 * A question waiting for a person shows outside the page too: in the tab's title ("(1) Approval waiting"),
 * in the favicon (a mark with "!" in it), and, only when the person turned it on with the header's button
 * and the browser allowed it, as a desktop notification, once per session that starts waiting.
 */
import { api } from './api.js';
import { short } from './dom.js';
import { poll } from './poll.js';
import type { Session } from './types.js';

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
    button.textContent = on ? 'Notifications on' : 'Notify me of approvals';
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

export function watchApprovals(): () => void {
  notifyButton();
  const link = document.getElementById('favicon') as HTMLLinkElement | null;
  const told = new Set<string>();
  let shown = -1;
  return poll(
    async (signal) => {
      const { sessions } = await api<{ sessions: Session[] }>('/v1/sessions', { signal });
      const waiting = waitingSessions(sessions);
      if (waiting.length !== shown) {
        shown = waiting.length;
        document.title = shown ? `(${shown}) Approval waiting · ${BASE_TITLE}` : BASE_TITLE;
        if (link) {
          link.href = icon(shown > 0);
          link.dataset.state = shown ? 'waiting' : 'idle';
        }
      }
      for (const s of waiting) {
        // told once per wait; a wait from before the person turned notifications on is told then
        if (told.has(s.session_id) || !notificationsOn()) continue;
        told.add(s.session_id);
        const note = new Notification('keel: approval waiting', {
          body: short(s.prompt || s.session_id, 120),
          tag: `keel-${s.session_id}`,
        });
        note.onclick = () => {
          window.focus();
          location.hash = `#/s/${s.session_id}`;
        };
      }
      // a session that stops waiting may wait again later, and is told again then
      for (const id of [...told]) if (!waiting.some((s) => s.session_id === id)) told.delete(id);
    },
    2000,
    () => {},
  );
}
