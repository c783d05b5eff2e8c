/**
 * The agent loop: a fold over events. Each round streams the model, gates and runs its tool calls;
 * every event is recorded and folded into the session state (history.ts), and the next request is
 * built from that state alone, so a session reopened from its log goes on exactly where it stopped.
 */
import { createHash } from 'node:crypto';
import { realpathSync } from 'node:fs';
import { isAbsolute, relative, sep } from 'node:path';
import type { Config } from '../config/schema.js';
import { costUsd } from '../model/cost.js';
import { recoverToolCalls } from '../model/text-tool-calls.js';
import { ESTIMATE_MARGIN, estimateRequestTokens } from '../model/tokens.js';
import type { ChatMessage, Delta, ModelError, ToolCall, ToolSpec } from '../model/types.js';
import { type Ask, type Decision, decide } from '../policy/gate.js';
import { type HookEvent, type HookSpec, matchingHooks, runHooks } from '../policy/hooks.js';
import { modeAllows } from '../policy/modes.js';
import type { Policy } from '../policy/policy.js';
import { ScopeError } from '../policy/scope.js';
import { catalogueTool } from '../tools/catalogue.js';
import { isFamily, resolveAction } from '../tools/family.js';
import { effectsOf, parseArgs, type ToolRegistry, toolSpec } from '../tools/registry.js';
import { capResult } from '../tools/truncate.js';
import { type Tool, type ToolContext, ToolError, type ToolResult } from '../tools/types.js';
import { streamAnswer } from './answer.js';
import { type ApprovalRequest, type Approver, newQuestionId } from './approvals.js';
import { exceeded, Spend, type Spent } from './budgets.js';
import { numberCalls } from './call-ids.js';
import { compact, isContextOverflow, requestTokensFromError, windowFromError } from './compaction.js';
import type { SessionEvent, TokenCount } from './events.js';
import { initialState, reduce, type SessionState } from './history.js';
import { loadInstructions } from './instructions.js';
import { systemPrompt } from './prompt.js';
import { type BudgetName, RunError, type TerminalCode } from './terminal.js';

export interface StreamHooks {
  onRetry?(info: { attempt: number; error: ModelError; delayMs: number; model: string }): void;
  onFallback?(info: { from: string; to: string; error: ModelError }): void;
}

/** What the loop needs from a model client (the fallback chain in model/ implements it). */
export interface SessionModel {
  readonly provider: string;
  currentModel(): string;
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

class Stop extends Error {
  constructor(
    readonly code: TerminalCode,
    readonly reason: string,
    readonly budget?: BudgetName,
  ) {
    super(reason);
  }
}

/** Run one session to its terminal code. Never throws for a run that ends badly: the code says it. */
export async function runSession(opts: SessionOptions): Promise<SessionResult> {
  const { config, tools, policy } = opts;
  const { scope, mode, budgets } = policy;
  const hooks = [...policy.hooks];
  const started = Date.now();
  const state = opts.resume ?? initialState();
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
  let lastText = '';
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

  if (opts.resume) resumeRun(opts, record, state);
  else {
    const instructions = loadInstructions(scope.root);
    record({
      type: 'session_start',
      mode: mode,
      provider: opts.model.provider,
      model: opts.model.currentModel(),
      cwd: scope.root,
      scope: scope.writable.map((p) => scope.display(p)),
      instructions: instructions.files,
      ...(instructions.skipped.length ? { instructions_skipped: instructions.skipped } : {}),
      tools: initial,
      system_prompt: systemPrompt({
        mode: mode,
        root: scope.root,
        instructions: instructions.text,
        ...(opts.memory ? { memory: opts.memory } : {}),
        ...userFolder(scope.root),
      }),
      pid: process.pid,
      // null cost, not 0, when the user gave no price for this model: keel never invents a cost
      priced:
        costUsd(
          opts.model.currentModel(),
          { inputTokens: 0, outputTokens: 0, reported: true },
          config.pricing,
        ) !== null,
    });
    for (const event of opts.context ?? []) record(event);
  }
  const hookBase = { session_id: opts.sessionId, cwd: scope.root, mode: mode };
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
        pricing: config.pricing,
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
      const { messages } = state;
      const body = { messages, tools: specs, contextWindow: opts.contextWindow };
      const estimate = estimateRequestTokens(messages, specs);
      record({
        type: 'model_request',
        round,
        model: opts.model.currentModel(),
        messages: messages.length,
        est_tokens: estimate,
        bytes: Buffer.byteLength(JSON.stringify(body)),
      });
      try {
        return await streamAnswer({ ...opts, record }, body, run.signal, round);
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
    if (opts.prompt) record({ type: 'user_message', text: opts.prompt });
    for (;;) {
      throwIfAborted();
      checkBudgets();
      // steering that arrived while the last step ran: every call has its answer by now, so it fits here
      for (const text of opts.inbox?.() ?? []) record({ type: 'user_message', text });
      const round = state.rounds + 1;
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
        config.pricing,
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
        await runCall(call, round, cutOff);
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

  function matchingPostHooks(name: string): HookSpec[] {
    return matchingHooks(hooks, 'PostToolUse', name);
  }

  /**
   * Answer an ask: the person sees the file and its diff, or the exact command, and a yes resumes the
   * chain where it stopped (the same paths and sandbox). With no one to ask, a hook's question is a no,
   * and keel's own `approvals` question is not asked: the policy already allows the call.
   */
  async function settle(ask: Ask, tool: Tool, args: unknown, call: ToolCall, id: string): Promise<Decision> {
    const approve = opts.approve;
    if (!approve) {
      if (!ask.hook) return ask.ifConfirmed;
      return {
        kind: 'deny',
        deny: 'hook',
        reason: `${ask.question} (no one to ask in an unattended session)`,
      };
    }
    const request: ApprovalRequest = {
      id,
      callId: call.id,
      tool: tool.name,
      kind: ask.hook ? 'hook' : (ask.approval ?? 'hook'),
      reason: ask.question,
      args,
    };
    if (tool.preview) {
      try {
        Object.assign(request, await tool.preview(args, baseContext()));
      } catch (err) {
        // the call would fail the same way when it runs: no question about a change that cannot happen
        if (err instanceof ToolError || err instanceof ScopeError || isFsError(err)) return ask.ifConfirmed;
        throw err;
      }
    }
    if (tool.effect === 'exec') {
      const a = (args ?? {}) as { command?: unknown; filter?: unknown };
      request.command =
        typeof a.command === 'string'
          ? a.command
          : `${tool.name}${typeof a.filter === 'string' ? ` ${a.filter}` : ''}`;
      request.sandboxed = ask.ifConfirmed.sandboxed;
    }
    const answer = await approve(request);
    if (answer.allow) return ask.ifConfirmed;
    const said = answer.message?.trim();
    return {
      kind: 'deny',
      deny: 'user',
      reason: said ? `the user declined: ${said}` : 'the user declined',
    };
  }

  function baseContext(): ToolContext {
    return { cwd: scope.root, signal: run.signal, resolve: (path, access) => scope.resolve(path, access) };
  }

  async function runCall(call: ToolCall, round: number, cutOff: boolean): Promise<string> {
    const own = catalogue && call.name === catalogue.name;
    const named = own ? catalogue : tools.get(call.name);
    const unit = own ? catalogue : tools.unit(call.name);
    if (!named || !unit || !allowed(unit)) {
      const error = named
        ? `${call.name} is not available in ${mode} mode`
        : `unknown tool "${call.name}"; available: ${offered.join(', ')}`;
      record({ type: 'tool_call_invalid', round, call_id: call.id, tool: call.name, error });
      if (named)
        record({
          type: 'gate_decision',
          call_id: call.id,
          tool: call.name,
          decision: 'deny',
          deny: 'mode',
          reason: error,
        });
      return `Error: ${error}`;
    }
    // a tool the mode allows but not offered yet (a small model that knows its name): activated, then gated as usual
    if (!offered.includes(unit.name))
      record({ type: 'tools_activated', tools: [unit.name], call_id: call.id });
    // a family's call is its action's tool from here on: the gate, hooks and the log see that tool
    let tool: Tool = named;
    let raw = call.arguments;
    if (isFamily(named)) {
      const action = resolveAction(named, raw);
      if (!action.ok) {
        record({ type: 'tool_call_invalid', round, call_id: call.id, tool: call.name, error: action.error });
        return `Error: ${action.error}`;
      }
      ({ tool, raw } = action);
    }
    const name = tool.name;
    const parsed = parseArgs(tool, raw);
    if (!parsed.ok) {
      const error = cutOff
        ? `your reply was cut off at the output token limit (finish_reason: length) before this call's arguments were complete (${parsed.error}); make the call again with shorter arguments`
        : parsed.error;
      record({ type: 'tool_call_invalid', round, call_id: call.id, tool: name, error });
      return `Error: ${error}`;
    }
    const fingerprint = createHash('sha256')
      .update(`${name}:${stableJson(parsed.args)}`)
      .digest('hex')
      .slice(0, 16);
    const seen = (state.seen.get(fingerprint) ?? 0) + 1;
    if (seen >= config.loop_threshold) {
      throw new Stop(
        'LOOP_DETECTED',
        `the same ${name} call was made ${seen} times with no change to the files in between`,
      );
    }
    let decision = await decide(tool, parsed.args, { policy, hookBase, signal: run.signal });
    // a question has keel's own id, never the model's call id (a subagent and its parent may share one)
    let asked: { question_id: string } | Record<string, never> = {};
    if (decision.kind === 'ask') {
      asked = { question_id: newQuestionId() };
      record({
        type: 'gate_decision',
        call_id: call.id,
        tool: name,
        decision: 'ask',
        reason: decision.question,
        ...asked,
      });
      decision = await settle(decision, tool, parsed.args, call, asked.question_id);
    }
    if (decision.kind === 'deny') {
      record({
        type: 'gate_decision',
        call_id: call.id,
        tool: name,
        decision: 'deny',
        reason: decision.reason,
        deny: decision.deny,
        ...asked,
        fingerprint,
      });
      if (decision.deny === 'scope' && config.stop_on_violation)
        throw new Stop('SCOPE_VIOLATION', decision.reason);
      return `Error: denied: ${decision.reason}`;
    }
    if (decision.kind !== 'allow') throw new Error('unreachable: gate decision not settled');
    record({
      type: 'gate_decision',
      call_id: call.id,
      tool: name,
      decision: 'allow',
      ...asked,
      fingerprint,
    });
    if (tool.effect === 'write' || tool.effect === 'exec') {
      // no safety net, no write: a snapshot that fails ends the run before anything is touched
      let saved: Array<{ [key: string]: unknown }> = [];
      try {
        saved = (await opts.beforeWrite?.(decision.paths)) ?? [];
      } catch (err) {
        throw new RunError(
          'ENVIRONMENT_ERROR',
          `safety net failed before ${name}: ${(err as Error).message}`,
        );
      }
      for (const r of saved) record({ type: 'safety_net', ...r });
    }
    const sandboxed = tool.effect === 'exec' ? decision.sandboxed : undefined;
    record({
      type: 'tool_start',
      call_id: call.id,
      tool: name,
      args: parsed.args,
      ...(sandboxed === undefined ? {} : { sandboxed }),
    });
    const t0 = Date.now();
    const ctx: ToolContext = { ...baseContext(), ...(decision.child ? { granted: decision.child } : {}) };
    const onToolOutput = opts.onToolOutput;
    if (onToolOutput) ctx.onOutput = (text, stream) => onToolOutput(call.id, text, stream);
    const exec = sandboxed ? opts.sandboxExec : opts.plainExec;
    if (exec) ctx.exec = exec;
    const runTests = opts.runTests;
    if (runTests) ctx.runTests = (filter, signal) => runTests(filter, signal, sandboxed === true);
    let output: string;
    let isError = false;
    let changed: string[] = [];
    let lines = 0;
    let violations: string[] = [];
    let diff: string | undefined;
    let outcome: ToolResult['outcome'];
    try {
      const res = await tool.execute(parsed.args, ctx);
      output = res.output;
      isError = res.isError ?? false;
      changed = res.filesChanged ?? [];
      lines = res.diffLines ?? 0;
      violations = res.violations ?? [];
      diff = res.diff;
      outcome = res.outcome;
    } catch (err) {
      if (run.signal.aborted) throw run.signal.reason;
      if (!(err instanceof ToolError || err instanceof ScopeError || isFsError(err))) throw err;
      output = `Error: ${(err as Error).message}`;
      isError = true;
      if (err instanceof ScopeError) {
        record({
          type: 'gate_decision',
          call_id: call.id,
          tool: name,
          decision: 'deny',
          deny: 'scope',
          reason: err.message,
        });
        if (config.stop_on_violation) throw new Stop('SCOPE_VIOLATION', err.message);
      }
    }
    // whatever the tool (an MCP server may answer with megabytes), the model and the log get the capped result
    output = capResult(output);
    for (const f of changed) filesChanged.add(f);
    const post = matchingPostHooks(name);
    if (post.length) {
      const verdict = await runHooks(
        post,
        {
          ...hookBase,
          event: 'PostToolUse',
          tool: name,
          args: parsed.args,
          result: { output, is_error: isError },
        },
        { cwd: scope.root, signal: run.signal },
      );
      record({
        type: 'hook',
        event: 'PostToolUse',
        tool: name,
        decision: verdict.decision,
        ...(verdict.decision !== 'allow' ? { reason: verdict.reason, hook: verdict.hook } : {}),
      });
      // the tool already ran; a PostToolUse objection becomes feedback the model must read (its end is kept)
      if (verdict.decision !== 'allow')
        output = capResult(`${output}\n\n[hook ${verdict.hook}]: ${verdict.reason}`);
    }
    record({
      type: 'tool_result',
      call_id: call.id,
      tool: name,
      output,
      is_error: isError,
      files_changed: changed,
      diff_lines: lines,
      duration_ms: Date.now() - t0,
      ...(outcome ? { outcome } : {}),
      ...(diff ? { diff } : {}),
    });
    if (violations.length) {
      record({ type: 'violation', call_id: call.id, tool: name, removed: violations });
      if (config.stop_on_violation)
        throw new Stop('SCOPE_VIOLATION', `${name} created protected names: ${violations.join(', ')}`);
    }
    throwIfAborted();
    return output;
  }
}

function classify(
  err: unknown,
  signal: AbortSignal,
): { code: TerminalCode; reason: string; budget?: BudgetName } {
  const cause = signal.aborted && !(err instanceof Stop) ? signal.reason : err;
  if (cause instanceof Stop)
    return { code: cause.code, reason: cause.reason, ...(cause.budget ? { budget: cause.budget } : {}) };
  if (cause instanceof RunError) return { code: cause.code, reason: cause.message };
  if (cause instanceof Error && cause.name === 'ModelError')
    return { code: 'MODEL_ERROR', reason: cause.message };
  // a fault of keel or of this machine (a bug, a full disk): the run still ends with one terminal code,
  // and the log says what threw and where
  const stack = cause instanceof Error ? (cause.stack ?? cause.message) : String(cause);
  const where = stack
    .split('\n')
    .find((line) => line.trim().startsWith('at '))
    ?.trim();
  const what = cause instanceof Error ? `${cause.name}: ${cause.message}` : String(cause);
  return { code: 'ENVIRONMENT_ERROR', reason: `unexpected error: ${what}${where ? ` (${where})` : ''}` };
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

function isFsError(err: unknown): boolean {
  return err instanceof Error && typeof (err as NodeJS.ErrnoException).code === 'string' && 'syscall' in err;
}

/**
 * Open a new run of a reopened session. Calls the last run left without an answer are answered
 * now, from the log, and never run again: one that started may have done part of its work, and
 * the model is told so; one that never started is reported as not run.
 */
function resumeRun(opts: SessionOptions, record: (event: SessionEvent) => number, state: SessionState): void {
  const pending = [...state.open.entries()];
  record({
    type: 'session_resume',
    run: state.run.number + 1,
    mode: opts.policy.mode,
    provider: opts.model.provider,
    model: opts.model.currentModel(),
    pid: process.pid,
  });
  for (const [callId, call] of pending) {
    record({
      type: 'tool_result',
      call_id: callId,
      tool: call.tool,
      output: call.started
        ? `Error: interrupted: the session stopped while this ${call.tool} call was running, and keel did not run it again. It may have done part of its work; check before repeating it.`
        : `Error: not run: the session stopped before this ${call.tool} call ran.`,
      is_error: true,
      files_changed: [],
      diff_lines: 0,
      duration_ms: 0,
      interrupted: true,
    });
  }
}

/** JSON with sorted keys, so the same arguments in another order count as the same call. */
function stableJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as { [k: string]: unknown }).sort(([a], [b]) => a.localeCompare(b));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stableJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** The user's folder (the process's), when it is a subfolder of the workspace: the model is told. */
function userFolder(root: string): { here?: string } {
  let cwd: string;
  try {
    cwd = realpathSync(process.cwd());
  } catch {
    return {};
  }
  const here = relative(root, cwd);
  if (!here || here.startsWith('..') || isAbsolute(here)) return {};
  return { here: here.split(sep).join('/') };
}
