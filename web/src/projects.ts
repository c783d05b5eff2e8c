/**
 * The header's project chooser: shown only when `keel serve` serves more than one project (named at its
 * start). The choice is a name from `GET /v1/projects`, kept in localStorage so a reload opens the same
 * project; every request then carries it (api.ts `scoped`). A remembered name the server no longer
 * serves falls back to the default.
 */
import { api, setProject } from './api.js';
import { el, replace } from './dom.js';
import { forgetSession } from './draft.js';

interface Project {
  name: string;
  path: string;
  default: boolean;
}

const CHOSEN = 'keel.project';

/** Where a route goes in another project: its list (an id of one project is unknown in another). */
function listOf(hash: string): string {
  const m = /^#\/(s|runs|batches|hub|files)\b/.exec(hash);
  if (!m) return hash || '#/';
  return m[1] === 's' ? '#/' : `#/${m[1]}`;
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
  const select = el(
    'select',
    {
      attrs: { id: 'project', name: 'project' },
      on: {
        change: () => {
          const name = select.value;
          localStorage.setItem(CHOSEN, name);
          setProject(name);
          forgetSession();
          const next = listOf(location.hash);
          if (next === location.hash) reroute();
          else location.hash = next;
        },
      },
    },
    ...projects.map((p) =>
      el(
        'option',
        { attrs: { value: p.name, title: p.path, ...(p === current ? { selected: '' } : {}) } },
        p.default ? `${p.name} (default)` : p.name,
      ),
    ),
  );
  replace(holder, el('label', { attrs: { for: 'project' } }, 'Project'), select);
  holder.hidden = false;
}
