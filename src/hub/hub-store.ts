/**
 * The hub's data, on the team store (SQLite or PostgreSQL, the same SQL): projects and their tokens,
 * agents and their keys, messages and their states, the hub's refusals. Every query of the hub is here.
 *
 * - Secrets are kept as SHA-256 hashes (tokens.ts); a token is found by the id it carries. Revoking a
 *   project token revokes, in the same transaction, every agent key registered with it.
 * - A message is numbered in its recipient's stream (store/streams.ts), never by a global sequence.
 * - Its state moves queued → delivered → acked → replied, or ends cancelled or expired. What is due
 *   for (re)delivery and what has expired is computed from the rows (delivered_at + 30 s, expires_at),
 *   so a restart forgets nothing.
 * - The same sender with the same idempotency key and the same request gets the original back; a
 *   different request under that key is a conflict. A message takes one reply.
 * - Writes go through `write` (group-commit.ts in the hub, a plain transaction in tests); a refusal is
 *   returned out of the transaction as a HubError, never thrown inside it, so it spoils no batch.
 */
import { randomBytes } from 'node:crypto';
import type { Sql, Store } from '../store/engine.js';
import { nextSeq } from '../store/streams.js';
import { mintToken, parseToken, sameHash, sha256 } from './tokens.js';

export const LIMITS = {
  /** A message body, in UTF-8 bytes. */
  maxBodyBytes: 256 * 1024,
  minTtlS: 1,
  maxTtlS: 7 * 24 * 3600,
  defaultTtlS: 24 * 3600,
  /** How many times a piece of work may be passed on (replies and forwards count). */
  maxHop: 16,
  maxNameChars: 64,
  maxKeyChars: 200,
};

/** A delivered message not acked within this is delivered again. */
export const REDELIVER_MS = 30_000;
/** An agent is online while it was seen within this. */
export const PRESENCE_MS = 60_000;
/**
 * How long a checked agent key is taken on this process's word without its row read again. A key
 * revoked here (or, on PostgreSQL, by another hub process: a hint) is refused from the next request;
 * revoked by another process with no hint heard (SQLite: hints do not cross processes), within this.
 */
export const KEY_CACHE_MS = 1000;
/** The channel a revocation is hinted on, so other hub processes forget the keys they checked. */
export const REVOKED_CHANNEL = 'keel_hub_revoked';

export type MessageState = 'queued' | 'delivered' | 'acked' | 'replied' | 'cancelled' | 'expired';

/** A refusal with its HTTP status and a stable code. */
export class HubError extends Error {
  override name = 'HubError';
  constructor(
    readonly status: 400 | 401 | 403 | 404 | 409 | 410 | 413 | 429,
    readonly code: string,
    message: string,
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

/** Who an agent key belongs to. */
export interface Caller {
  agentId: string;
  projectId: string;
  name: string;
}

/** What a project token authorizes. */
export interface ProjectAuth {
  projectId: string;
  tokenId: string;
}

export interface MessageView {
  id: string;
  from: string;
  to: string;
  seq: number;
  state: MessageState;
  body: string;
  body_sha256: string;
  reply_to: string | null;
  hop: number;
  idempotency_key: string;
  created_at: number;
  expires_at: number;
  deliveries: number;
  reply_id: string | null;
}

export interface TokenView {
  token_id: string;
  kind: 'project' | 'agent';
  project: string;
  agent?: string;
  created_at: number;
  revoked_at: number | null;
}

export interface PeerView {
  name: string;
  role: string | null;
  online: boolean;
  last_seen: number;
}

export interface SendInput {
  to: string;
  body: string;
  idempotency_key: string;
  ttl_s?: number;
  reply_to?: string;
  hop?: number;
}

export type Write = <T>(op: (tx: Sql) => Promise<T>) => Promise<T>;

export interface HubStoreOptions {
  /** How writes reach the store (default: one transaction each). */
  write?: Write;
  now?: () => number;
  /** Called after the commit of each new message, with its recipient (to wake its stream). */
  onQueued?(recipientId: string): void;
  /**
   * Called inside the transaction of every reply to a system agent's message (the workflow requests'
   * sender, `@hub`), with the authenticated sender and the message replied to (the hub counts replies to
   * its workflow requests here, committed with the reply or not at all).
   */
  onReply?(tx: Sql, reply: ReplyEvent): Promise<unknown>;
}

/** A reply as the reply path saw it: who sent it, to which message, its id and body hash. */
export interface ReplyEvent {
  requestMessageId: string;
  agentId: string;
  messageId: string;
  replyHash: string;
}

interface MessageRow {
  id: string;
  project_id: string;
  sender_id: string;
  recipient_id: string;
  sender_name: string;
  recipient_name: string;
  seq: number;
  state: MessageState;
  body: string;
  body_sha256: string;
  reply_to: string | null;
  hop: number;
  idempotency_key: string;
  request_sha256: string;
  created_at: number;
  expires_at: number;
  delivered_at: number | null;
  deliveries: number;
  reply_id: string | null;
}

/** The columns a MessageRow reads, named (a `*` would change its rows' shape under a prepared statement when a column is added). */
const COLUMNS = [
  'id',
  'project_id',
  'sender_id',
  'recipient_id',
  'seq',
  'state',
  'body',
  'body_sha256',
  'reply_to',
  'hop',
  'idempotency_key',
  'request_sha256',
  'created_at',
  'expires_at',
  'delivered_at',
  'deliveries',
  'reply_id',
];
const ROW = COLUMNS.join(', ');

const MESSAGE = `SELECT ${COLUMNS.map((c) => `m.${c}`).join(', ')}, s.name AS sender_name, r.name AS recipient_name FROM hub_messages m
  JOIN hub_agents s ON s.id = m.sender_id JOIN hub_agents r ON r.id = m.recipient_id`;

// ids come from the CSPRNG in blocks: a call for every 12 bytes cost 5 % of a busy hub's time (ids name
// rows, they open nothing: each route checks whose a message is; tokens take their own randomBytes)
let random = Buffer.alloc(0);
let used = 0;

function newId(prefix: string): string {
  if (used + 12 > random.length) {
    random = randomBytes(4096);
    used = 0;
  }
  used += 12;
  return `${prefix}_${random.toString('hex', used - 12, used)}`;
}

/** The state a reader sees: a message past its TTL and not yet taken is expired, swept or not. */
function effectiveState(row: MessageRow, now: number): MessageState {
  if ((row.state === 'queued' || row.state === 'delivered') && Number(row.expires_at) <= now)
    return 'expired';
  return row.state;
}

function view(row: MessageRow, now: number): MessageView {
  return {
    id: row.id,
    from: row.sender_name,
    to: row.recipient_name,
    seq: Number(row.seq),
    state: effectiveState(row, now),
    body: row.body,
    body_sha256: row.body_sha256,
    reply_to: row.reply_to,
    hop: row.hop,
    idempotency_key: row.idempotency_key,
    created_at: Number(row.created_at),
    expires_at: Number(row.expires_at),
    deliveries: row.deliveries,
    reply_id: row.reply_id,
  };
}

function check<T>(result: T | HubError): T {
  if (result instanceof HubError) throw result;
  return result;
}

/** A row's lock until commit on PostgreSQL; SQLite's write lock already covers the transaction. */
function forUpdate(tx: Sql): string {
  return tx.dialect === 'postgres' ? ' FOR UPDATE' : '';
}

export class HubStore {
  private readonly write: Write;
  readonly now: () => number;
  private readonly onQueued: (recipientId: string) => void;
  private readonly onReply: HubStoreOptions['onReply'];
  /** Agent id → name: an agent's name never changes, so what was read once stays true (bounded). */
  private readonly names = new Map<string, string>();
  /** Project id and name → agent id: an agent keeps its id, and is never deleted (bounded). */
  private readonly ids = new Map<string, string>();
  /** Agent key id → its hash and caller, as read within KEY_CACHE_MS (bounded; emptied by a revocation). */
  private readonly keys = new Map<string, { hash: string; caller: Caller; until: number }>();
  /** Bumped by every revocation: a key check read before one is not remembered after it. */
  private revocations = 0;

  constructor(
    readonly store: Store,
    opts: HubStoreOptions = {},
  ) {
    this.write = opts.write ?? ((op) => store.transaction(op));
    this.now = opts.now ?? Date.now;
    this.onQueued = opts.onQueued ?? (() => undefined);
    this.onReply = opts.onReply;
  }

  // ---- projects and tokens (the admin's) ----

  /** A new project token for `project` (the project is created on first use); the token is shown once. */
  async createProjectToken(project: string): Promise<{ token_id: string; token: string; project: string }> {
    const minted = mintToken('project');
    const now = this.now();
    await this.write(async (tx) => {
      await tx.run(
        'INSERT INTO hub_projects (id, name, created_at) VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING',
        [newId('p'), project, now],
      );
      const [row] = await tx.query<{ id: string }>('SELECT id FROM hub_projects WHERE name = $1', [project]);
      await tx.run(
        `INSERT INTO hub_tokens (id, kind, project_id, hash, created_at) VALUES ($1, 'project', $2, $3, $4)`,
        [minted.id, row?.id, minted.hash, now],
      );
    });
    return { token_id: minted.id, token: minted.token, project };
  }

  /** Every token and key, never a secret nor a hash. */
  async tokens(): Promise<TokenView[]> {
    const rows = await this.store.query<{
      id: string;
      kind: 'project' | 'agent';
      project: string;
      agent: string | null;
      created_at: number;
      revoked_at: number | null;
    }>(
      `SELECT t.id, t.kind, p.name AS project, a.name AS agent, t.created_at, t.revoked_at
       FROM hub_tokens t JOIN hub_projects p ON p.id = t.project_id LEFT JOIN hub_agents a ON a.id = t.agent_id
       ORDER BY t.created_at, t.id`,
    );
    return rows.map((r) => ({
      token_id: r.id,
      kind: r.kind,
      project: r.project,
      ...(r.agent ? { agent: r.agent } : {}),
      created_at: Number(r.created_at),
      revoked_at: r.revoked_at === null ? null : Number(r.revoked_at),
    }));
  }

  /** Revoke a token; a project token takes the agent keys registered with it along. Undefined: no such token. */
  async revokeToken(tokenId: string): Promise<{ token_id: string; agent_keys_revoked: number } | undefined> {
    const now = this.now();
    return this.write(async (tx) => {
      const [row] = await tx.query<{ id: string }>(
        `SELECT id FROM hub_tokens WHERE id = $1${forUpdate(tx)}`,
        [tokenId],
      );
      if (!row) return undefined;
      await tx.run('UPDATE hub_tokens SET revoked_at = $2 WHERE id = $1 AND revoked_at IS NULL', [
        tokenId,
        now,
      ]);
      const keys = await tx.run(
        'UPDATE hub_tokens SET revoked_at = $2 WHERE parent_id = $1 AND revoked_at IS NULL',
        [tokenId, now],
      );
      return { token_id: tokenId, agent_keys_revoked: keys };
    }).then((revoked) => {
      // committed: no key of this process outlives it, and the other processes are told (a hint)
      this.forgetKeys();
      this.store.hint(REVOKED_CHANNEL);
      return revoked;
    });
  }

  /** Forget every agent key checked so far: the next request of each reads its row again. */
  forgetKeys(): void {
    this.revocations++;
    this.keys.clear();
  }

  // ---- who is calling ----

  /** The project a project token opens, or undefined (unknown, revoked, wrong secret). */
  async projectOf(token: string): Promise<ProjectAuth | undefined> {
    const parsed = parseToken('project', token);
    if (!parsed) return undefined;
    const [row] = await this.store.query<{ hash: string; project_id: string }>(
      `SELECT hash, project_id FROM hub_tokens WHERE id = $1 AND kind = 'project' AND revoked_at IS NULL`,
      [parsed.id],
    );
    if (!row || !sameHash(row.hash, parsed.hash)) return undefined;
    return { projectId: row.project_id, tokenId: parsed.id };
  }

  /** The agent an agent key belongs to, or undefined (unknown, revoked, its project token revoked, wrong secret). */
  async agentOf(key: string): Promise<Caller | undefined> {
    const parsed = parseToken('agent', key);
    if (!parsed) return undefined;
    const now = Date.now();
    const known = this.keys.get(parsed.id);
    // the secret is compared on every request, remembered or not
    if (known && known.until > now) return sameHash(known.hash, parsed.hash) ? known.caller : undefined;
    const generation = this.revocations;
    const [row] = await this.store.query<{
      hash: string;
      agent_id: string;
      project_id: string;
      name: string;
    }>(
      `SELECT t.hash, t.agent_id, t.project_id, a.name FROM hub_tokens t
       JOIN hub_tokens p ON p.id = t.parent_id JOIN hub_agents a ON a.id = t.agent_id
       WHERE t.id = $1 AND t.kind = 'agent' AND t.revoked_at IS NULL AND p.revoked_at IS NULL`,
      [parsed.id],
    );
    if (!row || !sameHash(row.hash, parsed.hash)) return undefined;
    this.remember(row.agent_id, row.name);
    // a key's agent is committed (read outside any transaction): its id may be remembered by name too
    if (this.ids.size >= 10_000) this.ids.clear();
    this.ids.set(`${row.project_id}\0${row.name}`, row.agent_id);
    const caller = { agentId: row.agent_id, projectId: row.project_id, name: row.name };
    // a revocation while this row was read: the row may predate it, so it is not remembered
    if (generation === this.revocations) {
      if (this.keys.size >= 10_000) this.keys.clear();
      this.keys.set(parsed.id, { hash: row.hash, caller, until: now + KEY_CACHE_MS });
    }
    return caller;
  }

  // ---- agents ----

  /**
   * Register `name` in the token's project and give it a new key. A name already there gets another key
   * for the same agent: whoever holds the project token speaks for the project's names.
   */
  async registerAgent(
    auth: ProjectAuth,
    name: string,
    role?: string,
  ): Promise<{ agent_id: string; agent_key: string; name: string }> {
    const minted = mintToken('agent');
    const now = this.now();
    const agentId = await this.write(async (tx) => {
      const [live] = await tx.query<{ id: string }>(
        `SELECT id FROM hub_tokens WHERE id = $1 AND revoked_at IS NULL${forUpdate(tx)}`,
        [auth.tokenId],
      );
      if (!live) return new HubError(401, 'UNAUTHORIZED', 'the project token was revoked');
      await tx.run(
        `INSERT INTO hub_agents (id, project_id, name, role, created_at, last_seen) VALUES ($1, $2, $3, $4, $5, $5)
         ON CONFLICT (project_id, name) DO UPDATE SET role = COALESCE($4, hub_agents.role), last_seen = $5`,
        [newId('a'), auth.projectId, name, role ?? null, now],
      );
      const [agent] = await tx.query<{ id: string }>(
        'SELECT id FROM hub_agents WHERE project_id = $1 AND name = $2',
        [auth.projectId, name],
      );
      await tx.run(
        `INSERT INTO hub_tokens (id, kind, project_id, hash, parent_id, agent_id, created_at)
         VALUES ($1, 'agent', $2, $3, $4, $5, $6)`,
        [minted.id, auth.projectId, minted.hash, auth.tokenId, agent?.id, now],
      );
      return agent?.id as string;
    });
    return { agent_id: check(agentId), agent_key: minted.token, name };
  }

  /** Renew an agent's presence lease. */
  async touch(agentId: string): Promise<void> {
    const now = this.now();
    await this.write((tx) =>
      tx.run('UPDATE hub_agents SET last_seen = $2 WHERE id = $1 AND last_seen < $2', [agentId, now]),
    );
  }

  /** The project's agents, online while their lease holds. */
  async peers(projectId: string): Promise<PeerView[]> {
    const now = this.now();
    const rows = await this.store.query<{ name: string; role: string | null; last_seen: number }>(
      `SELECT name, role, last_seen FROM hub_agents WHERE project_id = $1 AND name NOT LIKE '@%' ORDER BY name`,
      [projectId],
    );
    return rows.map((r) => ({
      name: r.name,
      role: r.role,
      online: Number(r.last_seen) > now - PRESENCE_MS,
      last_seen: Number(r.last_seen),
    }));
  }

  // ---- messages ----

  /** Send a message; `created: false` when the same request under the same key was sent before. */
  async send(caller: Caller, input: SendInput): Promise<{ message: MessageView; created: boolean }> {
    const now = this.now();
    const ttl = input.ttl_s ?? LIMITS.defaultTtlS;
    const requestHash = sha256(
      JSON.stringify(['send', input.to, input.body, ttl, input.reply_to ?? null, input.hop ?? 0]),
    );
    const result = await this.write(async (tx) => {
      // a key used before shows at the insert (ON CONFLICT): the usual send reads nothing for it first.
      // A refusal is answered as the key's original when there is one, as if that were read first.
      const refuse = async (err: HubError) =>
        (await this.idempotent(tx, caller, input.idempotency_key, requestHash, now)) ?? err;
      const recipient = await this.agentNamed(tx, caller.projectId, input.to);
      if (!recipient)
        return refuse(
          new HubError(404, 'UNKNOWN_AGENT', `no agent named ${JSON.stringify(input.to)} in this project`),
        );
      let hop = input.hop ?? 0;
      if (input.reply_to !== undefined) {
        const [parent] = await tx.query<MessageRow>(
          'SELECT hop, sender_id, recipient_id FROM hub_messages WHERE id = $1 AND project_id = $2',
          [input.reply_to, caller.projectId],
        );
        if (!parent || (parent.sender_id !== caller.agentId && parent.recipient_id !== caller.agentId))
          return refuse(new HubError(404, 'NOT_FOUND', `reply_to: no message ${input.reply_to} of yours`));
        hop = Math.max(hop, parent.hop + 1);
      }
      if (hop > LIMITS.maxHop) return refuse(hopLimit(hop));
      const sent = await this.insert(
        tx,
        caller,
        { id: recipient.id, name: input.to },
        {
          body: input.body,
          replyTo: input.reply_to ?? null,
          hop,
          key: input.idempotency_key,
          requestHash,
          now,
          ttlS: ttl,
        },
      );
      // the key was used (by this request before, or by another one): its message is the answer
      if (sent === undefined)
        return refuse(
          new HubError(
            409,
            'IDEMPOTENCY_CONFLICT',
            `idempotency key ${JSON.stringify(input.idempotency_key)} is in use`,
          ),
        );
      return { id: sent.id, created: true as const, recipientId: recipient.id, message: sent };
    });
    return this.settle(check(result));
  }

  /** After the commit: wake a new message's recipient; a repeated request reads the original back. */
  private async settle(result: {
    id: string;
    created: boolean;
    recipientId?: string;
    message?: MessageView;
  }): Promise<{ message: MessageView; created: boolean }> {
    if (result.recipientId) this.onQueued(result.recipientId);
    // a new message is answered as committed (queued), without reading it back
    return { message: result.message ?? (await this.mustRead(result.id)), created: result.created };
  }

  /** Reply to a message addressed to the caller: the reply goes to its sender; a message takes one reply. */
  async reply(
    caller: Caller,
    messageId: string,
    input: { body: string; idempotency_key?: string },
  ): Promise<{ message: MessageView; created: boolean }> {
    const now = this.now();
    const key = input.idempotency_key ?? `reply:${messageId}`;
    const requestHash = sha256(JSON.stringify(['reply', messageId, input.body]));
    const result = await this.write(async (tx) => {
      // the message's lock first: a reply retried through another process waits here, then finds its twin
      const original = await this.lockOwn(tx, caller, messageId, 'recipient');
      if (original instanceof HubError) return original;
      const state = effectiveState(original, now);
      // the key shows at the insert (ON CONFLICT) when the message is open; a refusal is answered as
      // the key's original when there is one (a retried reply finds its twin), as if that were read first
      const refuse = async (err: HubError) =>
        (await this.idempotent(tx, caller, key, requestHash, now)) ?? err;
      if (state === 'replied')
        return refuse(
          new HubError(409, 'ALREADY_REPLIED', `message ${messageId} has a reply already`, {
            reply_id: original.reply_id,
          }),
        );
      if (state === 'cancelled')
        return refuse(new HubError(409, 'CANCELLED', `message ${messageId} was cancelled`));
      if (state === 'expired')
        return refuse(new HubError(410, 'EXPIRED', `message ${messageId} expired before it was taken`));
      const hop = original.hop + 1;
      if (hop > LIMITS.maxHop) return refuse(hopLimit(hop));
      const inserted = await this.insert(
        tx,
        caller,
        { id: original.sender_id, name: await this.nameOf(tx, original.sender_id) },
        {
          body: input.body,
          replyTo: messageId,
          hop,
          key,
          requestHash,
          now,
          ttlS: LIMITS.defaultTtlS,
          answers: true,
        },
      );
      // under the message's lock no twin can have taken the key: a conflict here is another request's
      if (inserted === undefined)
        return refuse(
          new HubError(
            409,
            'IDEMPOTENCY_CONFLICT',
            `idempotency key ${JSON.stringify(key)} was used for another request`,
          ),
        );
      const id = inserted.id;
      // only the hub's own requests belong to runs, and their sender is a system agent ("@hub": a name
      // no one can register); a reply to a peer's message is no run's business
      if (inserted.to.startsWith('@'))
        await this.onReply?.(tx, {
          requestMessageId: messageId,
          agentId: caller.agentId,
          messageId: id,
          replyHash: inserted.body_sha256,
        });
      return { id, created: true as const, recipientId: original.sender_id, message: inserted };
    });
    return this.settle(check(result));
  }

  /** The recipient has the message: it is not delivered again. Acking twice is no error. */
  async ack(caller: Caller, messageId: string): Promise<MessageView> {
    const now = this.now();
    const result = await this.write(async (tx) => {
      // the usual ack, in one statement: the caller's message, not yet acked, not expired
      const [acked] = await tx.query<MessageRow>(
        `UPDATE hub_messages SET state = 'acked', acked_at = $3
         WHERE id = $1 AND project_id = $2 AND recipient_id = $4 AND state IN ('queued', 'delivered') AND expires_at > $3
         RETURNING ${ROW}`,
        [messageId, caller.projectId, now, caller.agentId],
      );
      if (acked)
        return view(
          { ...acked, sender_name: await this.nameOf(tx, acked.sender_id), recipient_name: caller.name },
          now,
        );
      const row = await this.lockOwn(tx, caller, messageId, 'recipient');
      if (row instanceof HubError) return row;
      const state = effectiveState(row, now);
      if (state === 'expired')
        return new HubError(410, 'EXPIRED', `message ${messageId} expired before it was taken`);
      if (state === 'cancelled') return new HubError(409, 'CANCELLED', `message ${messageId} was cancelled`);
      if (state === 'queued' || state === 'delivered') {
        await tx.run(`UPDATE hub_messages SET state = 'acked', acked_at = $2 WHERE id = $1`, [
          messageId,
          now,
        ]);
        row.state = 'acked';
      }
      return view(
        { ...row, sender_name: await this.nameOf(tx, row.sender_id), recipient_name: caller.name },
        now,
      );
    });
    return check(result);
  }

  /**
   * Ack several of the caller's messages in one write: `acked` lists those now acked, or acked or
   * replied before (acking twice is no error); `skipped` the rest: not the caller's (or no such
   * message: which, is not told), cancelled or expired.
   */
  async ackMany(
    caller: Caller,
    messageIds: readonly string[],
  ): Promise<{ acked: string[]; skipped: string[] }> {
    const ids = [...new Set(messageIds)];
    const now = this.now();
    const marks = ids.map((_, i) => `$${i + 4}`).join(', ');
    const acked = await this.write(async (tx) => {
      // the usual case, one statement: each message the caller's, not yet acked, not expired
      const rows = await tx.query<{ id: string }>(
        `UPDATE hub_messages SET state = 'acked', acked_at = $3
         WHERE project_id = $2 AND recipient_id = $1 AND state IN ('queued', 'delivered') AND expires_at > $3
         AND id IN (${marks}) RETURNING id`,
        [caller.agentId, caller.projectId, now, ...ids],
      );
      if (rows.length === ids.length) return rows;
      const before = await tx.query<{ id: string }>(
        `SELECT id FROM hub_messages WHERE project_id = $2 AND recipient_id = $1 AND state IN ('acked', 'replied')
         AND id IN (${ids.map((_, i) => `$${i + 3}`).join(', ')})`,
        [caller.agentId, caller.projectId, ...ids],
      );
      return [...rows, ...before];
    });
    const done = new Set(acked.map((r) => r.id));
    return { acked: ids.filter((id) => done.has(id)), skipped: ids.filter((id) => !done.has(id)) };
  }

  /** The sender withdraws a message not yet replied to. */
  async cancel(caller: Caller, messageId: string): Promise<MessageView> {
    const now = this.now();
    const result = await this.write(async (tx) => {
      const row = await this.lockOwn(tx, caller, messageId, 'sender');
      if (row instanceof HubError) return row;
      const state = effectiveState(row, now);
      if (state === 'replied')
        return new HubError(409, 'ALREADY_REPLIED', `message ${messageId} has a reply already`);
      if (state === 'queued' || state === 'delivered' || state === 'acked') {
        await tx.run(`UPDATE hub_messages SET state = 'cancelled', ended_at = $2 WHERE id = $1`, [
          messageId,
          now,
        ]);
        row.state = 'cancelled';
      }
      return view(
        { ...row, sender_name: caller.name, recipient_name: await this.nameOf(tx, row.recipient_id) },
        now,
      );
    });
    return check(result);
  }

  /** A message the caller sent or received (with its reply, once there is one); 404 for anyone else's. */
  async message(caller: Caller, messageId: string): Promise<{ message: MessageView; reply?: MessageView }> {
    const [row] = await this.store.query<MessageRow>(`${MESSAGE} WHERE m.id = $1 AND m.project_id = $2`, [
      messageId,
      caller.projectId,
    ]);
    if (!row || (row.sender_id !== caller.agentId && row.recipient_id !== caller.agentId))
      throw new HubError(404, 'NOT_FOUND', `no message ${messageId} of yours`);
    const now = this.now();
    const message = view(row, now);
    if (!row.reply_id) return { message };
    const reply = await this.read(row.reply_id);
    return reply ? { message, reply } : { message };
  }

  /**
   * What the agent's stream should carry now, in its order: with `all`, every message not yet acked
   * (a reconnect re-sends them); otherwise the new ones and those delivered over REDELIVER_MS ago.
   */
  async due(agentId: string, opts: { all: boolean; after?: number }): Promise<MessageView[]> {
    const now = this.now();
    // the unary + keeps SQLite off the indexes that serve ORDER BY seq (UNIQUE (recipient_id, seq): every
    // message the agent ever had, more with each one) or the expiry: the open rows by (recipient, state)
    // are few, and sorting them costs nothing
    const rows = await this.store.query<MessageRow>(
      `${MESSAGE} WHERE m.recipient_id = $1 AND m.state IN ('queued', 'delivered') AND +m.expires_at > $2
       AND ($3 = 1 OR m.state = 'queued' OR m.seq > $5 OR m.delivered_at <= $4) ORDER BY +m.seq LIMIT 500`,
      [agentId, now, opts.all ? 1 : 0, now - REDELIVER_MS, opts.after ?? 0],
    );
    return rows.map((r) => view(r, now));
  }

  /** Which of these agents have messages never delivered (for waking their streams). */
  async queuedAmong(agentIds: readonly string[]): Promise<string[]> {
    if (!agentIds.length) return [];
    const marks = agentIds.map((_, i) => `$${i + 1}`).join(', ');
    const rows = await this.store.query<{ recipient_id: string }>(
      `SELECT DISTINCT recipient_id FROM hub_messages WHERE state = 'queued' AND recipient_id IN (${marks})`,
      agentIds,
    );
    return rows.map((r) => r.recipient_id);
  }

  /** When the earliest delivered, unacked message of the agent falls due again (undefined: none). */
  async nextRedelivery(agentId: string): Promise<number | undefined> {
    const [row] = await this.store.query<{ first: number | null }>(
      `SELECT MIN(delivered_at) AS first FROM hub_messages WHERE recipient_id = $1 AND state = 'delivered'`,
      [agentId],
    );
    return row?.first == null ? undefined : Number(row.first) + REDELIVER_MS;
  }

  /** Record that these messages went out to their recipient (again). */
  async markDelivered(agentId: string, ids: readonly string[]): Promise<void> {
    if (!ids.length) return;
    const now = this.now();
    const marks = ids.map((_, i) => `$${i + 3}`).join(', ');
    await this.write((tx) =>
      tx.run(
        `UPDATE hub_messages SET state = 'delivered', delivered_at = $2, deliveries = deliveries + 1
         WHERE recipient_id = $1 AND state IN ('queued', 'delivered') AND id IN (${marks})`,
        [agentId, now, ...ids],
      ),
    );
  }

  /** The caller's open work: messages to it that are not replied, cancelled or expired, oldest first. */
  async inbox(caller: Caller): Promise<MessageView[]> {
    const now = this.now();
    const rows = await this.store.query<MessageRow>(
      // by (recipient, state), as in due()
      `${MESSAGE} WHERE m.recipient_id = $1 AND m.state IN ('acked', 'queued', 'delivered')
       AND (m.state = 'acked' OR +m.expires_at > $2) ORDER BY +m.seq LIMIT 500`,
      [caller.agentId, now],
    );
    return rows.map((r) => view(r, now));
  }

  /** Mark every message past its TTL and not yet taken as expired (any process may, any time). */
  async expire(): Promise<number> {
    const now = this.now();
    return this.write((tx) =>
      tx.run(
        `UPDATE hub_messages SET state = 'expired', ended_at = $1 WHERE state IN ('queued', 'delivered') AND expires_at <= $1`,
        [now],
      ),
    );
  }

  /** Keep a refusal: what was refused, for whom, and why. */
  async audit(entry: { projectId?: string; agentId?: string; code: string; detail: string }): Promise<void> {
    await this.write((tx) =>
      tx.run(
        'INSERT INTO hub_audit (id, ts, project_id, agent_id, code, detail) VALUES ($1, $2, $3, $4, $5, $6)',
        [
          newId('r'),
          this.now(),
          entry.projectId ?? null,
          entry.agentId ?? null,
          entry.code,
          entry.detail.slice(0, 1000),
        ],
      ),
    );
  }

  /** The newest refusals. */
  async refusals(
    limit = 100,
  ): Promise<Array<{ ts: number; code: string; detail: string; agent_id: string | null }>> {
    const rows = await this.store.query<{
      ts: number;
      code: string;
      detail: string;
      agent_id: string | null;
    }>('SELECT ts, code, detail, agent_id FROM hub_audit ORDER BY ts DESC, id LIMIT $1', [limit]);
    return rows.map((r) => ({ ...r, ts: Number(r.ts) }));
  }

  /** Counts for /metrics. */
  async counts(): Promise<Record<string, number>> {
    const rows = await this.store.query<{ state: string; n: number }>(
      'SELECT state, COUNT(*) AS n FROM hub_messages GROUP BY state',
    );
    return Object.fromEntries(rows.map((r) => [r.state, Number(r.n)]));
  }

  // ---- inside a transaction ----

  /** The message sent earlier by the caller under `key`: itself when the request is the same, a conflict when not. */
  private async idempotent(
    tx: Sql,
    caller: Caller,
    key: string,
    requestHash: string,
    _now: number,
  ): Promise<{ id: string; created: false; recipientId?: undefined } | HubError | undefined> {
    const [row] = await tx.query<{ id: string; request_sha256: string }>(
      'SELECT id, request_sha256 FROM hub_messages WHERE sender_id = $1 AND idempotency_key = $2',
      [caller.agentId, key],
    );
    if (!row) return undefined;
    if (row.request_sha256 !== requestHash)
      return new HubError(
        409,
        'IDEMPOTENCY_CONFLICT',
        `idempotency key ${JSON.stringify(key)} was used for another request`,
        {
          message_id: row.id,
        },
      );
    return { id: row.id, created: false };
  }

  /** A message the caller is the `role` of, locked; 404 for anyone else's (whether it exists is not told). */
  private async lockOwn(
    tx: Sql,
    caller: Caller,
    messageId: string,
    role: 'sender' | 'recipient',
  ): Promise<MessageRow | HubError> {
    const [row] = await tx.query<MessageRow>(
      `SELECT ${ROW} FROM hub_messages WHERE id = $1 AND project_id = $2${forUpdate(tx)}`,
      [messageId, caller.projectId],
    );
    const owner = role === 'sender' ? row?.sender_id : row?.recipient_id;
    if (!row || owner !== caller.agentId)
      return new HubError(
        404,
        'NOT_FOUND',
        `no message ${messageId} ${role === 'sender' ? 'sent by' : 'addressed to'} you`,
      );
    return row;
  }

  /** An agent's name, from memory or the store (a name is never changed, so a remembered one holds). */
  private async nameOf(tx: Sql, agentId: string): Promise<string> {
    const known = this.names.get(agentId);
    if (known !== undefined) return known;
    const [row] = await tx.query<{ name: string }>('SELECT name FROM hub_agents WHERE id = $1', [agentId]);
    if (!row) throw new Error(`agent ${agentId} has no row`);
    this.remember(agentId, row.name);
    return row.name;
  }

  /**
   * The agent of that name in the project: remembered when its key was checked (an agent keeps its id
   * and is never deleted), else read here (not remembered: inside a batch that may yet roll back).
   */
  private async agentNamed(tx: Sql, projectId: string, name: string): Promise<{ id: string } | undefined> {
    const known = this.ids.get(`${projectId}\0${name}`);
    if (known !== undefined) return { id: known };
    const [row] = await tx.query<{ id: string }>(
      'SELECT id FROM hub_agents WHERE project_id = $1 AND name = $2',
      [projectId, name],
    );
    return row;
  }

  private remember(agentId: string, name: string): void {
    if (this.names.size >= 10_000) this.names.clear();
    this.names.set(agentId, name);
  }

  /**
   * Insert a message; its view as committed, or undefined when the sender's key is taken. With
   * `answers`, the message is the reply to `replyTo` (locked by the caller), which is marked replied
   * (and acked) when the reply's row goes in, and left as it was when the key is taken.
   */
  private async insert(
    tx: Sql,
    caller: Caller,
    recipient: { id: string; name: string },
    m: {
      body: string;
      replyTo: string | null;
      hop: number;
      key: string;
      requestHash: string;
      now: number;
      ttlS: number;
      answers?: boolean;
    },
  ): Promise<MessageView | undefined> {
    const id = newId('m');
    const bodyHash = sha256(m.body);
    const expiresAt = m.now + m.ttlS * 1000;
    const values = [
      id,
      caller.projectId,
      caller.agentId,
      recipient.id,
      `hub:${recipient.id}`,
      m.body,
      bodyHash,
      m.replyTo,
      m.hop,
      m.key,
      m.requestHash,
      m.now,
      expiresAt,
    ];
    const columns = `INSERT INTO hub_messages (id, project_id, sender_id, recipient_id, seq, state, body, body_sha256,
         reply_to, hop, idempotency_key, request_sha256, created_at, expires_at)`;
    const rest = `'queued', $6, $7, $8, $9, $10, $11, $12, $13) ON CONFLICT (sender_id, idempotency_key) DO NOTHING`;
    // the answered message ($8): replied by the reply ($1), acked if it was not, at its time ($12)
    const answered = `UPDATE hub_messages SET state = 'replied', replied_at = $12, reply_id = $1,
         acked_at = COALESCE(acked_at, $12) WHERE id = $8`;
    let seq: number | undefined;
    if (tx.dialect === 'postgres') {
      // the stream's number, the row and, for a reply, the answered message's mark in one round trip
      // (the stream row is locked until commit all the same: store/streams.ts); every statement of a
      // group commit waits for the one before it. SQLite has no data-modifying WITH: three statements.
      const inserting = `${columns} VALUES ($1, $2, $3, $4, (SELECT last_seq FROM n), ${rest} RETURNING seq`;
      const [row] = await tx.query<{ seq: number }>(
        `WITH n AS (INSERT INTO streams (name, last_seq) VALUES ($5, 1)
           ON CONFLICT (name) DO UPDATE SET last_seq = streams.last_seq + 1 RETURNING last_seq)
         ${
           m.answers
             ? `, i AS (${inserting}), a AS (${answered} AND EXISTS (SELECT 1 FROM i)) SELECT seq FROM i`
             : inserting
         }`,
        values,
      );
      seq = row && Number(row.seq);
    } else {
      const next = await nextSeq(tx, values[4] as string);
      seq = (await tx.run(`${columns} VALUES ($1, $2, $3, $4, $5, ${rest}`, [
        ...values.slice(0, 4),
        next,
        ...values.slice(5),
      ]))
        ? next
        : undefined;
      if (seq !== undefined && m.answers) await tx.run(answered, values);
    }
    if (seq === undefined) return undefined;
    return {
      id,
      from: caller.name,
      to: recipient.name,
      seq,
      state: 'queued',
      body: m.body,
      body_sha256: bodyHash,
      reply_to: m.replyTo,
      hop: m.hop,
      idempotency_key: m.key,
      created_at: m.now,
      expires_at: expiresAt,
      deliveries: 0,
      reply_id: null,
    };
  }

  private async read(id: string): Promise<MessageView | undefined> {
    const [row] = await this.store.query<MessageRow>(`${MESSAGE} WHERE m.id = $1`, [id]);
    return row ? view(row, this.now()) : undefined;
  }

  private async mustRead(id: string): Promise<MessageView> {
    const message = await this.read(id);
    if (!message) throw new Error(`message ${id} vanished after its commit`);
    return message;
  }
}

/** A message one hop past the limit: a forwarding loop, most likely. */
function hopLimit(hop: number): HubError {
  return new HubError(
    400,
    'HOP_LIMIT',
    `hop ${hop} is past the limit of ${LIMITS.maxHop} (a forwarding loop?)`,
  );
}
