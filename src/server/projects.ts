/**
 * The projects one `keel serve` serves: the person names them at start (`--project DIR`, repeatable;
 * the current folder's when none is given), and every API request is answered for one of them, the one
 * its `?project=NAME` names (absent: the first, the default). A name is only ever one of the listed
 * names, compared as a string: a path, `..` or a link is no name, so a request can neither add a
 * project nor reach a folder inside one. Each project has its own session manager and fix runs, so a
 * session or run of another project is as unknown under this one as an id that does not exist. The list
 * says how many questions wait in each served project (a session's, or a build's tests), so the page can
 * tell of one waiting in a project it does not show.
 */
import { basename } from 'node:path';
import type { Context, Hono, MiddlewareHandler } from 'hono';
import type { LoadedConfig } from '../config/load.js';
import type { FixRuns } from './fixes.js';
import { fail } from './http.js';
import type { SessionManager } from './sessions.js';

/** One served project: its listed name, its folder (canonical) and what runs its sessions and fix runs. */
export interface ServedProject {
  name: string;
  project: string;
  manager: SessionManager;
  fixes: FixRuns;
  /** The project's config for a request's model and profile (ConfigError when they are wrong). */
  configFor(flags: { model?: string; profile?: string }): LoadedConfig;
}

/** The query parameter that chooses the project, as the OpenAPI document describes it. */
export const PROJECT_QUERY =
  'the served project to answer for, by its name in GET /v1/projects (absent: the default); a name not served is a 400';

/**
 * Names for the projects' folders, in the order given: the folder's own name, with `-2`, `-3` after
 * it when another served folder has the same name (the first keeps it).
 */
export function projectNames(roots: string[]): string[] {
  const taken = new Set<string>();
  return roots.map((root) => {
    const base = basename(root) || 'root';
    let name = base;
    for (let n = 2; taken.has(name); n++) name = `${base}-${n}`;
    taken.add(name);
    return name;
  });
}

/** The served project a request names, or a 400 answer naming what is not served. */
export function chosenProject(c: Context, projects: ServedProject[]): ServedProject | Response {
  const given = c.req.queries('project') ?? [];
  const fallback = projects[0] as ServedProject;
  if (given.length === 0) return fallback;
  const served = projects.map((p) => p.name).join(', ');
  if (given.length > 1)
    return fail(c, 400, 'BAD_PROJECT', `project: name one served project, not ${given.length}`);
  const name = given[0] as string;
  const found = projects.find((p) => p.name === name);
  if (!found)
    return fail(
      c,
      400,
      'BAD_PROJECT',
      `project ${JSON.stringify(name)} is not served here: this server serves ${served} (GET /v1/projects lists them)`,
    );
  return found;
}

/**
 * Answer `/v1/*` from the chosen project's own app: `GET /v1/projects` (the list, with each project's
 * count of what waits for a person: sessions and builds, and of those the builds) and the OpenAPI document
 * are the server's; every other route is the project's.
 */
export function mountProjects(app: Hono, projects: ServedProject[], apps: Map<string, Hono>): void {
  const dispatch: MiddlewareHandler = async (c, next) => {
    const chosen = chosenProject(c, projects);
    if (chosen instanceof Response) return chosen;
    const path = new URL(c.req.url).pathname;
    if (path === '/v1/projects' || path === '/v1/openapi.json') return next();
    const scoped = apps.get(chosen.name) as Hono;
    return scoped.fetch(c.req.raw, c.env);
  };
  app.use('/v1/*', dispatch);
  app.get('/v1/projects', (c) =>
    c.json({
      projects: projects.map((p, i) => {
        const builds = p.fixes.builds.waiting();
        return {
          name: p.name,
          path: p.project,
          default: i === 0,
          waiting: p.manager.counts().waiting + builds,
          waiting_builds: builds,
        };
      }),
    }),
  );
}
