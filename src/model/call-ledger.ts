/**
 * Every model call in the team store's ledger (store/ledger.ts), written by the model client as the call
 * ends, and the run's cost cap checked against the ledger before each call starts.
 *
 * - A row per call that answered, and per call that failed after it had used tokens (usage reported, or
 *   output streamed). Its cost is `metered` (the provider said), `priced` (the server's token counts
 *   times the configured prices, or the call's measured seconds times a `gpu_second` price), `estimated`
 *   (keel's own token count times the prices) or `unknown`.
 * - The price of a call routing sent to a `[[routing.tiers]]` tier is that tier's own; a tier without one
 *   falls back to `[pricing.<model>]`, and a model priced by neither is `unknown`.
 * - Under a cap, a model without a configured price is refused before its call: a spend keel cannot
 *   count to the cent is not a spend it can cap.
 * - A row the store did not take is kept in a local file (`unsentPath`) and sent when the next ledger
 *   opens on this machine; the run makes no further call (CallRefused `store`).
 */
import { appendFileSync, readFileSync, renameSync, rmSync } from 'node:fs';
import type { CostSource, Ledger, LedgerEntry } from '../store/ledger.js';
import { costUsd, type Price } from './cost.js';
import type { Usage } from './types.js';

/** How routing chose a model for a call (model/routing.ts's RouteDecision has this shape). */
export interface RouteDecision {
  tier: string;
  provider: string;
  model: string;
  baseUrl?: string;
  score: number;
  signals: Record<string, unknown>;
  reason: string;
}

/** What a call is recorded under: its run (a fix run, a batch run, a chat session), task and session. */
export interface CallContext {
  runId: string;
  taskId?: string;
  sessionId?: string;
  routing?: RouteDecision;
  /** The calls of this view re-issue requests whose responses were never recorded (a resumed run). */
  reissued?: boolean;
}

/** Why a call was not made: the cap is reached, a model under a cap has no price, or the store is away. */
export type Refusal = 'cost_cap' | 'unpriced' | 'store';

/** A model call keel refused to start; agent/stop.ts turns it into the run's terminal code. */
export class CallRefused extends Error {
  override name = 'CallRefused';
  constructor(
    readonly why: Refusal,
    message: string,
  ) {
    super(message);
  }
}

/** A call as it ended: which model, what it used, how long. */
export interface EndedCall {
  provider: string;
  model: string;
  usage: Usage;
  latencyMs: number;
  /** How routing chose this call's model, when it was chosen per call (else the context's). */
  routing?: RouteDecision;
  /** A request re-issued on resume because its response was never recorded. */
  reissued?: boolean;
}

export interface CallLedgerOptions {
  ledger: Ledger;
  context: CallContext;
  /** `[pricing.<model>]` from the config. */
  pricing: Record<string, Price>;
  /** The price of each `[[routing.tiers]]` tier that has one, by tier name: what a call routed there costs. */
  tierPrices?: Record<string, Price>;
  /** USD the run may spend on calls, summed from the ledger; unset: no cap. */
  costCapUsd?: number;
  /** Where a row the store did not take waits for the next start (KEEL_HOME/ledger-unsent.jsonl). */
  unsentPath: string;
}

/** How many times a row is offered to the store, and the pause between tries. */
const TRIES = 3;
const PAUSE_MS = 300;

/** The ledger as one run's model calls see it; `with` gives a session (or a subagent) its own view. */
export class CallLedger {
  /** Shared by every view: set once a row could not be written, and no call starts after it. */
  private readonly state: { unsent?: string };

  constructor(
    private readonly opts: CallLedgerOptions,
    state?: { unsent?: string },
  ) {
    this.state = state ?? {};
  }

  get context(): CallContext {
    return this.opts.context;
  }

  get costCapUsd(): number | undefined {
    return this.opts.costCapUsd;
  }

  /** The same ledger, its calls recorded under a narrower context (a session's id, a routing decision). */
  with(context: Partial<CallContext>): CallLedger {
    return new CallLedger({ ...this.opts, context: { ...this.opts.context, ...context } }, this.state);
  }

  /** Throws CallRefused when a call to `model` (routed by `routing`, when routing chose it) may not start now. */
  async before(model: string, routing?: RouteDecision): Promise<void> {
    if (this.state.unsent)
      throw new CallRefused(
        'store',
        `the team store did not take the last call's ledger row (${this.state.unsent}); it is kept in ${this.opts.unsentPath} and sent at the next start, and no further model call is made`,
      );
    const cap = this.opts.costCapUsd;
    if (cap === undefined) return;
    if (!this.priceOf(model, routing ?? this.opts.context.routing))
      throw new CallRefused('unpriced', unpricedMessage(model, cap));
    const { runId } = this.opts.context;
    let totals: Awaited<ReturnType<Ledger['totals']>>;
    try {
      totals = await this.opts.ledger.totals(runId);
    } catch (err) {
      throw new CallRefused(
        'store',
        `the team store cannot say what run ${runId} has spent (${(err as Error).message}); under --cost-cap no call is made blind`,
      );
    }
    const spent = totals?.costUsd ?? 0;
    if (totals?.unknownCostCalls)
      throw new CallRefused(
        'unpriced',
        `run ${runId} has ${totals.unknownCostCalls} call(s) of unknown cost in the ledger, so its spend is not known to the cent; --cost-cap $${cap} cannot be held`,
      );
    if (spent >= cap)
      throw new CallRefused(
        'cost_cap',
        `cost cap reached: run ${runId} has spent $${spent.toFixed(4)} of its --cost-cap $${cap}; no further model call is made`,
      );
  }

  /** Write the call's row; a row the store does not take is kept locally and stops the run's next call. */
  async record(call: EndedCall): Promise<void> {
    const entry = this.entryFor(call);
    let last: unknown;
    for (let i = 0; i < TRIES; i++) {
      try {
        await this.opts.ledger.record(entry);
        return;
      } catch (err) {
        last = err;
        await new Promise((resolve) => setTimeout(resolve, PAUSE_MS * (i + 1)));
      }
    }
    appendFileSync(this.opts.unsentPath, `${JSON.stringify(entry)}\n`, { mode: 0o600 });
    this.state.unsent = (last as Error).message;
  }

  /** The price a call to `model` is counted at: its tier's own when routing sent it to a priced tier, else `[pricing]`'s. */
  private priceOf(model: string, routing: RouteDecision | undefined): Price | undefined {
    const tiers = this.opts.tierPrices ?? {};
    if (routing && Object.hasOwn(tiers, routing.tier)) return tiers[routing.tier];
    return Object.hasOwn(this.opts.pricing, model) ? this.opts.pricing[model] : undefined;
  }

  private entryFor(call: EndedCall): LedgerEntry {
    const { context } = this.opts;
    const { usage } = call;
    const routing = call.routing ?? context.routing;
    const price = this.priceOf(call.model, routing);
    const priced = price ? costUsd(call.model, usage, { [call.model]: price }, call.latencyMs / 1000) : null;
    // a gpu_second price counts the call's measured seconds, not tokens: known as well as a server's count
    const byTime = price?.gpu_second !== undefined;
    const [cost, source]: [number | undefined, CostSource] =
      usage.costUsd !== undefined
        ? [usage.costUsd, 'metered']
        : priced === null
          ? [undefined, 'unknown']
          : [priced, usage.reported || byTime ? 'priced' : 'estimated'];
    return {
      runId: context.runId,
      ...(context.taskId ? { taskId: context.taskId } : {}),
      ...(context.sessionId ? { sessionId: context.sessionId } : {}),
      provider: call.provider,
      model: call.model,
      ...(routing
        ? { tier: routing.tier, score: routing.score, signals: routing.signals, reason: routing.reason }
        : {}),
      promptTokens: usage.inputTokens,
      completionTokens: usage.outputTokens,
      cachedTokens: usage.cachedTokens ?? 0,
      latencyMs: call.latencyMs,
      ...(cost === undefined ? {} : { costUsd: cost }),
      costSource: source,
      ...((call.reissued ?? context.reissued) ? { reissued: true } : {}),
    };
  }
}

/** What keel says when a cap meets a model it has no price for. */
export function unpricedMessage(model: string, cap: number): string {
  return `--cost-cap $${cap} needs the price of every model the run may call, and model "${model}" has none: add [pricing."${model}"] with input_per_mtok and output_per_mtok to your config`;
}

/**
 * Send the rows an earlier run could not (its `unsentPath`), in one transaction. The file is taken
 * first (renamed), so two processes starting at once never send a row twice; rows the store refuses
 * again go back to the file.
 */
export async function sendUnsent(ledger: Ledger, unsentPath: string): Promise<number> {
  const taken = `${unsentPath}.${process.pid}`;
  try {
    renameSync(unsentPath, taken);
  } catch {
    return 0; // nothing waits
  }
  const text = readFileSync(taken, 'utf8');
  let entries: LedgerEntry[] = [];
  try {
    entries = text
      .split('\n')
      .filter((l) => l.trim())
      .map((l) => JSON.parse(l) as LedgerEntry);
    await ledger.recordAll(entries);
  } catch (err) {
    appendFileSync(unsentPath, text, { mode: 0o600 });
    rmSync(taken, { force: true });
    throw err;
  }
  rmSync(taken, { force: true });
  return entries.length;
}
