import type { Config } from '../config/schema.js';
import { costUsd } from '../model/cost.js';
import { type RouteDecision, routedPricing } from '../model/routing.js';
import { recoverToolCalls } from '../model/text-tool-calls.js';
import { ESTIMATE_MARGIN, estimateRequestTokens } from '../model/tokens.js';
import type { ChatMessage, Delta, ImageAttachment, ModelError, ToolSpec } from '../model/types.js';
import { type HookEvent, runHooks } from '../policy/hooks.js';
import { modeAllows } from '../policy/modes.js';
import type { Policy } from '../policy/policy.js';
import { catalogueTool } from '../tools/catalogue.js';
import { effectsOf, type ToolRegistry, toolSpec } from '../tools/registry.js';
import type { Tool, ToolContext } from '../tools/types.js';
import { streamAnswer } from './answer.js';
import type { Approver } from './approvals.js';
import { exceeded, Spend, type Spent } from './budgets.js';
import { numberCalls } from './call-ids.js';
import { compact, isContextOverflow, requestTokensFromError, windowFromError } from './compaction.js';
import { settleOpenCalls } from './effect-resume.js';
import type { SessionEvent, TokenCount } from './events.js';
import { initialState, reduce, type SessionState } from './history.js';
import { imageCache, imageRef, withImages } from './images.js';
import { startRun } from './opening.js';
import { classify, Stop } from './stop.js';
import type { BudgetName, TerminalCode } from './terminal.js';
import { type CallRun, runCall } from './tool-call.js';

export interface StreamHooks {
  onRetry?(info: { attempt: number; error: ModelError; delayMs: number; model: string }): void;
  onFallback?(info: { from: string; to: string; error: ModelError }): void;
}

/** What the loop needs from a model client (the fallback chain in model/ implements it). */
export interface SessionModel {
  readonly provider: string;
  currentModel(): string;
  /** Routing by difficulty: where the next call goes and why (undefined: no routing, the client's own model). */
  route?(): RouteDecision | undefined;
  stream(
    request: { messages: ChatMessage[]; tools: ToolSpec[]; contextWindow?: number },
    signal: AbortSignal,
    hooks: StreamHooks,
  ): AsyncIterable<Delta>;
  /** A request's size in the server's tokens (its /tokenize, else keel's estimate plus a margin). */
  countRequestTokens?(
    messages: ChatMessage[],
    tools: ToolSpec[],
    signal?: AbortSignal,
  ): Promise<{ tokens: number; by: 'server' | 'estimate' }>;
}

/**
 * Where events go: the store appends them (durably) before the action they record happens, and
 * returns the event's seq in the log.
 */
export type Recorder = (event: SessionEvent) => number;

export interface SessionOptions {
  /** Mode, scope, shell, sandbox, network, hooks and budgets: what the gate decides with. */
  policy: Policy;
  prompt: string;
  /** Images attached to the prompt, with their bytes (the log keeps them by hash: agent/images.ts). */
  images?: ImageAttachment[];
  /** An image of the history that is not sent again (its file changed or went): why, once per image. */
  onImageMissing?(image: ImageAttachment, why: string): void;
  /** The rest of the settings (pricing, loop threshold, compaction, ...); never the gate's inputs. */
  config: Config;
  model: SessionModel;
  tools: ToolRegistry;
  record: Recorder;
  signal: AbortSignal;
  sessionId: string;
  /** Runs shell commands inside the sandbox, when one is set up. */
  sandboxExec?: ToolContext['exec'];
  /** Runs shell commands without a sandbox: used only when the gate says the user allowed that. */
  plainExec?: ToolContext['exec'];
  /** Run the project's tests, for `run_tests`; the session decides how (sandboxed or not). */
  runTests?(
    filter: string | undefined,
    signal: AbortSignal,
    sandboxed: boolean,
  ): Promise<{ output: string; failed: boolean }>;
  /**
   * Ask the person (interactive sessions only). Absent: a hook's question is answered no, and a
   * question only keel's `approvals` setting asks is not asked (the policy alone decides).
   */
  approve?: Approver;
  /** Called before every write or exec call with its canonical paths; returns what it saved, to record. */
  beforeWrite?(
    paths: string[],
  ): Array<{ [key: string]: unknown }> | Promise<Array<{ [key: string]: unknown }>>;
  /** Live assistant text, for rendering. */
  onText?(text: string): void;
  /** A running call's output as it is produced (not recorded: the call's result is), for live display. */
  onToolOutput?(callId: string, text: string, stream: 'stdout' | 'stderr'): void;
  /** Live reasoning text, for rendering (dimmed); it never enters the history as answer text. */
  onReasoning?(text: string): void;
  contextWindow?: number;
  /** A session reopened from its log: the state its events fold to. A new run of it starts. */
  resume?: SessionState;
  /** Memory for the system prompt of a new session (recorded in session_start's system_prompt as sent). */
  memory?: string;
  /** The skills catalog for the system prompt (src/skills/catalog.ts), when the session has skills. */
  skills?: string;
  /** Messages sent to this session while it runs (a parent steering its subagent), read before each request. */
  inbox?(): string[];
  /** Context for a new session (the repo map), recorded right after session_start, before the task. */
  context?: SessionEvent[];
  /**
   * This session's place in its tree's one spending counter (a subagent's is under its parent's); it is
   * charged as each answer arrives. Default: a counter of its own.
   */
  spend?: Spend;
  /** Run just before the end is recorded (a session's subagents end there), so the end counts what they spent. */
  beforeEnd?(): Promise<void>;
  /**
   * The workspace's state as a git tree, for a session that can be resumed after a kill (a fix's): each
   * command's intent records the tree, and a resume settles the calls a killed run left open by the rules
   * of effect-resume.ts instead of reporting them interrupted.
   */
  worktree?: WorktreeJournal;
}

/** The workspace as a tree id, and back: what a command's intent records and a resume restores. */
export interface WorktreeJournal {
  tree(): string;
  restore(tree: string): void;
}

export interface SessionResult {
  code: TerminalCode;
  reason: string;
  budget?: BudgetName;
  summary: string;
  rounds: number;
  tokens: TokenCount;
  costUsd: number | null;
  filesChanged: string[];
  /** 'length': the run's last answer was cut at the output limit (`max_output_tokens`), so its text is partial. */
  finish?: 'length';
}

/** How many times a Stop hook may send the model back before the run ends HOOK_DENIED. */
const MAX_STOP_HOOK_RETRIES = 3;
/** How many times a run asks the model to go on after an answer cut at the output limit. */
const MAX_CUT_OFF_RETRIES = 2;

/** Run one session to its terminal code. Never throws for a run that ends badly: the code says it. */
export async function runSession(opts: SessionOptions): Promise<SessionResult> {
  const { config, tools, policy } = opts;
  const { scope, mode, budgets } = policy;
  const hooks = [...policy.hooks];
  const started = Date.now();
  const state = opts.resume ?? initialState();
  const images = imageCache(opts.images);
  // the core set from the first request; the rest on demand, through the catalogue (`tools`)
  const allowed = (tool: Tool) => effectsOf(tool).some((effect) => modeAllows(mode, effect));
  const units = tools
    .names()
    .map((name) => tools.get(name) as Tool)
    .filter(allowed);
  const core = units.filter((t) => tools.isCore(t.name)).map((t) => t.name);
  const deferred = units.filter((t) => !tools.isCore(t.name));
  const activated = () => deferred.filter((t) => state.active.includes(t.name));
  const catalogue = deferred.length
    ? catalogueTool({
        mode,
        entries: () =>
          deferred
            .filter((t) => !state.active.includes(t.name))
            .map((t) => ({ name: t.name, description: t.description })),
        activate: (names) => record({ type: 'tools_activated', tools: names }),
        unitOf: (name) => {
          const unit = tools.unit(name);
          return unit && allowed(unit) ? unit.name : undefined;
        },
      })
    : undefined;
  const initial = [...core, ...(catalogue ? [catalogue.name] : [])];
  let offered: string[] = [];
  let specs: ToolSpec[] = [];
  /** What requests offer: the core set and the catalogue, then each tool activated so far (the log says which). */
  const offer = () => {
    const now = [...initial, ...activated().map((t) => t.name)];
    if (now.length === offered.length) return;
    offered = now;
    specs = now.map((name) => toolSpec(name === catalogue?.name ? catalogue : (tools.get(name) as Tool)));
  };
  const spend = opts.spend ?? new Spend(budgets);
  /** Record an event and fold it into the state: the one way anything changes. */
  const record = (event: SessionEvent): number => {
    const seq = opts.record(event);
    reduce(state, event, seq);
    // what a run starts from (a resumed session's own spending so far), then each answer as it arrives
    const spent =
      event.type === 'session_start' || event.type === 'session_resume'
        ? { input: state.tokens.input, output: state.tokens.output, costUsd: state.cost }
        : spentBy(event);
    if (spent) spend.add(spent);
    if (event.type === 'tools_activated') offer();
    return seq;
  };
  offer();
  // a killed run resumed goes on from its last answer (a session's summary is its last text)
  let lastText = opts.resume && opts.worktree ? state.lastText : '';
  const filesChanged = new Set<string>();

  // one controller for the run: the user's Ctrl+C and the wall-clock budget both abort it
  const run = new AbortController();
  const onAbort = () => run.abort(new Stop('CANCELLED', 'interrupted by the user'));
  if (opts.signal.aborted) onAbort();
  opts.signal.addEventListener('abort', onAbort, { once: true });
  const wall = budgets.max_wall_s;
  const wallTimer =
    wall === undefined
      ? undefined
      : setTimeout(
          () => run.abort(new Stop('BUDGET_EXCEEDED', `ran past max_wall_s (${wall} s)`, 'max_wall_s')),
          wall * 1000,
        );

  startRun(opts, record, state, initial);
  const hookBase = { session_id: opts.sessionId, cwd: scope.root, mode: mode };
  /** What each of the model's calls runs with (tool-call.ts). */
  const callRun: CallRun = {
    opts,
    state,
    catalogue,
    allowed,
    offered: () => offered,
    hooks,
    hookBase,
    record,
    run,
    filesChanged,
  };
  /** Run the hooks for a tool-less event; every verdict is recorded. */
  const hook = async (event: HookEvent, extra: { prompt?: string; result?: unknown } = {}) => {
    if (!hooks.some((h) => h.event === event)) return { decision: 'allow' as const };
    const verdict = await runHooks(
      hooks,
      { ...hookBase, event, ...extra },
      { cwd: scope.root, signal: run.signal },
    );
    record({
      type: 'hook',
      event,
      decision: verdict.decision,
      ...(verdict.decision !== 'allow' ? { reason: verdict.reason, hook: verdict.hook } : {}),
    });
    return verdict;
  };

  // rounds, wall time and lines changed count per run; tokens and cost over the life of the session and
  // its subagents, and of every session above it (one counter for the tree)
  const usage = () => ({
    rounds: state.run.rounds,
    tokens: spend.tokens,
    costUsd: spend.costUsd,
    wallS: (Date.now() - started) / 1000,
    diffLines: state.run.diffLines,
  });
  const checkBudgets = () => {
    const breach = exceeded(budgets, usage()) ?? spend.exceeded();
    if (breach) throw new Stop('BUDGET_EXCEEDED', breach.reason, breach.budget);
  };
  const throwIfAborted = () => {
    if (run.signal.aborted) throw run.signal.reason;
  };

  let result: { code: TerminalCode; reason: string; budget?: BudgetName };
  let stopHookRetries = 0;
  // the window: configured or reported by the server; a "context length exceeded" answer can teach it
  let window = opts.contextWindow;
  /** Fold older turns into a summary (recorded as one event); a failed summary leaves the history as it was. */
  /** Where routing sent the last request (undefined without routing): its tier's price is what the call costs. */
  let routed: RouteDecision | undefined;
  const compactHistory = async (trigger: 'threshold' | 'overflow' | 'manual', size: number) => {
    let event: Awaited<ReturnType<typeof compact>>;
    try {
      event = await compact({
        state,
        model: opts.model,
        trigger,
        window: size,
        settings: config.compaction,
        tools: specs,
        pricing: routedPricing(config, routed, routed?.model ?? opts.model.currentModel()),
        signal: run.signal,
      });
    } catch (err) {
      throwIfAborted();
      record({ type: 'compaction_failed', trigger, error: (err as Error).message });
      return false;
    }
    if (!event) return false;
    record(event);
    return true;
  };
  /**
   * The history's size in the server's tokens, and how many of those one token of keel's estimate
   * stands for (compaction budgets in estimate units). `known`: a count the server gave for it.
   */
  const measure = async (messages: ChatMessage[], known?: number) => {
    const estimate = Math.max(1, estimateRequestTokens(messages, specs));
    if (known !== undefined)
      return { tokens: known, by: 'server' as const, estimate, ratio: Math.max(1, known / estimate) };
    const counted = opts.model.countRequestTokens
      ? await opts.model.countRequestTokens(messages, specs, run.signal)
      : { tokens: Math.ceil(estimate * (1 + ESTIMATE_MARGIN)), by: 'estimate' as const };
    throwIfAborted();
    return { ...counted, estimate, ratio: Math.max(1, counted.tokens / estimate) };
  };
  /** One model request from the state; a request too big for the server compacts once and is sent once more. */
  const request = async (round: number) => {
    for (let attempt = 0; ; attempt++) {
      // pictures go with their bytes, read again while their files still hold them; the log keeps hashes
      const messages = withImages(state.messages, scope.root, images, opts.onImageMissing);
      const body = { messages, tools: specs, contextWindow: opts.contextWindow };
      const estimate = estimateRequestTokens(messages, specs);
      // decided from the log as it stands before this request, so a resumed run decides the same
      const route = opts.model.route?.();
      routed = route;
      // logged before it is sent: a request logged without its answer was cut off, and is sent again
      const reissued = state.unanswered === round;
      record({
        type: 'model_request',
        round,
        model: route?.model ?? opts.model.currentModel(),
        messages: messages.length,
        est_tokens: estimate,
        bytes: Buffer.byteLength(JSON.stringify(body)),
        ...(route
          ? {
              route: {
                tier: route.tier,
                provider: route.provider,
                score: route.score,
                signals: route.signals,
                reason: route.reason,
              },
            }
          : {}),
        ...(reissued ? { reissued: true as const } : {}),
      });
      try {
        return await streamAnswer(
          { ...opts, record },
          reissued ? { ...body, reissued } : body,
          run.signal,
          round,
        );
      } catch (err) {
        if (attempt > 0 || !isContextOverflow(err)) throw err;
        // the server's own numbers are the truth; else assume the request was a little too big
        const sent = await measure(messages, requestTokensFromError(err));
        window =
          windowFromError(err) ??
          (window !== undefined ? Math.min(window, sent.tokens) : Math.floor(sent.tokens * 0.9));
        if (!(await compactHistory('overflow', Math.floor(window / sent.ratio)))) throw err;
        // sending a history the server has already refused would only fail again: it must now fit
        const now = await measure(state.messages);
        // the server's count of what it refused says how far keel's estimate is off on this server
        const size =
          now.by === 'estimate' && sent.by === 'server' ? Math.ceil(now.estimate * sent.ratio) : now.tokens;
        if (size >= window) {
          const n = (x: number) => x.toLocaleString('en-US');
          throw new Stop(
            'MODEL_ERROR',
            `the history is about ${n(size)} tokens even after compaction, still more than the server's context window of ${n(window)} tokens (${windowFromError(err) !== undefined ? 'from its error' : 'as keel knows it'}): start a new session with less in it, or run the model with a larger context`,
          );
        }
      }
    }
  };
  let cutOffRetries = 0;
  // whether the last answer was cut at the output limit: the run's answer is then partial, and faces say so
  let lastCut = false;
  try {
    // a resumed run without a new message goes on from where the last one stopped
    const steps = opts.prompt
      ? ([
          ['SessionStart', {}],
          ['UserPromptSubmit', { prompt: opts.prompt }],
        ] as const)
      : ([['SessionStart', {}]] as const);
    for (const [event, extra] of steps) {
      const verdict = await hook(event, extra);
      if (verdict.decision !== 'allow') throw new Stop('HOOK_DENIED', `${event} hook: ${verdict.reason}`);
    }
    // a session's open call that is idempotent by its own id (hub_send) runs again before anything else:
    // the hub gives its first run's message back (opening.ts answered every other open call)
    if (opts.resume && !opts.worktree && state.open.size) await settleOpenCalls(callRun, undefined);
    if (opts.prompt)
      record({
        type: 'user_message',
        text: opts.prompt,
        ...(opts.images?.length ? { images: opts.images.map(imageRef) } : {}),
      });
    // a killed run's open calls, settled by their intents before anything else happens
    if (opts.resume && opts.worktree) await settleOpenCalls(callRun, opts.worktree);
    // killed after its final answer was logged: the session ends as it would have, no new request
    let answered = opts.resume !== undefined && opts.worktree !== undefined && endedOnAnswer(state);
    for (;;) {
      if (answered) {
        answered = false;
        const verdict = await hook('Stop', { result: state.lastText });
        if (verdict.decision !== 'deny') {
          result = { code: 'COMPLETED', reason: 'the model answered without tool calls' };
          break;
        }
        stopHookRetries++;
        record({ type: 'user_message', text: `The task is not finished: ${verdict.reason}` });
      }
      throwIfAborted();
      checkBudgets();
      // steering that arrived while the last step ran: every call has its answer by now, so it fits here
      for (const text of opts.inbox?.() ?? []) record({ type: 'user_message', text });
      // the round a killed run asked the model and never heard back for is asked again, as that round
      const round = state.unanswered ?? state.rounds + 1;
      if (window !== undefined) {
        const size = await measure(state.messages);
        // compaction budgets are in keel's estimate: the window in those units
        if (size.tokens > config.compaction.threshold * window)
          await compactHistory('threshold', Math.floor(window / size.ratio));
      }
      const answer = await request(round);
      // a call written as text may name any tool the mode allows: one not offered yet is activated as it runs
      const known = new Set([...offered, ...units.map((t) => t.name)]);
      let calls = answer.calls;
      let text = answer.text;
      const malformed: Array<{ name: string; raw: string; error: string }> = [];
      if (calls.length === 0 && text) {
        // small models often write the call as text; take it back as a real call
        const recovered = recoverToolCalls(text, [...known]);
        calls = recovered.calls;
        if (calls.length > 0 || recovered.malformed.length > 0) text = recovered.remainingText;
        for (const m of recovered.malformed)
          malformed.push({ name: m.name ?? 'unknown', raw: m.raw, error: m.error });
      }
      const recoveredCount = answer.calls.length === 0 ? calls.length : 0;
      // keel's own ids, unique in the session: a provider's repeat from one answer to the next
      calls = numberCalls(calls, state.calls, recoveredCount === 0);
      const cutOff = answer.finishReason === 'length';
      lastCut = cutOff;
      const roundCost = costUsd(
        answer.model,
        {
          inputTokens: answer.usage.input,
          outputTokens: answer.usage.output,
          reported: answer.usage.reported,
        },
        // a routed call at its tier's own price (two tiers may serve one model at different prices)
        routedPricing(config, routed, answer.model),
        answer.timing.total_ms / 1000,
      );
      const invalid = malformed.map((m, i) => ({ id: `malformed_${round}_${i}`, name: m.name }));
      record({
        type: 'assistant_message',
        round,
        model: answer.model,
        text,
        tool_calls: calls,
        ...(invalid.length ? { invalid_calls: invalid } : {}),
        ...(answer.reasoning ? { reasoning: answer.reasoning } : {}),
        ...(answer.finishReason ? { finish_reason: answer.finishReason } : {}),
        recovered: recoveredCount,
        usage: { ...answer.usage },
        cost_usd: roundCost,
        timing: answer.timing,
      });
      if (text.trim()) lastText = text.trim();
      for (const [i, m] of malformed.entries()) {
        const error = cutOff
          ? `your reply was cut off at the output token limit (finish_reason: length) before this tool call was complete; make the call again with shorter arguments (for a large file, write it in parts)`
          : `your tool call could not be parsed (${m.error}); write the call again with valid JSON arguments`;
        record({ type: 'tool_call_invalid', round, call_id: invalid[i]?.id ?? '', tool: m.name, error });
      }
      if (calls.length === 0 && malformed.length === 0 && cutOff && cutOffRetries < MAX_CUT_OFF_RETRIES) {
        // an answer cut at the output limit is not an answer: ask for the rest, a few times at most
        cutOffRetries++;
        record({
          type: 'user_message',
          text: 'Your reply was cut off at the output token limit. Continue from where it stopped, more briefly.',
        });
        continue;
      }
      if (calls.length === 0 && malformed.length === 0) {
        // a Stop hook that denies sends the model back to work with the hook's reason (a few times at most)
        const verdict = await hook('Stop', { result: text });
        if (verdict.decision === 'deny' && stopHookRetries < MAX_STOP_HOOK_RETRIES) {
          stopHookRetries++;
          const note = `The task is not finished: ${verdict.reason}`;
          record({ type: 'user_message', text: note });
          continue;
        }
        if (verdict.decision === 'deny') throw new Stop('HOOK_DENIED', `Stop hook: ${verdict.reason}`);
        result = {
          code: 'COMPLETED',
          reason: cutOff
            ? 'the answer was cut off at the output token limit (finish_reason: length)'
            : 'the model answered without tool calls',
        };
        break;
      }
      for (const call of calls) {
        throwIfAborted();
        await runCall(callRun, call, round, cutOff);
        checkBudgets();
      }
    }
  } catch (err) {
    result = classify(err, run.signal);
  } finally {
    clearTimeout(wallTimer);
    opts.signal.removeEventListener('abort', onAbort);
  }
  await opts.beforeEnd?.();
  // subagents spend while their parent answers, and need not be waited for: what they spent still counts
  if (result.code === 'COMPLETED' && spend.tokens > state.tokens.input + state.tokens.output) {
    const breach = spend.exceeded();
    if (breach)
      result = {
        code: 'BUDGET_EXCEEDED',
        reason: `${breach.reason} (its subagents spent while it answered)`,
        budget: breach.budget,
      };
  }

  const summary =
    result.code === 'COMPLETED' ? lastText : `${result.reason}${lastText ? `\n\n${lastText}` : ''}`;
  const files = [...filesChanged].sort();
  const { rounds } = state.run;
  // the session's totals are its tree's: its own answers and everything its subagents spent
  const tokens = { input: spend.input, output: spend.output };
  record({
    type: 'session_end',
    code: result.code,
    reason: result.reason,
    ...(result.budget ? { budget: result.budget } : {}),
    summary,
    rounds,
    tokens,
    cost_usd: spend.costUsd,
    files_changed: files,
    ...(lastCut ? { finish: 'length' as const } : {}),
  });
  return {
    ...result,
    summary,
    rounds,
    tokens,
    costUsd: spend.costUsd,
    filesChanged: files,
    ...(lastCut ? { finish: 'length' as const } : {}),
  };
}

/** The log ends on an answer without calls (cut off neither by a kill before its answer nor at the output limit). */
function endedOnAnswer(state: SessionState): boolean {
  const last = state.messages.at(-1);
  return last?.role === 'assistant' && !last.toolCalls?.length && state.unanswered === undefined;
}

/** What an event records as spent on the model: an answer's usage, a compaction's summary request. */
function spentBy(event: SessionEvent): Spent | undefined {
  if (event.type === 'assistant_message')
    return { input: event.usage.input, output: event.usage.output, costUsd: event.cost_usd };
  if (event.type === 'compaction' && (event.usage || event.cost_usd !== undefined))
    return {
      input: event.usage?.input ?? 0,
      output: event.usage?.output ?? 0,
      costUsd: event.cost_usd === undefined ? 0 : event.cost_usd,
    };
  return undefined;
}
