/**
 * The team store's schema (run queue, ledger), versioned for both engines. Each entry holds the same
 * change in SQLite's and PostgreSQL's words; append one, never edit a shipped entry. The version is
 * kept in `store_version`, apart from keel.db's own schema_version (store/db.ts), so that the same
 * list brings a fresh PostgreSQL database and an old keel.db to the same tables.
 */
import type { Sql, Store } from './engine.js';

interface Migration {
  sqlite: string;
  postgres: string;
}

/** One change both engines say the same way (TEXT, BIGINT, DOUBLE PRECISION, CHECK and upserts are common ground). */
function same(sql: string): Migration {
  return { sqlite: sql, postgres: sql };
}

const MIGRATIONS: Migration[] = [
  // numbered streams (store/streams.ts): one row per stream, its counter bumped under the row's lock
  same(`CREATE TABLE streams (
     name TEXT PRIMARY KEY,
     last_seq BIGINT NOT NULL
   )`),
  // the run queue (store/queue.ts): runs with their concurrency cap as a checked counter, tasks with
  // their lease, one row per attempt, and each run's journal numbered per run
  same(`CREATE TABLE queue_runs (
     id TEXT PRIMARY KEY,
     created_at BIGINT NOT NULL,
     updated_at BIGINT NOT NULL,
     concurrency INTEGER NOT NULL CHECK (concurrency > 0),
     running INTEGER NOT NULL DEFAULT 0 CHECK (running >= 0 AND running <= concurrency),
     status TEXT NOT NULL CHECK (status IN ('running', 'paused_provider', 'cancelled')),
     status_reason TEXT,
     spec TEXT NOT NULL
   )`),
  same(`CREATE TABLE queue_tasks (
     run_id TEXT NOT NULL REFERENCES queue_runs(id),
     id TEXT NOT NULL,
     position INTEGER NOT NULL,
     state TEXT NOT NULL CHECK (state IN ('queued', 'running', 'done', 'failed', 'cancelled')),
     attempt INTEGER NOT NULL DEFAULT 0,
     lease_owner TEXT,
     lease_until BIGINT,
     spec TEXT NOT NULL,
     result TEXT,
     updated_at BIGINT NOT NULL,
     PRIMARY KEY (run_id, id)
   )`),
  same(`CREATE INDEX queue_tasks_state ON queue_tasks(run_id, state, position)`),
  same(`CREATE TABLE queue_attempts (
     run_id TEXT NOT NULL,
     task_id TEXT NOT NULL,
     attempt INTEGER NOT NULL,
     owner TEXT NOT NULL,
     started_at BIGINT NOT NULL,
     ended_at BIGINT,
     outcome TEXT,
     PRIMARY KEY (run_id, task_id, attempt)
   )`),
  same(`CREATE TABLE queue_events (
     run_id TEXT NOT NULL,
     seq BIGINT NOT NULL,
     ts BIGINT NOT NULL,
     type TEXT NOT NULL,
     task_id TEXT,
     attempt INTEGER,
     data TEXT NOT NULL,
     PRIMARY KEY (run_id, seq)
   )`),
  // the ledger (store/ledger.ts): every model call, numbered per run
  same(`CREATE TABLE ledger (
     run_id TEXT NOT NULL,
     seq BIGINT NOT NULL,
     ts BIGINT NOT NULL,
     task_id TEXT,
     session_id TEXT,
     provider TEXT NOT NULL,
     model TEXT NOT NULL,
     tier TEXT,
     score DOUBLE PRECISION,
     signals TEXT NOT NULL,
     reason TEXT,
     prompt_tokens BIGINT NOT NULL,
     completion_tokens BIGINT NOT NULL,
     cached_tokens BIGINT NOT NULL,
     latency_ms BIGINT NOT NULL,
     cost_usd DOUBLE PRECISION,
     cost_source TEXT NOT NULL CHECK (cost_source IN ('metered', 'priced', 'estimated', 'unknown')),
     reissued INTEGER NOT NULL DEFAULT 0,
     CHECK ((cost_source = 'unknown') = (cost_usd IS NULL)),
     PRIMARY KEY (run_id, seq)
   )`),
  same(`CREATE INDEX ledger_ts ON ledger(ts)`),
  // hub workflows (issue 28, src/hub/runs-store.ts): runs started by signed webhooks, their stages, the
  // delivery ids that make a repeated webhook return its first receipt, signals (kept until their stage
  // parks), timers any process may fire, the requests the hub routed and the replies to them (what a
  // quorum counts), and each run's hash-chained, sealed events
  same(`CREATE TABLE hub_runs (
     id TEXT PRIMARY KEY,
     workflow TEXT NOT NULL,
     workflow_sha256 TEXT NOT NULL,
     source TEXT NOT NULL,
     event TEXT NOT NULL,
     delivery_id TEXT NOT NULL,
     body_sha256 TEXT NOT NULL,
     signal_secret_env TEXT,
     status TEXT NOT NULL CHECK (status IN ('running', 'succeeded', 'failed')),
     stage_index INTEGER NOT NULL,
     created_at BIGINT NOT NULL,
     updated_at BIGINT NOT NULL,
     event_count BIGINT NOT NULL DEFAULT 0,
     head_hash TEXT NOT NULL,
     head_mac TEXT NOT NULL
   )`),
  same(`CREATE INDEX hub_runs_created ON hub_runs(created_at)`),
  same(`CREATE TABLE hub_run_stages (
     run_id TEXT NOT NULL REFERENCES hub_runs(id),
     position INTEGER NOT NULL,
     id TEXT NOT NULL,
     kind TEXT NOT NULL CHECK (kind IN ('agent', 'quorum', 'await_signal', 'approval')),
     state TEXT NOT NULL CHECK (state IN ('pending', 'active', 'parked', 'done', 'timed_out')),
     attempt INTEGER NOT NULL DEFAULT 0,
     min_producers INTEGER,
     prompt TEXT,
     signal TEXT,
     timeout_ms BIGINT,
     mode TEXT,
     started_at BIGINT,
     ended_at BIGINT,
     PRIMARY KEY (run_id, position),
     UNIQUE (run_id, id)
   )`),
  same(`CREATE TABLE hub_stage_eligible (
     run_id TEXT NOT NULL,
     stage_id TEXT NOT NULL,
     agent_id TEXT NOT NULL,
     agent_name TEXT NOT NULL,
     PRIMARY KEY (run_id, stage_id, agent_id)
   )`),
  // a delivery id is kept per start secret (by its variable's name), not per workflow: a delivery
  // captured on its way to one workflow cannot start another that shares its secret
  same(`CREATE TABLE hub_deliveries (
     secret_env TEXT NOT NULL,
     delivery_id TEXT NOT NULL,
     workflow TEXT NOT NULL,
     body_sha256 TEXT NOT NULL,
     run_id TEXT NOT NULL,
     received_at BIGINT NOT NULL,
     PRIMARY KEY (secret_env, delivery_id)
   )`),
  same(`CREATE TABLE hub_signals (
     run_id TEXT NOT NULL,
     signal_id TEXT NOT NULL,
     name TEXT NOT NULL,
     body_sha256 TEXT NOT NULL,
     received_at BIGINT NOT NULL,
     consumed_stage TEXT,
     consumed_attempt INTEGER,
     PRIMARY KEY (run_id, signal_id)
   )`),
  same(`CREATE INDEX hub_signals_waiting ON hub_signals(run_id, name, received_at)`),
  same(`CREATE TABLE hub_timers (
     id TEXT PRIMARY KEY,
     kind TEXT NOT NULL,
     run_id TEXT NOT NULL,
     stage_id TEXT NOT NULL,
     attempt INTEGER NOT NULL,
     due_at BIGINT NOT NULL
   )`),
  same(`CREATE INDEX hub_timers_due ON hub_timers(due_at)`),
  same(`CREATE TABLE hub_stage_requests (
     message_id TEXT PRIMARY KEY,
     run_id TEXT NOT NULL,
     stage_id TEXT NOT NULL,
     attempt INTEGER NOT NULL,
     agent_id TEXT NOT NULL,
     request_hash TEXT NOT NULL,
     body TEXT NOT NULL,
     created_at BIGINT NOT NULL,
     UNIQUE (run_id, stage_id, attempt, agent_id)
   )`),
  same(`CREATE TABLE hub_stage_replies (
     request_message_id TEXT PRIMARY KEY REFERENCES hub_stage_requests(message_id),
     message_id TEXT NOT NULL UNIQUE,
     run_id TEXT NOT NULL,
     stage_id TEXT NOT NULL,
     attempt INTEGER NOT NULL,
     agent_id TEXT NOT NULL,
     request_hash TEXT NOT NULL,
     reply_hash TEXT NOT NULL,
     received_at BIGINT NOT NULL
   )`),
  same(`CREATE INDEX hub_stage_replies_stage ON hub_stage_replies(run_id, stage_id, attempt)`),
  same(`CREATE TABLE hub_run_events (
     run_id TEXT NOT NULL,
     seq BIGINT NOT NULL,
     ts BIGINT NOT NULL,
     type TEXT NOT NULL,
     data TEXT NOT NULL,
     prev TEXT NOT NULL,
     hash TEXT NOT NULL,
     mac TEXT NOT NULL,
     PRIMARY KEY (run_id, seq)
   )`),
  // hub core (src/hub/hub-store.ts): projects, their tokens and agent keys (SHA-256 hashes only), agents
  // with a presence lease, messages numbered per recipient, and the hub's refusals
  same(`CREATE TABLE hub_projects (
     id TEXT PRIMARY KEY,
     name TEXT NOT NULL UNIQUE,
     created_at BIGINT NOT NULL
   )`),
  same(`CREATE TABLE hub_tokens (
     id TEXT PRIMARY KEY,
     kind TEXT NOT NULL CHECK (kind IN ('project', 'agent')),
     project_id TEXT NOT NULL REFERENCES hub_projects(id),
     hash TEXT NOT NULL,
     parent_id TEXT REFERENCES hub_tokens(id),
     agent_id TEXT,
     created_at BIGINT NOT NULL,
     revoked_at BIGINT,
     CHECK ((kind = 'agent') = (parent_id IS NOT NULL AND agent_id IS NOT NULL))
   )`),
  same(`CREATE INDEX hub_tokens_parent ON hub_tokens(parent_id)`),
  same(`CREATE TABLE hub_agents (
     id TEXT PRIMARY KEY,
     project_id TEXT NOT NULL REFERENCES hub_projects(id),
     name TEXT NOT NULL,
     role TEXT,
     created_at BIGINT NOT NULL,
     last_seen BIGINT NOT NULL,
     UNIQUE (project_id, name)
   )`),
  same(`CREATE TABLE hub_messages (
     id TEXT PRIMARY KEY,
     project_id TEXT NOT NULL REFERENCES hub_projects(id),
     sender_id TEXT NOT NULL REFERENCES hub_agents(id),
     recipient_id TEXT NOT NULL REFERENCES hub_agents(id),
     seq BIGINT NOT NULL,
     state TEXT NOT NULL CHECK (state IN ('queued', 'delivered', 'acked', 'replied', 'cancelled', 'expired')),
     body TEXT NOT NULL,
     body_sha256 TEXT NOT NULL,
     reply_to TEXT,
     hop INTEGER NOT NULL CHECK (hop >= 0),
     idempotency_key TEXT NOT NULL,
     request_sha256 TEXT NOT NULL,
     created_at BIGINT NOT NULL,
     expires_at BIGINT NOT NULL,
     delivered_at BIGINT,
     deliveries INTEGER NOT NULL DEFAULT 0,
     acked_at BIGINT,
     replied_at BIGINT,
     reply_id TEXT,
     ended_at BIGINT,
     UNIQUE (sender_id, idempotency_key),
     UNIQUE (recipient_id, seq)
   )`),
  same(`CREATE INDEX hub_messages_pending ON hub_messages(recipient_id, state, seq)`),
  same(`CREATE INDEX hub_messages_expiry ON hub_messages(state, expires_at)`),
  same(`CREATE INDEX hub_messages_reply_to ON hub_messages(reply_to)`),
  same(`CREATE TABLE hub_audit (
     id TEXT PRIMARY KEY,
     ts BIGINT NOT NULL,
     project_id TEXT,
     agent_id TEXT,
     code TEXT NOT NULL,
     detail TEXT NOT NULL
   )`),
  same(`CREATE INDEX hub_audit_ts ON hub_audit(ts)`),
  // hub wiring (issue 28): a workflow run belongs to one hub project, whose agents it resolves and
  // whose inboxes its stage requests go to (sent by the project's system agent "@hub", hub/outbox.ts)
  same(`ALTER TABLE hub_runs ADD COLUMN project_id TEXT REFERENCES hub_projects(id)`),
  // hub approval stages (issue 28): a run a person rejected ends failed with ended_reason 'rejected'
  // (the status CHECK stays as it is; every view shows such a run as `rejected`)
  same(`ALTER TABLE hub_runs ADD COLUMN ended_reason TEXT`),
  // batch leases (issue 27, store/queue.ts): whether the attempt's worker has renewed its lease itself;
  // until it has, its supervisor holds the lease (holdForWorker), so a slow process start expires nothing
  same(`ALTER TABLE queue_tasks ADD COLUMN worker_renewed INTEGER NOT NULL DEFAULT 0`),
];

/** The schema version this keel writes. */
export const STORE_VERSION = MIGRATIONS.length;

async function versionOf(tx: Sql): Promise<number> {
  const rows = await tx.query<{ version: number }>('SELECT version FROM store_version');
  return rows[0]?.version ?? 0;
}

/** Bring a store's tables up to date, once, however many processes open it at the same moment. */
export async function migrateTeamStore(store: Store): Promise<void> {
  await store.transaction(async (tx) => {
    // PostgreSQL: one migrator at a time (the key is arbitrary, keel's own); SQLite: BEGIN IMMEDIATE already is
    if (tx.dialect === 'postgres') await tx.query('SELECT pg_advisory_xact_lock(7427001)');
    await tx.run('CREATE TABLE IF NOT EXISTS store_version (version INTEGER NOT NULL)');
    const current = await versionOf(tx);
    if (current > MIGRATIONS.length)
      throw new Error(
        `the store at ${store.where} has schema version ${current}, newer than this keel understands (${MIGRATIONS.length}); upgrade keel`,
      );
    if (current === MIGRATIONS.length) return;
    for (const migration of MIGRATIONS.slice(current)) await tx.run(migration[tx.dialect]);
    await tx.run('DELETE FROM store_version');
    await tx.run('INSERT INTO store_version (version) VALUES ($1)', [MIGRATIONS.length]);
  });
}
