/**
 * The HTTP API's contract: every route with its request body's zod schema, which routes need no
 * token, and the OpenAPI document generated from the same table, so the two cannot drift.
 */
import * as z from 'zod';
import { MODES } from '../config/schema.js';
import { type ApiRoute, buildOpenApiDocument } from '../http/openapi.js';
import { PROJECT_QUERY } from './projects.js';
import { SETTINGS_ROUTE } from './session-settings.js';

export const MAX_BODY_BYTES = 1024 * 1024;

export const StartBody = z
  .object({
    prompt: z.string().min(1).max(200_000),
    mode: z.enum(MODES).default('ask'),
    scope: z.string().min(1).optional(),
    model: z.string().min(1).optional(),
    profile: z.string().min(1).optional(),
    parent: z.string().min(1).optional(),
  })
  .strict();
export const MessageBody = z.object({ text: z.string().min(1).max(200_000) }).strict();
export const ApprovalBody = z
  .object({ decision: z.enum(['allow', 'deny']), reason: z.string().max(2000).optional() })
  .strict();
export const ForkBody = z
  .object({ prompt: z.string().min(1).optional(), at: z.number().int().positive().optional() })
  .strict();
export const FixBody = z
  .object({ task: z.string().min(1).max(200_000), test_command: z.string().min(1).optional() })
  .strict();
export const BuildBody = z
  .object({ feature: z.string().min(1).max(200_000), test_command: z.string().min(1).optional() })
  .strict();
/** Applying a verified fix moves the person's branch: the request says it was confirmed (the CLI's --yes). */
export const ApplyBody = z.object({ confirm: z.literal(true) }).strict();
export const MemoryAddBody = z
  .object({
    text: z.string().min(1).max(20_000),
    tags: z.array(z.string().min(1).max(64)).max(20).optional(),
  })
  .strict();

/**
 * What answers without the token: the process is up, the A2A agent card (discovery is public; it names
 * keel and its skills, nothing of the project) and the page's own files (keel's, not the project's; the
 * page reads the API with the token its address carries).
 */
export function isPublic(method: string, path: string): boolean {
  if (method !== 'GET' && method !== 'HEAD') return false;
  return (
    path === '/health' ||
    path === '/.well-known/agent-card.json' ||
    path === '/' ||
    path === '/index.html' ||
    /^\/assets\/[\w-][\w.-]*$/.test(path)
  );
}

/** Every route the server answers, for the OpenAPI document (a test checks it against the app's own). */
export const ROUTES: ApiRoute[] = [
  {
    method: 'get',
    path: '/v1/projects',
    summary:
      'the projects this server serves, named at its start: {projects: [{name, path, default, waiting, waiting_builds}]}, waiting the count of what waits for a person there (sessions with a question, builds whose tests wait), waiting_builds how many of those are builds',
  },
  { method: 'post', path: '/v1/sessions', summary: 'start a session', body: StartBody },
  {
    method: 'get',
    path: '/v1/sessions',
    summary: "the project's sessions",
    query: { state: 'running|waiting|completed|failed|cancelled' },
  },
  { method: 'get', path: '/v1/sessions/:id', summary: 'one session' },
  {
    method: 'get',
    path: '/v1/sessions/:id/events',
    summary: 'the session as a stream (SSE): stored events from Last-Event-ID or ?after=, then live',
    query: { after: 'a seq' },
    stream: true,
  },
  { method: 'get', path: '/v1/sessions/:id/diff', summary: 'unified diffs of the files the session changed' },
  {
    method: 'post',
    path: '/v1/sessions/:id/messages',
    summary: 'steer a running turn, or start the next one',
    body: MessageBody,
  },
  {
    method: 'post',
    path: '/v1/sessions/:id/approvals/:question',
    summary:
      "answer a question the session waits on, named by its id (pending_approvals[].id, not the model's call_id)",
    body: ApprovalBody,
  },
  { method: 'post', path: '/v1/sessions/:id/cancel', summary: 'cancel the running turn' },
  {
    method: 'post',
    path: '/v1/sessions/:id/fork',
    summary: 'branch the session (and go on in the branch with prompt)',
    body: ForkBody,
  },
  SETTINGS_ROUTE,
  { method: 'post', path: '/v1/fix', summary: 'start a fix run', body: FixBody },
  {
    method: 'post',
    path: '/v1/build',
    summary: 'start a keel build run: tests first, which wait for a person (pending_approvals on the run)',
    body: BuildBody,
  },
  {
    method: 'get',
    path: '/v1/runs',
    summary: "the project's fix and loop runs, and the builds this server started",
  },
  { method: 'get', path: '/v1/runs/:id', summary: 'one run: verdict, attempts, rationale, PR text, diff' },
  {
    method: 'post',
    path: '/v1/runs/:id/apply',
    summary: "fast-forward the project's checked-out branch to a verified fix (as keel runs apply)",
    body: ApplyBody,
  },
  {
    method: 'post',
    path: '/v1/runs/:id/approvals/:question',
    summary:
      "answer a build run's waiting question (its tests), named by pending_approvals[].id: {decision: allow|deny, reason?}",
    body: ApprovalBody,
  },
  { method: 'get', path: '/v1/runs/:id/patch', summary: "a verified fix's diff, as a patch file" },
  {
    method: 'get',
    path: '/v1/memory/search',
    summary: "search the project's memory",
    query: { q: 'the query', k: 'how many' },
  },
  { method: 'post', path: '/v1/memory', summary: 'add a note to memory', body: MemoryAddBody },
  {
    method: 'get',
    path: '/v1/files',
    summary: 'one folder of the project, read-only (no .git, no credential files, no links out)',
    query: { dir: 'a folder relative to the project (the top when absent)' },
  },
  {
    method: 'get',
    path: '/v1/files/content',
    summary:
      'one text file of the project, read-only (refused: outside, .git, credentials, binary, over 1 MiB)',
    query: { path: 'a file relative to the project' },
  },
  {
    method: 'get',
    path: '/v1/batches',
    summary: "this project's batch runs (keel batch), from the team store",
  },
  {
    method: 'get',
    path: '/v1/batches/:id',
    summary: "one batch run: progress, each task's state and verdict, spend over time, the ledger",
  },
  {
    method: 'get',
    path: '/v1/hub',
    summary:
      'the hub project the user config names (hub_project): agents and presence, recent messages, its workflow runs',
  },
  {
    method: 'get',
    path: '/v1/hub/runs/:id',
    summary: "one of that project's workflow runs: stages, quorum evidence, signals, sealed events",
  },
  {
    method: 'post',
    path: '/v1/hub/runs/:id/stages/:stage/approval',
    summary:
      "decide one of that project's runs' parked approval stage as the person keel serve runs as: {decision: approve|reject, reason?}",
  },
  { method: 'get', path: '/v1/openapi.json', summary: 'this document' },
  { method: 'get', path: '/health', summary: 'the process is up' },
  { method: 'get', path: '/ready', summary: 'the store answers' },
  { method: 'get', path: '/metrics', summary: 'Prometheus text' },
];

/** Whether a route answers for one served project, chosen by `?project=` (projects.ts). */
function projectScoped(path: string): boolean {
  return path.startsWith('/v1/') && path !== '/v1/projects' && path !== '/v1/openapi.json';
}

export function openApiDocument(version: string): Record<string, unknown> {
  const routes = ROUTES.map((r) =>
    projectScoped(r.path) ? { ...r, query: { ...r.query, project: PROJECT_QUERY } } : r,
  );
  return buildOpenApiDocument({ title: 'keel serve', version }, routes, (r) => ({
    success: r.method === 'post' && !r.path.includes('/approvals/') ? '2XX' : '200',
    bearer: !isPublic(r.method.toUpperCase(), r.path),
  }));
}
