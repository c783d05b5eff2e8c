/**
 * One chat's session, turn after turn, for either face (full-screen or plain). Each turn is one run
 * of the same session: the first starts it, the next reopen it from its log (the log is the truth).
 * Typing during a turn queues steering that the loop reads before its next model request.
 */
import type { SessionEvent } from '../agent/events.js';
import type { Runtime } from '../agent/runtime.js';
import type { SessionOutcome, StartOptions } from '../agent/session.js';
import { RunError } from '../agent/terminal.js';
import type { LoadedConfig } from '../config/load.js';
import type { Mode } from '../config/schema.js';
import type { ImageAttachment, VisionSupport } from '../model/types.js';
import type { SessionRow, StoredEvent } from '../store/event-log.js';
import { EXIT, exitCodeFor } from '../term/exit-codes.js';
import { type ApprovalChoice, type ApprovalRequest, ChatApprover } from './approver.js';

/** What a face shows; every text it gets from here is raw, and the face makes it inert. */
export interface ChatView {
  /** A turn starts with this message (already shown by the face when the person typed it). */
  turnStart(prompt: string): void;
  text(chunk: string): void;
  reasoning(chunk: string): void;
  /** A running command's output as it comes (the whole output is in its tool_result later). */
  toolOutput?(callId: string, text: string): void;
  /** An event of the log: live, or replayed from the log when a session is reopened. */
  event(event: SessionEvent, live: boolean): void;
  /** A subagent's event as it works (`name`: its line of agents, "a/b"; `sessionId`: its own session). */
  agent?(name: string, sessionId: string, event: SessionEvent): void;
  turnEnd(outcome: SessionOutcome | undefined): void;
  notice(text: string, kind?: 'info' | 'error' | 'ok'): void;
  ask(req: ApprovalRequest): Promise<ApprovalChoice>;
  /** A yes/no question of keel's own (/undo). */
  confirm(question: string): Promise<boolean>;
  /** Something on the status line changed. */
  status(): void;
}

export interface Stats {
  /** The last request's estimated size, and the window it must fit. */
  contextTokens: number;
  contextWindow?: number;
  /** The session's tokens and cost over all its runs (cost null: no price known). */
  tokens: number;
  cost: number | null;
  /** Whether shell ran sandboxed, once a command ran. */
  sandboxed?: boolean;
  /** The last model answer's timing and output tokens, as its assistant_message logged them. */
  lastAnswer?: { first_token_ms: number; total_ms: number; output: number };
}

export interface ConversationOptions {
  loaded: LoadedConfig;
  /** The workspace, canonical. */
  cwd: string;
  mode: Mode;
  view: ChatView;
  env?: NodeJS.ProcessEnv;
}

export class Conversation {
  sessionId: string | undefined;
  mode: Mode;
  model: string;
  readonly stats: Stats;
  private loaded: LoadedConfig;
  /** Whether the session has a row in the log yet (the first run may fail before it starts). */
  private stored = false;
  private queue: string[] = [];
  private controller: AbortController | undefined;
  private current: Promise<void> | undefined;
  /** Opened at the first turn (the prompt is up before SQLite loads), closed with the chat. */
  private opened: Runtime | undefined;
  /** The team store's ledger every call of the chat is recorded to (each session a run of its own). */
  private ledger: { close(): Promise<void> } | undefined;
  private opening: Promise<Runtime> | undefined;
  readonly approver: ChatApprover;
  /** Whether the server was asked for the window it runs with (when none is configured). */
  private windowAsked = false;
  /** The exit status of the last turn, as a one-shot verb would have exited (a piped chat exits with it). */
  lastExit: number = EXIT.ok;

  constructor(private readonly opts: ConversationOptions) {
    this.loaded = opts.loaded;
    this.mode = opts.mode;
    this.model = opts.loaded.config.model || '(no model)';
    this.stats = {
      contextTokens: 0,
      ...(opts.loaded.config.context_window ? { contextWindow: opts.loaded.config.context_window } : {}),
      tokens: 0,
      cost: null,
    };
    this.approver = new ChatApprover((req) => opts.view.ask(req));
  }

  get running(): boolean {
    return this.current !== undefined;
  }

  get config(): LoadedConfig['config'] {
    return this.loaded.config;
  }

  get loadedConfig(): LoadedConfig {
    return this.loaded;
  }

  get cwd(): string {
    return this.opts.cwd;
  }

  /** Use this model for the next turns (the config's provider and endpoint stay). */
  setModel(name: string): void {
    this.loaded = { ...this.loaded, config: { ...this.loaded.config, model: name } };
    this.model = name;
    if (!this.loaded.config.context_window) {
      // another model may run with another window: asked again after its first turn
      delete this.stats.contextWindow;
      this.windowAsked = false;
    }
    this.opts.view.status();
  }

  /** A command rule saved by /permissions, in force from the next call (the config file has it for later chats). */
  addCommandRule(key: 'allow_commands' | 'deny_commands', rule: string, file: string): void {
    const { config, sources } = this.loaded;
    if (config[key].includes(rule)) return;
    this.loaded = {
      ...this.loaded,
      config: { ...config, [key]: [...config[key], rule] },
      sources: { ...sources, [key]: file },
    };
  }

  /** A compaction made between turns (/compact): the next request is the compacted history's size. */
  compacted(event: Extract<SessionEvent, { type: 'compaction' }>): void {
    this.count(event);
    this.opts.view.status();
  }

  setMode(mode: Mode): void {
    this.mode = mode;
    this.opts.view.status();
  }

  /** Go on with a stored session: its mode, and its transcript shown from the log. */
  open(row: SessionRow, events: StoredEvent[], keepMode: boolean): void {
    this.sessionId = row.id;
    this.stored = true;
    if (keepMode) this.mode = row.mode as Mode;
    this.stats.contextTokens = 0;
    this.stats.tokens = 0;
    this.stats.cost = row.cost_usd;
    for (const stored of events) {
      const event = { type: stored.type, ...stored.data } as SessionEvent;
      this.count(event);
      this.opts.view.event(event, false);
    }
    this.opts.view.status();
  }

  /**
   * Start over in a new session with the same settings (model, mode, scope): the next message starts
   * it. The old session stays in the log, resumable.
   */
  fresh(): void {
    this.sessionId = undefined;
    this.stored = false;
    this.stats.contextTokens = 0;
    this.stats.tokens = 0;
    this.stats.cost = null;
    delete this.stats.sandboxed;
    delete this.stats.lastAnswer;
    this.lastExit = EXIT.ok;
    this.opts.view.status();
  }

  /**
   * Send a message: a new turn, or steering for the turn that runs. `once`: this turn's own mode and
   * config (/init), the conversation's own again from the next.
   */
  send(text: string, once?: { mode: Mode; loaded: LoadedConfig }, images?: ImageAttachment[]): void {
    if (this.current) {
      if (images?.length) {
        this.opts.view.notice(
          'an image goes with a new message, not with steering: send it again when the turn ends',
          'error',
        );
        return;
      }
      this.queue.push(text);
      this.opts.view.notice(`queued for the next step: ${firstLine(text)}`, 'info');
      return;
    }
    this.current = this.turn(text, once, images).finally(() => {
      this.current = undefined;
      this.controller = undefined;
      // steering the model never read (it answered first) becomes the next turn
      const left = this.queue.splice(0);
      if (left.length) this.send(left.join('\n\n'));
      else this.opts.view.status();
    });
  }

  /** Stop the turn that runs (its run ends CANCELLED in the log); false when none runs. */
  stop(): boolean {
    if (!this.controller || this.controller.signal.aborted) return false;
    this.queue = [];
    this.controller.abort();
    return true;
  }

  /** Stop any turn and wait until its log is complete. */
  async close(): Promise<void> {
    this.stop();
    await this.current;
    this.opened?.close();
    this.opened = undefined;
    await this.ledger?.close();
    this.ledger = undefined;
  }

  /** The chat's one runtime: every turn, /compact and subagents use its store and audit chain. */
  async runtime(): Promise<Runtime> {
    // one opening at a time: two callers at once share it rather than open two stores
    this.opening ??= this.openOnce().finally(() => {
      this.opening = undefined;
    });
    return this.opened ?? (await this.opening);
  }

  private async openOnce(): Promise<Runtime> {
    if (this.opened) return this.opened;
    const env = this.opts.env ?? process.env;
    const [{ openRuntime }, { LedgerStoreError, openRunLedger, PER_SESSION }] = await Promise.all([
      import('../agent/runtime.js'),
      import('../model/open-ledger.js'),
    ]);
    // a store keel cannot reach ends the turn before any call (exit 3), and the next turn tries again
    let ledger: Awaited<ReturnType<typeof openRunLedger>>;
    try {
      ledger = await openRunLedger(this.loaded.config, PER_SESSION, { env });
    } catch (err) {
      if (err instanceof LedgerStoreError) throw new RunError('ENVIRONMENT_ERROR', err.message);
      throw err;
    }
    this.ledger = ledger;
    this.opened = openRuntime(env, { calls: ledger.calls });
    return this.opened;
  }

  /** Wait for the turn that runs, if any. */
  async idle(): Promise<void> {
    while (this.current) await this.current;
  }

  /**
   * Send a message with images, once the server is asked whether the model reads them: refused (said,
   * nothing sent) when it says no; sent when it says yes or cannot say (a refusal then names the image).
   * `beforeSend` runs just before the turn starts (the face shows the message).
   */
  async sendWithImages(text: string, images: ImageAttachment[], beforeSend?: () => void): Promise<boolean> {
    const { view } = this.opts;
    if (this.current) {
      view.notice(
        'an image goes with a new message, not with steering: send it again when the turn ends',
        'error',
      );
      return false;
    }
    const support = await this.vision();
    const names = images.map((i) => i.path).join(', ');
    if (support && !support.accepts) {
      view.notice(
        `not sent: ${this.model} does not accept images (${support.source}); choose a model that does with /model`,
        'error',
      );
      return false;
    }
    view.notice(
      `attached image ${names} (${images.reduce((n, i) => n + i.bytes, 0).toLocaleString('en-US')} bytes) · ${
        support
          ? `${this.model} reads images (${support.source})`
          : 'the server does not say whether the model reads images: sent anyway'
      }`,
    );
    beforeSend?.();
    this.send(text, undefined, images);
    return true;
  }

  /**
   * Whether the model reads images, as its server says (Ollama's /api/show capabilities, llama-server's
   * /props modalities); undefined when the server does not say, and an image is then sent anyway.
   */
  async vision(): Promise<VisionSupport | undefined> {
    const config = this.loaded.config;
    const { createModelClient } = await import('../model/create.js');
    const { provider } = createModelClient(config, this.opts.env ?? process.env, {
      cwd: this.opts.cwd,
    }).primary;
    return provider
      .vision?.(this.model, AbortSignal.timeout(config.timeouts.connect_s * 1000))
      .catch(() => undefined);
  }

  private async turn(
    prompt: string,
    once?: { mode: Mode; loaded: LoadedConfig },
    images?: ImageAttachment[],
  ): Promise<void> {
    const { view } = this.opts;
    const controller = new AbortController();
    this.controller = controller;
    view.turnStart(prompt);
    view.status();
    const [{ newSessionId }, { sessionTools }] = await Promise.all([
      import('../agent/session.js'),
      import('../agent/session-tools.js'),
    ]);
    if (!this.sessionId) this.sessionId = newSessionId();
    const options: StartOptions = {
      mode: once?.mode ?? this.mode,
      prompt,
      ...(images?.length ? { images } : {}),
      onImageMissing: (image, why) => view.notice(`@${image.path} is not sent again: ${why}`, 'error'),
      loaded: once?.loaded ?? this.loaded,
      cwd: this.opts.cwd,
      signal: controller.signal,
      // a one-shot session's own list (subagents, the code graph, memory; MCP, A2A and the hub's when configured)
      tools: await sessionTools((line) => view.notice(line, 'error')),
      ...(this.stored ? { resume: this.sessionId } : { id: this.sessionId }),
      onText: (chunk) => view.text(chunk),
      onReasoning: (chunk) => view.reasoning(chunk),
      onToolOutput: (callId, text) => view.toolOutput?.(callId, text),
      onEvent: (event) => {
        if (event.type === 'session_start') this.stored = true;
        this.count(event);
        view.event(event, true);
        view.status();
      },
      onAgentEvent: (name, id, event) => view.agent?.(name, id, event),
      inbox: () => this.queue.splice(0),
      approve: this.approver.approve,
    };
    let outcome: SessionOutcome | undefined;
    try {
      outcome = await (await this.runtime()).start(options);
      this.lastExit = exitCodeFor(outcome.code);
      this.stats.tokens = outcome.tokens.input + outcome.tokens.output;
      this.stats.cost = outcome.costUsd;
    } catch (err) {
      this.lastExit = err instanceof RunError ? exitCodeFor(err.code) : EXIT.usage;
      view.notice(errorLine(err), 'error');
    }
    view.turnEnd(outcome);
    this.askWindow();
  }

  /**
   * With no configured window, the status line shows the one the server runs with (llama-server's
   * n_ctx, Ollama's loaded length), asked once after the first turn so the prompt is never kept waiting.
   */
  private askWindow(): void {
    if (this.windowAsked || this.stats.contextWindow) return;
    this.windowAsked = true;
    const config = this.loaded.config;
    void import('../model/create.js')
      .then(({ createModelClient }) =>
        createModelClient(config, this.opts.env ?? process.env, { cwd: this.opts.cwd }).contextWindow(
          AbortSignal.timeout(config.timeouts.connect_s * 1000),
        ),
      )
      .then((window) => {
        if (!window || this.loaded.config !== config) return;
        this.stats.contextWindow = window;
        this.opts.view.status();
      })
      .catch(() => {
        // a server that cannot say leaves the status line as it was
      });
  }

  /** Fold an event into the status line's numbers. */
  private count(event: SessionEvent): void {
    switch (event.type) {
      case 'model_request':
        this.stats.contextTokens = event.est_tokens;
        if (event.model) this.model = event.model;
        return;
      case 'assistant_message':
        this.stats.tokens += event.usage.input + event.usage.output;
        if (event.cost_usd !== null) this.stats.cost = (this.stats.cost ?? 0) + event.cost_usd;
        if (event.timing) this.stats.lastAnswer = { ...event.timing, output: event.usage.output };
        return;
      case 'compaction':
        // the next request carries the compacted history: what the summary left is the context now
        this.stats.contextTokens = event.tokens_after;
        return;
      case 'tool_start':
        if (event.sandboxed !== undefined) this.stats.sandboxed = event.sandboxed;
        return;
      case 'session_end':
        this.stats.tokens = event.tokens.input + event.tokens.output;
        this.stats.cost = event.cost_usd;
        return;
      default:
        return;
    }
  }
}

function firstLine(text: string): string {
  const line = text.split('\n')[0] ?? '';
  return line.length > 80 ? `${line.slice(0, 79)}…` : line;
}

/** One line for a failed turn: the error's own message, never a stack. */
export function errorLine(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  return message.split('\n')[0] ?? message;
}
