/**
 * The header's project chooser: shown only when `keel serve` serves more than one project (named at its
 * start). The choice is a name from `GET /v1/projects`, kept in localStorage so a reload opens the same
 * project; every request then carries it (api.ts `scoped`). A remembered name the server no longer
 * serves falls back to the default. A project with questions waiting says so in its option's text
 * ("docs-site — 1 waiting"), kept current by the approvals alert (alerts.ts), which reads every project.
 */
import { api, setProject } from './api.js';
import { el, replace } from './dom.js';
import { forgetSession } from './draft.js';

export interface Project {
  name: string;
  path: string;
  default: boolean;
  /** What waits for a person's answer in the project, sessions and builds (absent from an older server). */
  waiting?: number;
  /** Of those, the builds whose tests wait (absent from an older server). */
  waiting_builds?: number;
}

const CHOSEN = 'keel.project';

/** The chooser once drawn: the select and how to switch to a project (null: one project, no choice). */
let chooser: { select: HTMLSelectElement; switchTo(name: string, hash?: string): void } | null = null;

/** Where a route goes in another project: its list (an id of one project is unknown in another). */
function listOf(hash: string): string {
  const m = /^#\/(s|runs|batches|hub|files)\b/.exec(hash);
  if (!m) return hash || '#/';
  return m[1] === 's' ? '#/' : `#/${m[1]}`;
}

/** An option's text: the name, whether it is the default, and its waiting questions in words. */
function optionText(p: Project): string {
  const waiting = p.waiting ? ` — ${p.waiting} waiting` : '';
  return `${p.name}${p.default ? ' (default)' : ''}${waiting}`;
}

/** Read the served projects, set the one the page answers for, and draw the chooser when there is a choice. */
export async function chooseProject(reroute: () => void): Promise<void> {
  let projects: Project[];
  try {
    projects = (await api<{ projects: Project[] }>('/v1/projects')).projects;
  } catch {
    return; // an older server, or no token: the one project, nothing to choose
  }
  if (projects.length < 2) return;
  const saved = localStorage.getItem(CHOSEN);
  const current = projects.find((p) => p.name === saved) ?? projects.find((p) => p.default) ?? projects[0];
  if (!current) return;
  setProject(current.name);
  const holder = document.getElementById('project-choice');
  if (!holder) return;
  // the chosen project's page: another project's ids are unknown there, so a route keeps only its list
  const switchTo = (name: string, hash = listOf(location.hash)) => {
    select.value = name;
    localStorage.setItem(CHOSEN, name);
    setProject(name);
    forgetSession();
    if (hash === location.hash) reroute();
    else location.hash = hash;
  };
  const select = el(
    'select',
    { attrs: { id: 'project', name: 'project' }, on: { change: () => switchTo(select.value) } },
    ...projects.map((p) =>
      el(
        'option',
        { attrs: { value: p.name, title: p.path, ...(p === current ? { selected: '' } : {}) } },
        optionText(p),
      ),
    ),
  );
  replace(holder, el('label', { attrs: { for: 'project' } }, 'Project'), select);
  holder.hidden = false;
  holder.closest('header')?.classList.add('with-projects');
  chooser = { select, switchTo };
}

/** Whether the page chooses among projects (the header is then the narrower one). */
export function choosing(): boolean {
  return chooser !== null;
}

/** Show each project's waiting questions in its option's text. */
export function showWaiting(projects: Project[]): void {
  if (!chooser) return;
  for (const option of chooser.select.options) {
    const p = projects.find((x) => x.name === option.value);
    if (p && option.textContent !== optionText(p)) option.textContent = optionText(p);
  }
}

/** Open a route of a served project, switching to it first when it is not the chosen one. */
export function openIn(name: string | null, hash: string): void {
  if (chooser && name !== null && chooser.select.value !== name) chooser.switchTo(name, hash);
  else location.hash = hash;
}
