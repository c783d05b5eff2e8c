/**
 * The hub's outbox: a workflow run's stage requests (`hub_stage_requests`) become hub messages in the
 * eligible agents' inboxes, in the transaction that records them. The sender is the project's system
 * agent `@hub`: a row in `hub_agents` (so the messages' foreign keys hold) under a name no one can
 * register or address (agent names start with a letter or digit) and with no key, so no caller is it.
 * The message id is the request's id and its body exactly the stored body, so a reply to it names the
 * request and the request's hash is the hash of what the agent read.
 */
import { randomBytes } from 'node:crypto';
import type { Sql } from '../store/engine.js';
import { nextSeq } from '../store/streams.js';
import { LIMITS } from './hub-store.js';
import type { AgentDirectory } from './runs-store.js';
import { sha256 } from './tokens.js';

/** The name of each project's system agent, the sender of its workflow runs' requests. */
export const HUB_SENDER = '@hub';

/** The project's system agent, made on first use. */
async function hubSender(tx: Sql, projectId: string, now: number): Promise<string> {
  await tx.run(
    `INSERT INTO hub_agents (id, project_id, name, role, created_at, last_seen) VALUES ($1, $2, $3, 'system', $4, $4)
     ON CONFLICT (project_id, name) DO NOTHING`,
    [`a_${randomBytes(12).toString('hex')}`, projectId, HUB_SENDER, now],
  );
  const [row] = await tx.query<{ id: string }>(
    'SELECT id FROM hub_agents WHERE project_id = $1 AND name = $2',
    [projectId, HUB_SENDER],
  );
  if (!row) throw new Error(`project ${projectId}: no system agent after inserting it`);
  return row.id;
}

/**
 * Put a stage request in its agent's inbox, when the run belongs to a hub project (a run without one,
 * started by code that serves no hub, keeps its requests in the outbox only).
 */
export async function deliverRequest(
  tx: Sql,
  request: { messageId: string; runId: string; agentId: string; body: string; now: number },
): Promise<boolean> {
  const [run] = await tx.query<{ project_id: string | null }>(
    'SELECT project_id FROM hub_runs WHERE id = $1',
    [request.runId],
  );
  if (!run?.project_id) return false;
  const [agent] = await tx.query<{ id: string }>(
    'SELECT id FROM hub_agents WHERE id = $1 AND project_id = $2',
    [request.agentId, run.project_id],
  );
  if (!agent) throw new Error(`run ${request.runId}: agent ${request.agentId} is not in the run's project`);
  const sender = await hubSender(tx, run.project_id, request.now);
  const seq = await nextSeq(tx, `hub:${request.agentId}`);
  await tx.run(
    `INSERT INTO hub_messages (id, project_id, sender_id, recipient_id, seq, state, body, body_sha256, reply_to, hop,
       idempotency_key, request_sha256, created_at, expires_at)
     VALUES ($1, $2, $3, $4, $5, 'queued', $6, $7, NULL, 0, $8, $7, $9, $10)`,
    [
      request.messageId,
      run.project_id,
      sender,
      request.agentId,
      seq,
      request.body,
      sha256(request.body),
      `stage-request:${request.messageId}`,
      request.now,
      request.now + LIMITS.maxTtlS * 1000,
    ],
  );
  return true;
}

/**
 * The agents of hub project `project` (by name), for a run's eligible sets: only that project's agents
 * resolve, and the run is recorded as the project's.
 */
export function projectAgents(project: string): AgentDirectory {
  return {
    async projectId(tx) {
      const [row] = await tx.query<{ id: string }>('SELECT id FROM hub_projects WHERE name = $1', [project]);
      return row?.id;
    },
    async resolve(tx, names) {
      if (!names.length) return new Map();
      const marks = names.map((_, i) => `$${i + 2}`).join(', ');
      const rows = await tx.query<{ id: string; name: string }>(
        `SELECT a.id, a.name FROM hub_agents a JOIN hub_projects p ON p.id = a.project_id
         WHERE p.name = $1 AND a.name IN (${marks})`,
        [project, ...names],
      );
      return new Map(rows.map((r) => [r.name, r.id]));
    },
  };
}
