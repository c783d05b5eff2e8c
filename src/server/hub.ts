/**
 * The hub (`keel hub`) for the page, read from the team store the user's config names: the agents of
 * one hub project with their presence, its recent messages, and the workflow runs its agents take part
 * in, with their stages, quorum evidence (the request and reply message ids and hashes) and signals.
 *
 * Which project: the one the user's own config names (`hub_project`; a project's config may not set it).
 * Unset, the page shows no hub. A workflow run belongs to the project the hub recorded it for (a run
 * recorded with no project: when every agent frozen into its stages is the project's); any other run is
 * as unknown as none (404).
 * Message bodies go out as JSON strings, cut to MAX_BODY_CHARS; the page shows them as text.
 */
import type { Hono } from 'hono';
import { DecisionBody } from '../hub/api.js';
import { PRESENCE_MS } from '../hub/hub-store.js';
import { projectAgents } from '../hub/outbox.js';
import { readRun } from '../hub/runs-read.js';
import type { RunRow } from '../hub/runs-stages.js';
import { RunRefused, RunsStore } from '../hub/runs-store.js';
import type { Store } from '../store/engine.js';
import type { TeamStore } from './batches.js';
import { NotFound } from './sessions.js';

export const MAX_MESSAGES = 100;
export const MAX_BODY_CHARS = 2000;

interface MessageRow {
  id: string;
  sender_name: string;
  recipient_name: string;
  state: string;
  body: string;
  body_sha256: string;
  reply_to: string | null;
  created_at: number;
  expires_at: number;
}

async function projectId(store: Store, name: string): Promise<string | undefined> {
  const [row] = await store.query<{ id: string }>('SELECT id FROM hub_projects WHERE name = $1', [name]);
  return row?.id;
}

/**
 * The project's runs: the ones the hub recorded as its own (`hub_runs.project_id`); a run recorded with
 * no project (from before runs had one) is the project's when every agent frozen into it is.
 */
const OWN_RUNS = `SELECT r.id FROM hub_runs r WHERE r.project_id = $1 OR (r.project_id IS NULL AND r.id IN (
    SELECT e.run_id FROM hub_stage_eligible e LEFT JOIN hub_agents a ON a.id = e.agent_id GROUP BY e.run_id
    HAVING SUM(CASE WHEN a.project_id = $1 THEN 0 ELSE 1 END) = 0))`;

/** Whether run `id` is the project's. */
async function ownRun(store: Store, project: string, id: string): Promise<boolean> {
  return (
    (await store.query(`SELECT id FROM hub_runs WHERE id = $2 AND id IN (${OWN_RUNS})`, [project, id]))
      .length > 0
  );
}

/** The project's newest runs (another project's, however many, take no place on the list). */
async function ownRuns(store: Store, project: string, limit: number): Promise<RunRow[]> {
  const rows = await store.query<RunRow>(
    `SELECT * FROM hub_runs WHERE id IN (${OWN_RUNS}) ORDER BY created_at DESC, id LIMIT $2`,
    [project, limit],
  );
  return rows.map((r) => ({
    ...r,
    stage_index: Number(r.stage_index),
    created_at: Number(r.created_at),
    updated_at: Number(r.updated_at),
  }));
}

/** What a person decides on the page: the hub's own decision body. */
const Decision = DecisionBody;

export interface HubPageOptions {
  /** keel's audit key (the hub's, in the same KEEL_HOME): a decision is sealed into the run's chain with it. */
  auditKey?: () => Buffer | undefined | Error;
  /** Who decides on this page: the person keel serve runs as. */
  person?: string;
}

export function mountHub(
  app: Hono,
  teamStore: TeamStore | undefined,
  hubProject: string | undefined,
  page: HubPageOptions = {},
): void {
  /** The store and the project's id, or why there is no hub to show. */
  const open = async (): Promise<{ store: Store; project: string } | { none: string }> => {
    if (!hubProject) return { none: 'no hub project: set hub_project in your own config' };
    const store = await teamStore?.get();
    if (!store) return { none: 'no team store yet' };
    const project = await projectId(store, hubProject);
    if (!project) return { none: `no hub project ${hubProject} in the team store` };
    return { store, project };
  };

  app.get('/v1/hub', async (c) => {
    const hub = await open();
    if ('none' in hub)
      return c.json({ project: hubProject ?? null, reason: hub.none, agents: [], messages: [], runs: [] });
    const { store, project } = hub;
    const now = Date.now();
    const agents = await store.query<{ name: string; role: string | null; last_seen: number }>(
      'SELECT name, role, last_seen FROM hub_agents WHERE project_id = $1 ORDER BY name',
      [project],
    );
    const messages = await store.query<MessageRow>(
      `SELECT m.id, s.name AS sender_name, r.name AS recipient_name, m.state, m.body, m.body_sha256,
              m.reply_to, m.created_at, m.expires_at
         FROM hub_messages m JOIN hub_agents s ON s.id = m.sender_id JOIN hub_agents r ON r.id = m.recipient_id
        WHERE m.project_id = $1 ORDER BY m.created_at DESC, m.id LIMIT $2`,
      [project, MAX_MESSAGES],
    );
    const runs = await ownRuns(store, project, 200);
    return c.json({
      project: hubProject,
      agents: agents.map((a) => ({
        name: a.name,
        role: a.role,
        online: Number(a.last_seen) > now - PRESENCE_MS,
        last_seen: Number(a.last_seen),
      })),
      messages: messages.map((m) => {
        const expired = (m.state === 'queued' || m.state === 'delivered') && Number(m.expires_at) <= now;
        return {
          id: m.id,
          from: m.sender_name,
          to: m.recipient_name,
          state: expired ? 'expired' : m.state,
          body: m.body.length > MAX_BODY_CHARS ? m.body.slice(0, MAX_BODY_CHARS) : m.body,
          body_truncated: m.body.length > MAX_BODY_CHARS,
          body_sha256: m.body_sha256,
          reply_to: m.reply_to,
          created_at: Number(m.created_at),
        };
      }),
      runs: runs.map((r) => ({
        id: r.id,
        workflow: r.workflow,
        status: r.status,
        event: r.event,
        stage_index: r.stage_index,
        created_at: r.created_at,
        updated_at: r.updated_at,
      })),
    });
  });

  app.get('/v1/hub/runs/:id', async (c) => {
    const id = c.req.param('id');
    const hub = await open();
    // another project's run is as unknown as none
    if ('none' in hub || !(await ownRun(hub.store, hub.project, id)))
      throw new NotFound(`no workflow run ${id}`);
    const { store } = hub;
    const run = await readRun(store, id);
    if (!run) throw new NotFound(`no workflow run ${id}`);
    const replies = await store.query<{
      request_message_id: string;
      message_id: string;
      stage_id: string;
      attempt: number;
      agent_id: string;
      request_hash: string;
      reply_hash: string;
      received_at: number;
    }>(
      `SELECT request_message_id, message_id, stage_id, attempt, agent_id, request_hash, reply_hash, received_at
         FROM hub_stage_replies WHERE run_id = $1 ORDER BY received_at, message_id`,
      [id],
    );
    const signals = await store.query<{
      signal_id: string;
      name: string;
      body_sha256: string;
      received_at: number;
      consumed_stage: string | null;
    }>(
      `SELECT signal_id, name, body_sha256, received_at, consumed_stage
         FROM hub_signals WHERE run_id = $1 ORDER BY received_at, signal_id`,
      [id],
    );
    const names = new Map(run.stages.flatMap((s) => s.eligible.map((e) => [e.agent_id, e.agent_name])));
    return c.json({
      id: run.id,
      workflow: run.workflow,
      workflow_sha256: run.workflow_sha256,
      source: run.source,
      event: run.event,
      status: run.status,
      stage_index: run.stage_index,
      created_at: run.created_at,
      updated_at: run.updated_at,
      stages: run.stages.map((s) => ({
        id: s.id,
        kind: s.kind,
        state: s.state,
        attempt: s.attempt,
        min_producers: s.min_producers === null ? null : Number(s.min_producers),
        producers: s.producers ?? null,
        signal: s.signal,
        agents: s.eligible.map((e) => e.agent_name),
        // a person's decision on an approval stage, from the run's sealed events (its last one wins)
        decision:
          run.events
            .filter(
              (e) =>
                (e.type === 'stage_approved' || e.type === 'stage_rejected') &&
                e.data.stage === s.id &&
                e.data.attempt === s.attempt,
            )
            .map((e) => ({
              decision: String(e.data.decision),
              by: String(e.data.by),
              reason: typeof e.data.reason === 'string' ? e.data.reason : null,
              at: e.ts,
            }))
            .at(-1) ?? null,
        evidence: replies
          .filter((r) => r.stage_id === s.id)
          .map((r) => ({
            agent: names.get(r.agent_id) ?? r.agent_id,
            attempt: Number(r.attempt),
            request_message_id: r.request_message_id,
            reply_message_id: r.message_id,
            request_hash: r.request_hash,
            reply_hash: r.reply_hash,
            received_at: Number(r.received_at),
          })),
      })),
      signals: signals.map((s) => ({
        id: s.signal_id,
        name: s.name,
        body_sha256: s.body_sha256,
        received_at: Number(s.received_at),
        consumed_by: s.consumed_stage,
      })),
      events: run.events.map((e) => ({ seq: e.seq, ts: e.ts, type: e.type, hash: e.hash })),
    });
  });

  // a person decides a parked approval stage from the page: keel serve's token is the person's (no
  // session's sandboxed command sees it); the decision is sealed with keel's audit key, as the hub does
  app.post('/v1/hub/runs/:id/stages/:stage/approval', async (c) => {
    const id = c.req.param('id');
    const hub = await open();
    if ('none' in hub || !(await ownRun(hub.store, hub.project, id)))
      throw new NotFound(`no workflow run ${id}`);
    let raw: unknown;
    try {
      raw = JSON.parse((await c.req.text()) || '{}');
    } catch {
      return c.json({ code: 'BAD_REQUEST', error: 'the request body is not JSON' }, 400);
    }
    const parsed = Decision.safeParse(raw);
    if (!parsed.success)
      return c.json(
        { code: 'BAD_REQUEST', error: 'the body is {"decision": "approve"|"reject", "reason"?: text}' },
        400,
      );
    const key = page.auditKey?.();
    if (!(key instanceof Buffer))
      return c.json(
        {
          code: 'ENVIRONMENT_ERROR',
          error: `no audit key to seal the decision with${key instanceof Error ? `: ${key.message}` : ''}; decide it with keel hub runs approve`,
        },
        503,
      );
    const runs = new RunsStore(hub.store, { key, agents: projectAgents(hubProject ?? '') });
    try {
      const receipt = await runs.decide({
        runId: id,
        stageId: c.req.param('stage'),
        decision: parsed.data.decision,
        by: `keel serve (${page.person ?? 'its user'})`,
        ...(parsed.data.reason !== undefined ? { reason: parsed.data.reason } : {}),
        projectId: hub.project,
      });
      return c.json(receipt);
    } catch (err) {
      if (!(err instanceof RunRefused)) throw err;
      if (err.status === 404) throw new NotFound(err.message);
      return c.json({ code: err.code, error: err.message }, err.status);
    }
  });
}
