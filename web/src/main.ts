/** The browser workspace: a hash router over the views; each view returns how to stop it. */
import { watchApprovals } from './alerts.js';
import { takeToken, token } from './api.js';
import { el, replace } from './dom.js';
import { chooseProject } from './projects.js';
import { batchList, batchView } from './views/batches.js';
import { sessionDiff } from './views/diff.js';
import { fileView } from './views/files.js';
import { fixForm, sessionForm } from './views/forms.js';
import { hubRunView, hubView } from './views/hub.js';
import { runList, runView } from './views/runs.js';
import { sessionView } from './views/session.js';
import { sessionList } from './views/sessions.js';

performance.mark('keel:boot');
takeToken();

export type Stop = () => void;
export type View = (main: HTMLElement) => Stop;

const routes: Array<[RegExp, (m: RegExpExecArray) => View]> = [
  [/^#?\/?$/, () => sessionList],
  [/^#\/new$/, () => sessionForm],
  [/^#\/fix$/, () => fixForm],
  [/^#\/runs$/, () => runList],
  [/^#\/batches$/, () => batchList],
  [/^#\/batches\/([\w.-]+)$/, (m) => batchView(m[1] ?? '')],
  [/^#\/hub$/, () => hubView],
  [/^#\/hub\/runs\/([\w.-]+)$/, (m) => hubRunView(m[1] ?? '')],
  [/^#\/files\/?$/, () => fileView('')],
  [/^#\/files\/(.+)$/, (m) => fileView(m[1] ?? '')],
  [/^#\/runs\/([\w.-]+)$/, (m) => runView(m[1] ?? '')],
  [/^#\/s\/([\w.-]+)\/diff$/, (m) => sessionDiff(m[1] ?? '')],
  [/^#\/s\/([\w.-]+)$/, (m) => sessionView(m[1] ?? '')],
];

const main = document.getElementById('main') as HTMLElement;
let stop: Stop = () => {};

function route(): void {
  stop();
  const hash = location.hash;
  for (const [re, view] of routes) {
    const m = re.exec(hash);
    if (!m) continue;
    replace(main);
    stop = view(m)(main);
    markCurrent(hash);
    return;
  }
  replace(
    main,
    el('h1', null, 'Not found'),
    el('p', null, el('a', { attrs: { href: '#/' } }, 'Back to sessions')),
  );
  stop = () => {};
}

function markCurrent(hash: string): void {
  for (const a of document.querySelectorAll<HTMLAnchorElement>('nav a')) {
    const target = a.getAttribute('href') ?? '';
    if (
      target === hash ||
      (target === '#/' && (hash === '' || hash === '#/')) ||
      (target === '#/files' && hash.startsWith('#/files/')) ||
      (target === '#/batches' && hash.startsWith('#/batches/')) ||
      (target === '#/hub' && hash.startsWith('#/hub/'))
    )
      a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
}

// the skip control is a button: a #main link would be taken for a route
document.getElementById('skip')?.addEventListener('click', () => main.focus());
window.addEventListener('hashchange', route);
if (!token()) {
  document
    .getElementById('conn')
    ?.replaceChildren('no token: open the address keel serve printed (it carries #token=…)');
  route();
}
// the project is chosen before the first view asks for anything: every request names it
else
  void chooseProject(route).then(() => {
    watchApprovals();
    route();
  });
