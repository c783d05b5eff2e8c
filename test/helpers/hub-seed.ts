/**
 * A hub written straight into a team store for the page's tests: a project with agents and messages
 * through the hub's own store (src/hub/hub-store.ts), and a workflow run's rows (stages, frozen agents,
 * quorum requests and replies, a signal, events) as runs-store.ts writes them.
 */

import { type Caller, HubStore } from '../../src/hub/hub-store.js';
import type { Store } from '../../src/store/engine.js';

export interface SeededHub {
  hub: HubStore;
  projectId: string;
  agents: Map<string, Caller>;
}

/** A hub project `name` with agents (name → role), all seen at `now`. */
export async function seedHub(
  store: Store,
  name: string,
  agents: Record<string, string>,
  now: () => number = Date.now,
): Promise<SeededHub> {
  const hub = new HubStore(store, { now });
  const { token } = await hub.createProjectToken(name);
  const auth = await hub.projectOf(token);
  if (!auth) throw new Error(`no project for the token of ${name}`);
  const callers = new Map<string, Caller>();
  for (const [agent, role] of Object.entries(agents)) {
    const { agent_id } = await hub.registerAgent(auth, agent, role);
    callers.set(agent, { agentId: agent_id, projectId: auth.projectId, name: agent });
  }
  return { hub, projectId: auth.projectId, agents: callers };
}

/** `from` sends `body` to `to`; the message's id. */
export async function sendMessage(s: SeededHub, from: string, to: string, body: string): Promise<string> {
  const caller = s.agents.get(from);
  if (!caller) throw new Error(`no agent ${from}`);
  const { message } = await s.hub.send(caller, {
    to,
    body,
    idempotency_key: `${from}-${to}-${body.length}-${Math.random()}`,
  });
  return message.id;
}

/**
 * A workflow run `runId` of workflow `review` at time `at`: a quorum stage `review` over `agents` (ids
 * from `s`) that took a reply from each, then an await_signal stage `deploy` parked with one signal
 * received and waiting.
 */
export async function seedWorkflowRun(
  store: Store,
  runId: string,
  agents: Array<{ id: string; name: string }>,
  at: number,
): Promise<void> {
  const q = (sql: string, params: unknown[]) => store.run(sql, params);
  await q(
    `INSERT INTO hub_runs (id, workflow, workflow_sha256, source, event, delivery_id, body_sha256,
       signal_secret_env, status, stage_index, created_at, updated_at, event_count, head_hash, head_mac)
     VALUES ($1, 'review', $2, 'github', 'pull_request', $3, $4, 'SIG', 'running', 1, $5, $5, 2, 'h', 'm')`,
    [runId, 'a'.repeat(64), `d-${runId}`, 'b'.repeat(64), at],
  );
  await q(
    `INSERT INTO hub_run_stages (run_id, position, id, kind, state, attempt, min_producers, started_at, ended_at)
     VALUES ($1, 0, 'review', 'quorum', 'done', 1, $2, $3, $3)`,
    [runId, agents.length, at],
  );
  await q(
    `INSERT INTO hub_run_stages (run_id, position, id, kind, state, attempt, signal, started_at)
     VALUES ($1, 1, 'deploy', 'await_signal', 'parked', 1, 'deployed', $2)`,
    [runId, at],
  );
  for (const [i, a] of agents.entries()) {
    await q(
      'INSERT INTO hub_stage_eligible (run_id, stage_id, agent_id, agent_name) VALUES ($1, $2, $3, $4)',
      [runId, 'review', a.id, a.name],
    );
    const request = `req-${runId}-${i}`;
    await q(
      `INSERT INTO hub_stage_requests (message_id, run_id, stage_id, attempt, agent_id, request_hash, body, created_at)
       VALUES ($1, $2, 'review', 1, $3, $4, 'review it', $5)`,
      [request, runId, a.id, `${i}`.repeat(64), at],
    );
    await q(
      `INSERT INTO hub_stage_replies (request_message_id, message_id, run_id, stage_id, attempt, agent_id, request_hash, reply_hash, received_at)
       VALUES ($1, $2, $3, 'review', 1, $4, $5, $6, $7)`,
      [request, `rep-${runId}-${i}`, runId, a.id, `${i}`.repeat(64), `f${i}`.repeat(32), at + 1000 + i],
    );
  }
  await q(
    `INSERT INTO hub_signals (run_id, signal_id, name, body_sha256, received_at) VALUES ($1, $2, 'deployed', $3, $4)`,
    [runId, `sig-${runId}`, 'c'.repeat(64), at + 5000],
  );
  for (const [seq, type] of ['run_started', 'stage_done'].entries())
    await q(
      `INSERT INTO hub_run_events (run_id, seq, ts, type, data, prev, hash, mac) VALUES ($1, $2, $3, $4, '{}', 'p', $5, 'm')`,
      [runId, seq + 1, at + seq, type, `${seq + 1}`.repeat(64)],
    );
}
