/**
 * Sessions run in this process for `keel serve`: each with its own policy (mode, scope), its events
 * fanned out to SSE subscribers, its questions waiting for an HTTP answer, and steering through its inbox.
 */
import type { ApprovalAnswer, ApprovalRequest } from '../agent/approvals.js';
import type { SessionEvent } from '../agent/events.js';
import { newSessionId, type SessionOutcome, startSession } from '../agent/session.js';
import type { LoadedConfig } from '../config/load.js';
import type { Mode } from '../config/schema.js';

export type SessionState = 'running' | 'waiting' | 'completed' | 'failed' | 'cancelled';

export interface Approval {
  call_id: string;
  tool: string;
  args: unknown;
  question: string;
  diff: string | null;
  agent: string | null;
}

/** What a subscriber gets: a logged event (with seq) or a live-only frame. */
export type Frame =
  | { kind: 'event'; seq: number; type: string; data: Record<string, unknown> }
  | { kind: 'delta'; data: { kind: 'text' | 'reasoning' | 'tool_output'; text: string; call_id?: string } }
  | { kind: 'approval'; data: Approval }
  | { kind: 'approval_settled'; data: { call_id: string; decision: 'allow' | 'deny' } }
  | { kind: 'end'; data: { code: string; state: SessionState } };

export type Listener = (frame: Frame) => void;

export interface SessionView {
  session_id: string;
  mode: Mode;
  state: SessionState;
  code: string | null;
  prompt: string;
  started_at: string;
  ended_at: string | null;
  rounds: number;
  tokens: number;
  cost_usd: number | null;
  parent_id: string | null;
  children: string[];
  files_changed: string[];
  pending_approvals: Approval[];
}

interface Pending {
  approval: Approval;
  resolve(answer: ApprovalAnswer): void;
  timer: NodeJS.Timeout;
}

interface Running {
  id: string;
  mode: Mode;
  prompt: string;
  startedAt: string;
  endedAt: string | null;
  code: string | null;
  state: SessionState;
  rounds: number;
  tokens: number;
  costUsd: number | null;
  parentId: string | null;
  children: string[];
  filesChanged: Set<string>;
  events: Array<Extract<Frame, { kind: 'event' }>>;
  listeners: Set<Listener>;
  pending: Map<string, Pending>;
  inbox: string[];
  controller: AbortController | null;
  /** Resolves when the current run ends. */
  done: Promise<void>;
}

export interface ManagerDeps {
  cwd: string;
  loaded: LoadedConfig;
  /** Seconds a question waits for an answer before it is denied. */
  approvalTimeoutS: number;
  /** Extra tools for every session (subagents, graph, memory), as `keel ask` gives them. */
  tools?: NonNullable<Parameters<typeof startSession>[0]['tools']>;
  /** Hook for metrics: a gate decision was logged. */
  onToolCall?(decision: string): void;
}

export interface StartRequest {
  prompt: string;
  mode?: Mode;
  parent?: string;
  /** Reopen an existing (forked) session by id instead of starting a new one. */
  resume?: string;
}

const FINAL: Record<string, SessionState> = { COMPLETED: 'completed', CANCELLED: 'cancelled' };

export class UnknownSession extends Error {
  override name = 'UnknownSession';
}

export class SessionManager {
  private readonly sessions = new Map<string, Running>();

  constructor(private readonly deps: ManagerDeps) {}

  /** Start a session; returns at once with its id (the run goes on in the background). */
  start(req: StartRequest): { id: string; mode: Mode; state: SessionState } {
    const id = req.resume ?? newSessionId();
    const mode = req.mode ?? 'ask';
    const s: Running = {
      id,
      mode,
      prompt: req.prompt,
      startedAt: new Date().toISOString(),
      endedAt: null,
      code: null,
      state: 'running',
      rounds: 0,
      tokens: 0,
      costUsd: null,
      parentId: req.parent ?? null,
      children: [],
      filesChanged: new Set(),
      events: [],
      listeners: new Set(),
      pending: new Map(),
      inbox: [],
      controller: null,
      done: Promise.resolve(),
    };
    this.sessions.set(id, s);
    if (req.parent) this.sessions.get(req.parent)?.children.push(id);
    if (req.resume !== undefined && req.prompt === '') {
      // a fork waits, idle, for its first message
      s.state = 'completed';
      s.code = 'COMPLETED';
      s.endedAt = s.startedAt;
    } else this.run(s, req.prompt, req.resume !== undefined);
    return { id, mode, state: s.state };
  }

  /** Listen from after `after` (exclusive): the logged events since, then live frames. */
  subscribe(id: string, after: number, listener: Listener): () => void {
    const s = this.must(id);
    for (const e of s.events) if (e.seq > after) listener(e);
    for (const p of s.pending.values()) listener({ kind: 'approval', data: p.approval });
    // a session between runs: say how its last run ended, as a live subscriber was told
    if (!s.controller && s.code !== null) listener({ kind: 'end', data: { code: s.code, state: s.state } });
    s.listeners.add(listener);
    return () => s.listeners.delete(listener);
  }

  cancel(id: string): boolean {
    const s = this.must(id);
    for (const p of s.pending.values()) this.settle(s, p, { allow: false, message: 'cancelled' }, 'deny');
    s.controller?.abort();
    return s.controller !== null;
  }

  /** Answer a waiting question; false when no such question waits. */
  approve(id: string, callId: string, decision: 'allow' | 'deny', reason?: string): boolean {
    const s = this.must(id);
    const p = s.pending.get(callId);
    if (!p) return false;
    this.settle(
      s,
      p,
      decision === 'allow' ? { allow: true } : { allow: false, ...(reason ? { message: reason } : {}) },
      decision,
    );
    return true;
  }

  /** Steer a running session, or start a new turn of an idle one. */
  message(id: string, text: string): 'steer' | 'turn' {
    const s = this.must(id);
    if (s.controller) {
      s.inbox.push(text);
      return 'steer';
    }
    s.prompt = s.prompt || text;
    this.run(s, text, true);
    return 'turn';
  }

  get(id: string): SessionView | undefined {
    const s = this.sessions.get(id);
    return s ? view(s) : undefined;
  }

  list(): SessionView[] {
    return [...this.sessions.values()].map(view).sort((a, b) => b.started_at.localeCompare(a.started_at));
  }

  /** Counts for /metrics: sessions by state, tokens and cost over all of them. */
  totals(): { states: Record<SessionState, number>; tokens: number; costUsd: number } {
    const states: Record<SessionState, number> = {
      running: 0,
      waiting: 0,
      completed: 0,
      failed: 0,
      cancelled: 0,
    };
    let tokens = 0;
    let costUsd = 0;
    for (const s of this.sessions.values()) {
      states[s.state]++;
      tokens += s.tokens;
      costUsd += s.costUsd ?? 0;
    }
    return { states, tokens, costUsd };
  }

  /** Wait for the current run of a session to end (tests, shutdown). */
  async settled(id: string): Promise<void> {
    await this.must(id).done;
  }

  async shutdown(): Promise<void> {
    for (const s of this.sessions.values()) if (s.controller) this.cancel(s.id);
    await Promise.all([...this.sessions.values()].map((s) => s.done));
  }

  private must(id: string): Running {
    const s = this.sessions.get(id);
    if (!s) throw new UnknownSession(`no session ${id} in this server`);
    return s;
  }

  private emit(s: Running, frame: Frame): void {
    for (const l of s.listeners) {
      try {
        l(frame);
      } catch {
        s.listeners.delete(l);
      }
    }
  }

  private settle(s: Running, p: Pending, answer: ApprovalAnswer, decision: 'allow' | 'deny'): void {
    clearTimeout(p.timer);
    s.pending.delete(p.approval.call_id);
    if (s.pending.size === 0 && s.controller) s.state = 'running';
    this.emit(s, { kind: 'approval_settled', data: { call_id: p.approval.call_id, decision } });
    p.resolve(answer);
  }

  private ask(s: Running, req: ApprovalRequest): Promise<ApprovalAnswer> {
    return new Promise((resolve) => {
      const approval: Approval = {
        call_id: req.callId,
        tool: req.tool,
        args: req.args,
        question: req.command
          ? `${req.reason}: ${req.command}`
          : req.path
            ? `${req.reason}: ${req.path}`
            : req.reason,
        diff: req.diff ?? null,
        agent: null,
      };
      const timer = setTimeout(() => {
        const p = s.pending.get(req.callId);
        if (p)
          this.settle(
            s,
            p,
            { allow: false, message: `no answer within ${this.deps.approvalTimeoutS}s` },
            'deny',
          );
      }, this.deps.approvalTimeoutS * 1000);
      timer.unref();
      s.pending.set(req.callId, { approval, resolve, timer });
      s.state = 'waiting';
      this.emit(s, { kind: 'approval', data: approval });
    });
  }

  private run(s: Running, prompt: string, resume: boolean): void {
    const controller = new AbortController();
    s.controller = controller;
    s.state = 'running';
    s.code = null;
    s.endedAt = null;
    const onEvent = (event: SessionEvent, seq: number) => {
      const data = event as unknown as Record<string, unknown>;
      const frame = { kind: 'event' as const, seq, type: event.type, data };
      s.events.push(frame);
      if (event.type === 'gate_decision') this.deps.onToolCall?.(String(data.decision ?? 'unknown'));
      this.emit(s, frame);
    };
    s.done = startSession({
      mode: s.mode,
      prompt,
      loaded: this.deps.loaded,
      cwd: this.deps.cwd,
      signal: controller.signal,
      ...(this.deps.tools ? { tools: this.deps.tools } : {}),
      ...(resume ? { resume: s.id, keepMode: true } : { id: s.id }),
      ...(s.parentId && !resume ? { parentId: s.parentId } : {}),
      inbox: () => s.inbox.splice(0),
      approve: (req) => this.ask(s, req),
      onEvent,
      onText: (text) => this.emit(s, { kind: 'delta', data: { kind: 'text', text } }),
      onReasoning: (text) => this.emit(s, { kind: 'delta', data: { kind: 'reasoning', text } }),
      onToolOutput: (callId, text) =>
        this.emit(s, { kind: 'delta', data: { kind: 'tool_output', text, call_id: callId } }),
    }).then(
      (outcome: SessionOutcome) => this.finish(s, outcome.code, outcome),
      (err: unknown) => {
        const code =
          err && typeof err === 'object' && 'code' in err && typeof err.code === 'string'
            ? err.code
            : 'INTERNAL_ERROR';
        this.finish(s, code);
      },
    );
  }

  private finish(s: Running, code: string, outcome?: SessionOutcome): void {
    s.controller = null;
    s.code = code;
    s.state = FINAL[code] ?? 'failed';
    s.endedAt = new Date().toISOString();
    if (outcome) {
      s.rounds += outcome.rounds;
      s.tokens += outcome.tokens.input + outcome.tokens.output;
      if (outcome.costUsd !== null) s.costUsd = (s.costUsd ?? 0) + outcome.costUsd;
      for (const f of outcome.filesChanged) s.filesChanged.add(f);
    }
    this.emit(s, { kind: 'end', data: { code, state: s.state } });
  }
}

function view(s: Running): SessionView {
  return {
    session_id: s.id,
    mode: s.mode,
    state: s.state,
    code: s.code,
    prompt: s.prompt,
    started_at: s.startedAt,
    ended_at: s.endedAt,
    rounds: s.rounds,
    tokens: s.tokens,
    cost_usd: s.costUsd,
    parent_id: s.parentId,
    children: [...s.children],
    files_changed: [...s.filesChanged],
    pending_approvals: [...s.pending.values()].map((p) => p.approval),
  };
}
