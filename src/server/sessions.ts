/**
 * The sessions a `keel serve` process runs: each turn is one run of `startSession` in this process,
 * several at once, each under the policy its own config makes. What a client sees is read from the
 * log (replayed by seq) and, while a turn runs, from the live frames: stored events with their seq,
 * streamed text, and approvals that wait for a person (or a timeout that says no).
 */

import { realpathSync } from 'node:fs';
import type { ApprovalAnswer, ApprovalRequest } from '../agent/approvals.js';
import { distinctCallIds } from '../agent/call-ids.js';
import type { SessionEvent } from '../agent/events.js';
import type { Runtime } from '../agent/runtime.js';
import { alive, newSessionId, type SessionOutcome } from '../agent/session.js';
import type { SessionToolFactory } from '../agent/tool-deps.js';
import type { LoadedConfig } from '../config/load.js';
import type { Mode } from '../config/schema.js';
import type { AuditEntry } from '../store/audit.js';
import { auditEntryFor } from '../store/audit-entries.js';
import type { EventLog, SessionRow, StoredEvent } from '../store/event-log.js';

/** How often a stream reads a log that is written elsewhere (a fix run's, another process's session). */
const FOLLOW_MS = 400;

/** One frame of a session's stream: a stored event (with its seq) or a live-only notice. */
export type Frame =
  | { kind: 'event'; seq: number; event: StoredEvent }
  | { kind: 'delta'; data: { kind: 'text' | 'reasoning' | 'tool_output'; text: string; call_id?: string } }
  | { kind: 'approval'; data: Approval }
  | {
      kind: 'approval_settled';
      data: { id: string; call_id: string; decision: 'allow' | 'deny'; reason?: string };
    }
  /** `finish: 'length'`: the run's last answer was cut at the output limit. */
  | { kind: 'end'; data: { code: string; state: SessionState; finish?: 'length' } };

export type SessionState = 'running' | 'waiting' | 'completed' | 'failed' | 'cancelled';

/** A question waiting for a person; `id` is keel's own (an answer names it), `call_id` the model's. */
export interface Approval {
  id: string;
  call_id: string;
  tool: string;
  args: unknown;
  question: string;
  diff: string | null;
  agent: string | null;
}

export interface SessionView {
  session_id: string;
  mode: string;
  /** The model a person chose for the next turns (absent: the one the server gives). */
  model?: string;
  state: SessionState;
  code: string | null;
  prompt: string;
  started_at: string;
  ended_at: string | null;
  rounds: number;
  tokens: number;
  cost_usd: number | null;
  parent_id: string | null;
  /** A fork's: the parent's seq it branched at (null: not a fork; a child with a parent is then a subagent). */
  forked_at: number | null;
  children: string[];
  files_changed: string[];
  pending_approvals: Approval[];
}

interface Pending {
  approval: Approval;
  settle(answer: ApprovalAnswer): void;
}

interface Active {
  controller: AbortController;
  queue: string[];
  /** The questions waiting, by question id, oldest first. */
  pending: Map<string, Pending>;
  turn: Promise<void>;
}

export interface StartRequest {
  prompt: string;
  mode: Mode;
  loaded: LoadedConfig;
  parent?: string;
}

/** What a session's list entry counts from its log, and the last seq counted. */
interface Tally {
  seq: number;
  rounds: number;
  tokens: number;
  endedAt: string | null;
  files: Set<string>;
  /** The mode and model the next turn takes, when a person changed them (a `session_settings` event). */
  mode?: string;
  model?: string;
  /** The process that runs (or ran) the session's last run, as its start or resume recorded it. */
  pid?: number;
}

export class NotFound extends Error {}
export class Conflict extends Error {}

/** The terminal code a stored session ended with, as a state a client can filter by. */
function stateOf(code: string | null): SessionState {
  if (code === 'COMPLETED') return 'completed';
  if (code === 'CANCELLED') return 'cancelled';
  return 'failed';
}

export class SessionManager {
  private readonly active = new Map<string, Active>();
  private readonly listeners = new Map<string, Set<(frame: Frame) => void>>();
  private readonly tallies = new Map<string, Tally>();
  /** The config a turn of a stored session runs with (the one it was started with, in this process). */
  private readonly configs = new Map<string, LoadedConfig>();
  readonly db;
  readonly log: EventLog;
  /** The project this server serves (canonical): a session recorded in any other folder is not found here. */
  readonly root: string;

  constructor(
    private readonly opts: {
      cwd: string;
      /** The server's runtime: every turn runs in it, and the lists and streams read its store. */
      runtime: Runtime;
      /** Seconds a question waits for a person before it is a no. */
      approvalTimeoutS: number;
      /** The tools every session gets beside the built-in ones: the list a one-shot session gets (agent/session-tools.ts). */
      tools?: SessionToolFactory[];
      /** The config for a turn of a session this process did not start (before a restart, from the CLI). */
      configFor(): LoadedConfig;
      /** A run recorded in another folder that is still this server's own (a build's fix run, in its tests' worktree). */
      ours?(id: string): boolean;
      /** Each stored event, for the server's counters. */
      onEvent?(event: SessionEvent): void;
    },
  ) {
    this.db = opts.runtime.db;
    this.log = opts.runtime.log;
    this.root = realpathSync.native(opts.cwd);
  }

  /** Start a new session's first turn; resolves with its id once its row is stored. */
  async start(req: StartRequest): Promise<{ id: string }> {
    const id = newSessionId();
    this.configs.set(id, req.loaded);
    const started = this.turn(id, { ...req, fresh: true });
    await started.stored;
    return { id };
  }

  /** A message for a session: steering while a turn runs, else the next turn of it. */
  async message(id: string, text: string): Promise<'steer' | 'turn'> {
    const active = this.active.get(id);
    if (active) {
      active.queue.push(text);
      return 'steer';
    }
    const row = this.row(id);
    // a session from before a restart (or the CLI) goes on under the server's config, with the model
    // a person chose for it (its log's session_settings)
    let loaded = this.configs.get(id);
    if (!loaded) {
      const base = this.opts.configFor();
      const chosen = this.tally(id).model;
      loaded = chosen ? { ...base, config: { ...base.config, model: chosen } } : base;
    }
    if (!['ask', 'plan', 'edit', 'auto'].includes(row.mode))
      throw new Conflict(`session ${id} is a ${row.mode} run, not a conversation`);
    const mode = (this.tally(id).mode ?? row.mode) as Mode;
    const started = this.turn(id, { prompt: text, mode, loaded, fresh: false });
    await started.stored;
    return 'turn';
  }

  /**
   * The mode and model the session's next turn runs with (src/server/session-settings.ts), recorded in
   * its log; refused while a turn runs (it runs with what it started with) and for a run that is not a
   * conversation.
   */
  settings(id: string, change: { mode?: Mode; model?: string }): SessionView {
    const row = this.row(id);
    if (!['ask', 'plan', 'edit', 'auto'].includes(row.mode))
      throw new Conflict(`session ${id} is a ${row.mode} run, not a conversation`);
    if (this.active.has(id))
      throw new Conflict(`session ${id} is running; change its mode or model when its turn has ended`);
    if (change.model) {
      // only the model changes: the scope, profile and budgets the session started with stay
      const base = this.configs.get(id) ?? this.opts.configFor();
      this.configs.set(id, { ...base, config: { ...base.config, model: change.model } });
    }
    const stored = this.log.append(id, 'session_settings', {
      ...(change.mode ? { mode: change.mode } : {}),
      ...(change.model ? { model: change.model } : {}),
    });
    // the pages that follow the session see it as they see every logged event
    this.emit(id, { kind: 'event', seq: stored.seq, event: stored });
    return this.view(id);
  }

  /** Branch a session after its last event (or `at`); the copy runs only when a message arrives. */
  fork(id: string, at?: number): { id: string } {
    const source = this.row(id);
    if (!['ask', 'plan', 'edit', 'auto'].includes(source.mode))
      throw new Conflict(`session ${id} is a ${source.mode} run, not a conversation; it cannot be forked`);
    if (this.active.has(id)) throw new Conflict(`session ${id} is running; fork it when its turn has ended`);
    const last = this.log.lastSeq(id);
    if (at !== undefined && at > last)
      throw new Conflict(`session ${id} has ${last} events; at ${at} is past its end`);
    const fork = this.log.forkSession(id, newSessionId(), at);
    const event = { type: 'session_fork', from: id, at: fork.forked_seq ?? last };
    this.log.append(fork.id, event.type, { from: event.from, at: event.at });
    // the chain vouches for the fork as it does for a start (src/store/audit-sessions.ts)
    this.opts.runtime.audit.append(auditEntryFor(event, fork.id) as AuditEntry);
    const loaded = this.configs.get(id);
    if (loaded) this.configs.set(fork.id, loaded);
    return { id: fork.id };
  }

  cancel(id: string): boolean {
    this.row(id);
    const active = this.active.get(id);
    if (!active) return false;
    active.controller.abort();
    return true;
  }

  /**
   * Answer a waiting question by its id (never by the model's call id: a subagent and its parent may
   * ask with the same one); false when no question with that id waits.
   */
  approve(id: string, questionId: string, decision: 'allow' | 'deny', reason?: string): boolean {
    this.row(id);
    const pending = this.active.get(id)?.pending.get(questionId);
    if (!pending) return false;
    pending.settle(
      decision === 'allow' ? { allow: true } : { allow: false, ...(reason ? { message: reason } : {}) },
    );
    return true;
  }

  /**
   * Every frame of a session after `after`: the stored events first, read from the log, then live
   * ones. Subscribing before reading means an event stored in between is neither lost nor sent twice.
   */
  subscribe(id: string, after: number, listener: (frame: Frame) => void): () => void {
    this.row(id);
    let replayed = after;
    let replaying = true;
    const held: Frame[] = [];
    const deliver = (frame: Frame) => {
      if (frame.kind === 'event') {
        if (frame.seq <= replayed) return;
        replayed = frame.seq;
      }
      listener(frame);
    };
    const live = (frame: Frame) => (replaying ? held.push(frame) : deliver(frame));
    let set = this.listeners.get(id);
    if (!set) {
      set = new Set();
      this.listeners.set(id, set);
    }
    set.add(live);
    let cut = false;
    // an old log may give two calls one id: each is its own call on every face
    for (const event of distinctCallIds(this.log.events(id))) {
      if (event.type === 'session_end') cut = event.data.finish === 'length';
      if (event.seq > after) deliver({ kind: 'event', seq: event.seq, event });
    }
    replaying = false;
    for (const frame of held.splice(0)) deliver(frame);
    const active = this.active.get(id);
    for (const p of active?.pending.values() ?? []) listener({ kind: 'approval', data: p.approval });
    // between turns: say how the last one ended, so a client that connects late is not left waiting
    const row = this.log.getSession(id);
    if (!active && row?.code)
      listener({
        kind: 'end',
        data: { code: row.code, state: stateOf(row.code), ...(cut ? { finish: 'length' as const } : {}) },
      });
    // a log another writer appends to (a fix run, a batch worker, a CLI session) is followed by reading it:
    // only this server's own turns have live frames
    const follow = setInterval(() => {
      if (this.active.has(id)) return;
      for (const event of this.log.events(id, replayed)) deliver({ kind: 'event', seq: event.seq, event });
    }, FOLLOW_MS);
    follow.unref?.();
    return () => {
      clearInterval(follow);
      set.delete(live);
      if (!set.size) this.listeners.delete(id);
    };
  }

  /** One session as a client sees it; NotFound for an unknown id. */
  view(id: string): SessionView {
    return this.describe(this.row(id));
  }

  /** This project's conversations, newest first. */
  list(filter: { state?: SessionState; limit?: number } = {}): SessionView[] {
    const rows = this.log.listSessions(filter.limit ?? 100, { cwd: this.root });
    return rows
      .filter((r) => ['ask', 'plan', 'edit', 'auto'].includes(r.mode))
      .map((r) => this.describe(r))
      .filter((v) => !filter.state || v.state === filter.state);
  }

  /** Unified diffs of what a session's writes changed, per file, in order. */
  diff(id: string): Array<{ path: string; diff: string }> {
    this.row(id);
    const byPath = new Map<string, string[]>();
    for (const e of this.log.events(id)) {
      if (e.type !== 'tool_result' || e.data.is_error === true || typeof e.data.diff !== 'string') continue;
      const files = Array.isArray(e.data.files_changed) ? (e.data.files_changed as string[]) : [];
      const path = files[0] ?? String((e.data.args as { path?: unknown } | undefined)?.path ?? '?');
      byPath.set(path, [...(byPath.get(path) ?? []), e.data.diff]);
    }
    return [...byPath].map(([path, diffs]) => ({ path, diff: diffs.join('\n') }));
  }

  /** How many turns run now, and how many wait for a person. */
  counts(): { running: number; waiting: number } {
    let waiting = 0;
    for (const a of this.active.values()) if (a.pending.size) waiting++;
    return { running: this.active.size - waiting, waiting };
  }

  /** Stop every turn and wait until their logs are complete (the runtime stays open: its owner closes it). */
  async close(): Promise<void> {
    for (const a of this.active.values()) a.controller.abort();
    await Promise.allSettled([...this.active.values()].map((a) => a.turn));
  }

  /** A session of this project; another project's (a nested repository is another) is as unknown as no session. */
  private row(id: string): SessionRow {
    const row = this.log.getSession(id);
    if (!row || (row.cwd !== this.root && !this.opts.ours?.(id))) throw new NotFound(`no session ${id}`);
    return row;
  }

  private emit(id: string, frame: Frame): void {
    for (const l of this.listeners.get(id) ?? []) l(frame);
  }

  private describe(row: SessionRow): SessionView {
    const active = this.active.get(row.id);
    const tally = this.tally(row.id);
    const { rounds, tokens, endedAt, files } = tally;
    const pending = [...(active?.pending.values() ?? [])].map((p) => p.approval);
    const state: SessionState = active
      ? pending.length
        ? 'waiting'
        : 'running'
      : row.code !== null
        ? stateOf(row.code)
        : this.underActiveTurn(row) || this.runElsewhere(tally)
          ? 'running'
          : 'failed';
    return {
      session_id: row.id,
      mode: tally.mode ?? row.mode,
      ...(tally.model ? { model: tally.model } : {}),
      state,
      code: active ? null : row.code,
      prompt: row.prompt,
      started_at: row.created_at,
      ended_at: active ? null : (endedAt ?? (row.code ? row.updated_at : null)),
      rounds,
      tokens,
      cost_usd: row.cost_usd,
      parent_id: row.parent_id,
      forked_at: row.forked_seq,
      children: this.log.childSessions(row.id).map((c) => c.id),
      files_changed: [...files].sort(),
      pending_approvals: pending,
    };
  }

  /** A subagent still at work: one of its parents (not a fork's source) runs a turn in this process. */
  private underActiveTurn(row: SessionRow): boolean {
    let child: SessionRow | undefined = row;
    for (let depth = 0; child?.parent_id && child.forked_seq === null && depth < 16; depth++) {
      if (this.active.has(child.parent_id)) return true;
      child = this.log.getSession(child.parent_id);
    }
    return false;
  }

  /**
   * A session another live process runs (`keel chat`, `keel ask`, a subagent of theirs): the process its
   * last start or resume recorded is alive. One whose process died without writing its end has failed.
   */
  private runElsewhere(tally: Tally): boolean {
    return tally.pid !== undefined && tally.pid !== process.pid && alive(tally.pid);
  }

  /** A session's counts, read from its log once and then only from its new events (the log only grows). */
  private tally(id: string): Tally {
    const tally = this.tallies.get(id) ?? { seq: 0, rounds: 0, tokens: 0, endedAt: null, files: new Set() };
    for (const e of this.log.events(id, tally.seq)) {
      tally.seq = e.seq;
      if (e.type === 'model_request') tally.rounds++;
      if (e.type === 'assistant_message') {
        const u = e.data.usage as { input?: number; output?: number } | undefined;
        tally.tokens += (u?.input ?? 0) + (u?.output ?? 0);
      }
      if (e.type === 'tool_result' && e.data.is_error !== true && Array.isArray(e.data.files_changed))
        for (const f of e.data.files_changed) tally.files.add(String(f));
      if (e.type === 'session_end') tally.endedAt = e.ts;
      if ((e.type === 'session_start' || e.type === 'session_resume') && typeof e.data.pid === 'number')
        tally.pid = e.data.pid;
      if (e.type === 'session_settings') {
        if (typeof e.data.mode === 'string') tally.mode = e.data.mode;
        if (typeof e.data.model === 'string') tally.model = e.data.model;
      }
    }
    this.tallies.set(id, tally);
    return tally;
  }

  /** Run one turn of `id` in the background; `stored` resolves once its row (or its failure) is known. */
  private turn(id: string, req: StartRequest & { fresh: boolean }): { stored: Promise<void> } {
    const controller = new AbortController();
    const active: Active = { controller, queue: [], pending: new Map(), turn: Promise.resolve() };
    this.active.set(id, active);
    let markStored: () => void = () => {};
    let failStored: (err: unknown) => void = () => {};
    const stored = new Promise<void>((resolve, reject) => {
      markStored = resolve;
      failStored = reject;
    });
    const approve = (request: ApprovalRequest): Promise<ApprovalAnswer> =>
      new Promise((resolve, reject) => {
        // each question is its own entry: one never replaces another, none is left unanswered
        if (active.pending.has(request.id)) return reject(new Error(`question ${request.id} is asked twice`));
        const approval: Approval = {
          id: request.id,
          call_id: request.callId,
          tool: request.tool,
          args: request.args,
          question: request.command
            ? `${request.reason}: ${request.command}${request.sandboxed === false ? ' (outside the sandbox)' : ''}`
            : request.path
              ? `${request.reason}: ${request.tool} wants to change ${request.path}`
              : request.reason,
          diff: request.diff ?? null,
          agent: request.agent ?? null,
        };
        const settle = (answer: ApprovalAnswer) => {
          clearTimeout(timer);
          controller.signal.removeEventListener('abort', onAbort);
          if (!active.pending.delete(request.id)) return;
          this.emit(id, {
            kind: 'approval_settled',
            data: {
              id: request.id,
              call_id: request.callId,
              decision: answer.allow ? 'allow' : 'deny',
              ...(!answer.allow && answer.message ? { reason: answer.message } : {}),
            },
          });
          resolve(answer);
        };
        const timer = setTimeout(
          () =>
            settle({
              allow: false,
              message: `no one answered within ${this.opts.approvalTimeoutS} s; the call was not made`,
            }),
          this.opts.approvalTimeoutS * 1000,
        );
        const onAbort = () => settle({ allow: false, message: 'the session was cancelled' });
        controller.signal.addEventListener('abort', onAbort);
        active.pending.set(request.id, { approval, settle });
        this.emit(id, { kind: 'approval', data: approval });
      });
    active.turn = (async () => {
      let outcome: SessionOutcome | undefined;
      try {
        outcome = await this.opts.runtime.start({
          mode: req.mode,
          prompt: req.prompt,
          loaded: req.loaded,
          cwd: this.opts.cwd,
          signal: controller.signal,
          tools: this.opts.tools ?? [],
          ...(req.fresh ? { id } : { resume: id }),
          ...(req.parent ? { parentId: req.parent } : {}),
          onText: (text) => this.emit(id, { kind: 'delta', data: { kind: 'text', text } }),
          onReasoning: (text) => this.emit(id, { kind: 'delta', data: { kind: 'reasoning', text } }),
          onToolOutput: (callId, text) =>
            this.emit(id, { kind: 'delta', data: { kind: 'tool_output', text, call_id: callId } }),
          onEvent: (event, seq) => {
            if (event.type === 'session_start' || event.type === 'session_resume') markStored();
            this.opts.onEvent?.(event);
            const stored = this.log.event(id, seq);
            if (stored) this.emit(id, { kind: 'event', seq, event: stored });
          },
          inbox: () => active.queue.splice(0),
          approve,
        });
      } catch (err) {
        failStored(err);
      } finally {
        this.active.delete(id);
        markStored();
        const row = this.log.getSession(id);
        const code = outcome?.code ?? row?.code ?? 'ENVIRONMENT_ERROR';
        const finish = outcome?.finish ? { finish: outcome.finish } : {};
        this.emit(id, { kind: 'end', data: { code, state: stateOf(code), ...finish } });
      }
    })();
    return { stored };
  }
}
