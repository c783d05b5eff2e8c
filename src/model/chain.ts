/** The model client: a primary model and its fallbacks, each with retries, timeouts and a cooldown after failing. */
import { DEFAULT_MAX_OUTPUT_TOKENS } from './answer-limit.js';
import type { CallLedger } from './call-ledger.js';
import { type RetryInfo, type RetryPolicy, withRetry } from './retry.js';
import type { RouteDecision } from './routing.js';
import { abortReason, type StreamTimeouts, streamWithTimeouts } from './timeouts.js';
import {
  ESTIMATE_MARGIN,
  estimateRequestTokens,
  estimateUsage,
  loadTokenizer,
  requestText,
  templateTokens,
} from './tokens.js';
import {
  type ChatMessage,
  type ContextWindow,
  type Delta,
  ModelError,
  type ModelRequest,
  type Provider,
  type ToolCall,
  type ToolSpec,
  type Usage,
} from './types.js';

/** One model the client may use: a provider, the model name on it, and its configured context window. */
export interface ModelEntry {
  provider: Provider;
  model: string;
  contextWindow?: number;
}

/** A switch from a failed model to the next one in the chain. */
export interface FallbackInfo {
  from: string;
  to: string;
  error: ModelError;
}

export interface StreamHooks {
  onRetry?: (info: RetryInfo) => void;
  onFallback?: (info: FallbackInfo) => void;
}

/** Picks the models of the next call (routing by difficulty, src/model/routing.ts). */
export interface Router {
  /** The decision for the next call, and the models that carry it out (first the one chosen). */
  route(): { decision: RouteDecision; entries: ModelEntry[] };
}

export interface ModelClientOptions {
  timeouts: StreamTimeouts;
  retries: RetryPolicy;
  /** How long a failed model is skipped (seconds). */
  cooldownS: number;
  /** The longest answer in tokens, sent with every request that names none (default 8192). */
  maxOutputTokens?: number;
  /** The configured temperature, sent with every request that names none (unset: the server's own). */
  temperature?: number;
  /** For tests: the clock used for cooldowns. */
  now?: () => number;
  /** Routing by difficulty: each call's models are the router's choice (route()), not `entries`. */
  router?: Router;
  /** Where every call is recorded as it ends, and what may refuse a call before it starts (a cost cap). */
  calls?: CallLedger;
}

/** A request's size for a window check, and how it was had: the server's tokenizer, or keel's estimate plus its margin. */
export interface TokenCount {
  tokens: number;
  by: 'server' | 'estimate';
}

/** A delta, tagged with the model that produced it. */
export type ModelDelta = Delta & { model: string };

/** A request as the loop builds it; the client picks the model. */
export type ClientRequest = Omit<ModelRequest, 'model'> & {
  /** The same request as one a killed run sent and never logged the answer of: its ledger row says so. */
  reissued?: boolean;
};

function entryKey(entry: ModelEntry): string {
  return `${entry.provider.name} ${entry.provider.baseUrl} ${entry.model}`;
}

/** Streams from the first healthy model in the chain, falling back when one fails before answering. */
export class ModelClient {
  private readonly coolingUntil: Map<string, number>;
  private readonly now: () => number;
  private last: ModelEntry;
  /** The router's last decision, and the models it chose: what stream() uses until the next route(). */
  private routed: { decision: RouteDecision; entries: ModelEntry[] } | undefined;

  constructor(
    readonly entries: readonly ModelEntry[],
    private readonly options: ModelClientOptions,
    /** A view's cooldowns are its client's (withCalls). */
    coolingUntil = new Map<string, number>(),
  ) {
    const primary = entries[0];
    if (!primary) throw new Error('ModelClient needs at least one model');
    this.last = primary;
    this.now = options.now ?? Date.now;
    this.coolingUntil = coolingUntil;
  }

  /** Where this client's calls are recorded, if anywhere. */
  get calls(): CallLedger | undefined {
    return this.options.calls;
  }

  /** The same client (its models and cooldowns), its calls recorded to `calls` (a session's view of the run's ledger). */
  withCalls(calls: CallLedger | undefined): ModelClient {
    const { calls: _, ...options } = this.options;
    const view = new ModelClient(this.entries, calls ? { ...options, calls } : options, this.coolingUntil);
    view.last = this.last;
    return view;
  }

  /**
   * With a router: decide where the next call goes (from the run's log as it stands), and send it
   * there. Without one: undefined, and nothing changes.
   */
  route(): RouteDecision | undefined {
    if (!this.options.router) return undefined;
    this.routed = this.options.router.route();
    return this.routed.decision;
  }

  /** The last routing decision (undefined before the first, or without a router). */
  get lastRoute(): RouteDecision | undefined {
    return this.routed?.decision;
  }

  /** The model that answered last (the primary before any call). */
  currentModel(): string {
    return this.last.model;
  }

  /** The provider name of the model that answered last. */
  get provider(): string {
    return this.last.provider.name;
  }

  /** The primary model's entry. */
  get primary(): ModelEntry {
    const [first] = this.entries;
    if (!first) throw new Error('ModelClient needs at least one model');
    return first;
  }

  /** The primary's context window: configured, else as its server runs it, else undefined. */
  async contextWindow(signal?: AbortSignal): Promise<number | undefined> {
    return (await this.contextWindowFrom(signal))?.tokens;
  }

  /** The primary's context window and where it was read: configured, else the server's, else undefined. */
  async contextWindowFrom(signal?: AbortSignal): Promise<ContextWindow | undefined> {
    const { contextWindow, provider, model } = this.primary;
    if (contextWindow !== undefined) return { tokens: contextWindow, source: 'configured' };
    try {
      return await provider.contextWindow?.(model, signal);
    } catch {
      return undefined; // a server that cannot say is not an error; the caller uses its default
    }
  }

  /**
   * A request's size in the primary server's tokens: counted by the server where it can (llama-server's
   * /tokenize), else keel's estimate plus ESTIMATE_MARGIN, so a window check errs on the safe side.
   */
  async countRequestTokens(
    messages: ChatMessage[],
    tools: ToolSpec[],
    signal?: AbortSignal,
  ): Promise<TokenCount> {
    const { provider } = this.primary;
    if (provider.countTokens) {
      const counted = await provider.countTokens(requestText(messages, tools), signal).catch(() => undefined);
      if (counted !== undefined) return { tokens: counted + templateTokens(messages, tools), by: 'server' };
    }
    await loadTokenizer();
    return {
      tokens: Math.ceil(estimateRequestTokens(messages, tools) * (1 + ESTIMATE_MARGIN)),
      by: 'estimate',
    };
  }

  /** Models in the order they will be tried: those not cooling down, or all when every one is. */
  candidates(): ModelEntry[] {
    const now = this.now();
    const entries = this.routed?.entries ?? this.entries;
    const healthy = entries.filter((e) => (this.coolingUntil.get(entryKey(e)) ?? 0) <= now);
    return healthy.length > 0 ? healthy : [...entries];
  }

  /** Stream an answer; usage is always reported (estimated when the server is silent), `done` comes last. */
  async *stream(
    request: ClientRequest,
    signal: AbortSignal,
    hooks: StreamHooks = {},
  ): AsyncGenerator<ModelDelta> {
    const candidates = this.candidates();
    let lastError: ModelError | undefined;
    for (const [i, entry] of candidates.entries()) {
      let produced = false;
      // a refused call (the cost cap, a model without a price under it) is not made, and not a model's failure
      await this.options.calls?.before(entry.model, this.routed?.decision);
      try {
        for await (const delta of this.streamEntry(entry, request, signal, hooks)) {
          if (delta.type === 'text' || delta.type === 'reasoning' || delta.type === 'tool_call')
            produced = true;
          yield delta;
        }
        this.coolingUntil.delete(entryKey(entry));
        this.last = entry;
        return;
      } catch (err) {
        if (signal.aborted) throw abortReason(signal);
        // after output, switching models would show the user two different answers spliced together
        if (!(err instanceof ModelError) || err.kind === 'bad_request' || produced) throw err;
        lastError = err;
        this.coolingUntil.set(entryKey(entry), this.now() + this.options.cooldownS * 1000);
        const next = candidates[i + 1];
        if (next) hooks.onFallback?.({ from: entry.model, to: next.model, error: err });
      }
    }
    throw lastError ?? new Error('no model to try');
  }

  private async *streamEntry(
    entry: ModelEntry,
    request: ClientRequest,
    signal: AbortSignal,
    hooks: StreamHooks,
  ): AsyncGenerator<ModelDelta> {
    const { reissued, ...sent } = request;
    const full: ModelRequest = { ...sent, model: entry.model };
    // the model's own configured window wins: it is what its server was set up for
    if (entry.contextWindow !== undefined) full.contextWindow = entry.contextWindow;
    // every request carries an output limit: a model that repeats itself must not write until the window is
    // full. The default takes at most half a known window (a server may refuse a prompt plus limit past it)
    full.maxOutputTokens =
      request.maxOutputTokens ??
      this.options.maxOutputTokens ??
      (full.contextWindow !== undefined
        ? Math.min(DEFAULT_MAX_OUTPUT_TOKENS, Math.floor(full.contextWindow / 2))
        : DEFAULT_MAX_OUTPUT_TOKENS);
    const temperature = request.temperature ?? this.options.temperature;
    if (temperature !== undefined) full.temperature = temperature;
    const attempts = withRetry(
      () => streamWithTimeouts(entry.provider, full, signal, this.options.timeouts),
      {
        policy: this.options.retries,
        signal,
        model: entry.model,
        onRetry: hooks.onRetry,
      },
    );
    let output = ''; // answer and reasoning text alike cost output tokens
    const calls: ToolCall[] = [];
    let usage: Usage | undefined;
    let done: Delta | undefined;
    const started = Date.now();
    const estimated = async () => {
      await loadTokenizer();
      return estimateUsage(request.messages, request.tools, output, calls);
    };
    /** The call's ledger row, as it ends. */
    const record = (used: Usage) =>
      this.options.calls?.record({
        provider: entry.provider.name,
        model: entry.model,
        usage: used,
        latencyMs: Date.now() - started,
        ...(this.routed ? { routing: this.routed.decision } : {}),
        ...(reissued ? { reissued: true } : {}),
      });
    try {
      for await (const delta of attempts) {
        if (delta.type === 'done') {
          done = delta; // held back so usage can precede it
          continue;
        }
        if (delta.type === 'text' || delta.type === 'reasoning') output += delta.text;
        if (delta.type === 'tool_call') calls.push(delta.call);
        if (delta.type === 'usage') usage = delta.usage;
        yield { ...delta, model: entry.model };
      }
    } catch (err) {
      // a call that failed after it had used tokens (counted, or output streamed) is still a call that cost
      if (usage || output || calls.length) await record(usage ?? (await estimated()));
      throw err;
    }
    if (!usage) {
      usage = await estimated();
      yield { type: 'usage', usage, model: entry.model };
    }
    await record(usage);
    const finishReason = done?.type === 'done' ? done.finishReason : calls.length > 0 ? 'tool_calls' : 'stop';
    yield { type: 'done', finishReason, model: entry.model };
  }
}
