/** The agent loop: a fold over events. Each round streams the model, gates and runs its tool calls. */
import type { Config, Mode } from '../config/schema.js';
import { costUsd } from '../model/cost.js';
import { recoverToolCalls } from '../model/text-tool-calls.js';
import { estimateRequestTokens } from '../model/tokens.js';
import type { ChatMessage, Delta, ModelError, ToolCall, ToolSpec } from '../model/types.js';
import { decide } from '../policy/gate.js';
import { type HookEvent, type HookSpec, matchingHooks, runHooks } from '../policy/hooks.js';
import { modeAllows } from '../policy/modes.js';
import type { Scope } from '../policy/scope.js';
import { ScopeError } from '../policy/scope.js';
import { parseArgs, type ToolRegistry, toolSpec } from '../tools/registry.js';
import { type ToolContext, ToolError } from '../tools/types.js';
import { streamAnswer } from './answer.js';
import { exceeded } from './budgets.js';
import type { SessionEvent, TokenCount } from './events.js';
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
}

/** Where events go: the store appends them (durably) before the action they record happens. */
export type Recorder = (event: SessionEvent) => void;

export interface SessionOptions {
  mode: Mode;
  prompt: string;
  config: Config;
  scope: Scope;
  model: SessionModel;
  tools: ToolRegistry;
  record: Recorder;
  signal: AbortSignal;
  sessionId: string;
  hooks: HookSpec[];
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
  /** Ask the person to confirm (interactive sessions only); absent means deny. */
  confirm?(question: string): Promise<boolean>;
  /** Called before every write or exec call with its canonical paths; returns what it saved, to record. */
  beforeWrite?(paths: string[]): Array<{ [key: string]: unknown }>;
  /** Live assistant text, for rendering. */
  onText?(text: string): void;
  contextWindow?: number;
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
}

/** How many times a Stop hook may send the model back before the run ends HOOK_DENIED. */
const MAX_STOP_HOOK_RETRIES = 3;

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
  const { config, scope, record, tools } = opts;
  const started = Date.now();
  const offered = tools.names().filter((name) => {
    const tool = tools.get(name);
    return tool !== undefined && modeAllows(opts.mode, tool.effect);
  });
  const specs = offered.map((name) =>
    toolSpec(tools.get(name) as NonNullable<ReturnType<ToolRegistry['get']>>),
  );
  const instructions = loadInstructions(scope.root);
  const messages: ChatMessage[] = [
    {
      role: 'system',
      content: systemPrompt({ mode: opts.mode, root: scope.root, instructions: instructions.text }),
    },
    { role: 'user', content: opts.prompt },
  ];
  const tokens: TokenCount = { input: 0, output: 0 };
  // null, not 0, when the user gave no price for this model: keel never invents a cost
  let cost: number | null = costUsd(
    opts.model.currentModel(),
    { inputTokens: 0, outputTokens: 0, reported: true },
    config.pricing,
  );
  let rounds = 0;
  let diffLines = 0;
  let lastText = '';
  const filesChanged = new Set<string>();
  const seenCalls = new Map<string, number>();

  // one controller for the run: the user's Ctrl+C and the wall-clock budget both abort it
  const run = new AbortController();
  const onAbort = () => run.abort(new Stop('CANCELLED', 'interrupted by the user'));
  if (opts.signal.aborted) onAbort();
  opts.signal.addEventListener('abort', onAbort, { once: true });
  const wall = config.budgets.max_wall_s;
  const wallTimer =
    wall === undefined
      ? undefined
      : setTimeout(
          () => run.abort(new Stop('BUDGET_EXCEEDED', `ran past max_wall_s (${wall} s)`, 'max_wall_s')),
          wall * 1000,
        );

  record({
    type: 'session_start',
    mode: opts.mode,
    provider: opts.model.provider,
    model: opts.model.currentModel(),
    cwd: scope.root,
    scope: scope.writable.map((p) => scope.display(p)),
    instructions: instructions.files,
    ...(instructions.skipped.length ? { instructions_skipped: instructions.skipped } : {}),
    tools: offered,
  });
  const hookBase = { session_id: opts.sessionId, cwd: scope.root, mode: opts.mode };
  /** Run the hooks for a tool-less event; every verdict is recorded. */
  const hook = async (event: HookEvent, extra: { prompt?: string; result?: unknown } = {}) => {
    if (!opts.hooks.some((h) => h.event === event)) return { decision: 'allow' as const };
    const verdict = await runHooks(
      opts.hooks,
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

  const usage = () => ({
    rounds,
    tokens: tokens.input + tokens.output,
    costUsd: cost,
    wallS: (Date.now() - started) / 1000,
    diffLines,
  });
  const checkBudgets = () => {
    const breach = exceeded(config.budgets, usage());
    if (breach) throw new Stop('BUDGET_EXCEEDED', breach.reason, breach.budget);
  };
  const throwIfAborted = () => {
    if (run.signal.aborted) throw run.signal.reason;
  };

  let result: { code: TerminalCode; reason: string; budget?: BudgetName };
  let stopHookRetries = 0;
  try {
    for (const [event, extra] of [
      ['SessionStart', {}],
      ['UserPromptSubmit', { prompt: opts.prompt }],
    ] as const) {
      const verdict = await hook(event, extra);
      if (verdict.decision !== 'allow') throw new Stop('HOOK_DENIED', `${event} hook: ${verdict.reason}`);
    }
    record({ type: 'user_message', text: opts.prompt });
    for (;;) {
      throwIfAborted();
      checkBudgets();
      rounds++;
      const model = opts.model.currentModel();
      const request = { messages, tools: specs, contextWindow: opts.contextWindow };
      record({
        type: 'model_request',
        round: rounds,
        model,
        messages: messages.length,
        est_tokens: estimateRequestTokens(messages, specs),
        bytes: Buffer.byteLength(JSON.stringify(request)),
      });
      const answer = await streamAnswer(opts, request, run.signal, rounds);
      const known = new Set(offered);
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
      tokens.input += answer.usage.input;
      tokens.output += answer.usage.output;
      const roundCost = costUsd(
        answer.model,
        {
          inputTokens: answer.usage.input,
          outputTokens: answer.usage.output,
          reported: answer.usage.reported,
        },
        config.pricing,
      );
      cost = cost === null || roundCost === null ? null : cost + roundCost;
      record({
        type: 'assistant_message',
        round: rounds,
        model: answer.model,
        text,
        tool_calls: calls,
        recovered: recoveredCount,
        usage: { ...answer.usage },
        cost_usd: roundCost,
      });
      if (text.trim()) lastText = text.trim();

      // history never carries malformed arguments: a server may reject them, and the model would copy them
      const historyCalls = calls.map((c) => ({ ...c, arguments: validJsonOr(c.arguments, '{}') }));
      const malformedCalls = malformed.map((m, i) => ({
        id: `malformed_${rounds}_${i}`,
        name: m.name,
        arguments: '{}',
      }));
      messages.push({
        role: 'assistant',
        content: text,
        ...(historyCalls.length + malformedCalls.length > 0
          ? { toolCalls: [...historyCalls, ...malformedCalls] }
          : {}),
      });
      for (const [i, m] of malformed.entries()) {
        const id = malformedCalls[i]?.id ?? `malformed_${rounds}_${i}`;
        const error = `your tool call could not be parsed (${m.error}); write the call again with valid JSON arguments`;
        record({ type: 'tool_call_invalid', round: rounds, call_id: id, tool: m.name, error });
        messages.push({ role: 'tool', toolCallId: id, name: m.name, content: `Error: ${error}` });
      }
      if (calls.length === 0 && malformed.length === 0) {
        // a Stop hook that denies sends the model back to work with the hook's reason (a few times at most)
        const verdict = await hook('Stop', { result: text });
        if (verdict.decision === 'deny' && stopHookRetries < MAX_STOP_HOOK_RETRIES) {
          stopHookRetries++;
          const note = `The task is not finished: ${verdict.reason}`;
          record({ type: 'user_message', text: note });
          messages.push({ role: 'user', content: note });
          continue;
        }
        if (verdict.decision === 'deny') throw new Stop('HOOK_DENIED', `Stop hook: ${verdict.reason}`);
        result = { code: 'COMPLETED', reason: 'the model answered without tool calls' };
        break;
      }
      for (const call of calls) {
        throwIfAborted();
        const content = await runCall(call, rounds);
        messages.push({ role: 'tool', toolCallId: call.id, name: call.name, content });
        checkBudgets();
      }
    }
  } catch (err) {
    result = classify(err, run.signal);
  } finally {
    clearTimeout(wallTimer);
    opts.signal.removeEventListener('abort', onAbort);
  }

  const summary =
    result.code === 'COMPLETED' ? lastText : `${result.reason}${lastText ? `\n\n${lastText}` : ''}`;
  const files = [...filesChanged].sort();
  record({
    type: 'session_end',
    code: result.code,
    reason: result.reason,
    ...(result.budget ? { budget: result.budget } : {}),
    summary,
    rounds,
    tokens,
    cost_usd: cost,
    files_changed: files,
  });
  return { ...result, summary, rounds, tokens, costUsd: cost, filesChanged: files };

  function matchingPostHooks(name: string): HookSpec[] {
    return matchingHooks(opts.hooks, 'PostToolUse', name);
  }

  async function runCall(call: ToolCall, round: number): Promise<string> {
    const tool = tools.get(call.name);
    if (!tool || !offered.includes(call.name)) {
      const error = tool
        ? `${call.name} is not available in ${opts.mode} mode`
        : `unknown tool "${call.name}"; available: ${offered.join(', ')}`;
      record({ type: 'tool_call_invalid', round, call_id: call.id, tool: call.name, error });
      if (tool)
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
    const parsed = parseArgs(tool, call.arguments);
    if (!parsed.ok) {
      record({ type: 'tool_call_invalid', round, call_id: call.id, tool: call.name, error: parsed.error });
      return `Error: ${parsed.error}`;
    }
    const key = `${call.name}:${stableJson(parsed.args)}`;
    const seen = (seenCalls.get(key) ?? 0) + 1;
    seenCalls.set(key, seen);
    if (seen >= config.loop_threshold) {
      throw new Stop(
        'LOOP_DETECTED',
        `the same ${call.name} call was made ${seen} times with no change to the files in between`,
      );
    }
    let decision = await decide(tool, parsed.args, {
      mode: opts.mode,
      scope,
      allowShell: config.allow_shell,
      sandbox: opts.sandboxExec !== undefined,
      hooks: opts.hooks,
      hookBase,
      signal: run.signal,
    });
    if (decision.kind === 'ask') {
      record({
        type: 'gate_decision',
        call_id: call.id,
        tool: call.name,
        decision: 'ask',
        reason: decision.question,
      });
      const yes = opts.confirm ? await opts.confirm(`${call.name}: ${decision.question}`) : false;
      const who = opts.confirm ? 'the user declined' : 'no one to ask in an unattended session';
      // a yes resumes the chain where the hook stopped it: the same paths (safety net) and sandbox
      decision = yes
        ? decision.ifConfirmed
        : { kind: 'deny', deny: 'hook', reason: `${decision.question} (${who})` };
    }
    if (decision.kind === 'deny') {
      record({
        type: 'gate_decision',
        call_id: call.id,
        tool: call.name,
        decision: 'deny',
        reason: decision.reason,
        deny: decision.deny,
      });
      if (decision.deny === 'scope' && config.stop_on_violation)
        throw new Stop('SCOPE_VIOLATION', decision.reason);
      return `Error: denied: ${decision.reason}`;
    }
    if (decision.kind !== 'allow') throw new Error('unreachable: gate decision not settled');
    record({ type: 'gate_decision', call_id: call.id, tool: call.name, decision: 'allow' });
    if (tool.effect === 'write' || tool.effect === 'exec') {
      // no safety net, no write: a snapshot that fails ends the run before anything is touched
      let saved: Array<{ [key: string]: unknown }> = [];
      try {
        saved = opts.beforeWrite?.(decision.paths) ?? [];
      } catch (err) {
        throw new RunError(
          'ENVIRONMENT_ERROR',
          `safety net failed before ${call.name}: ${(err as Error).message}`,
        );
      }
      for (const r of saved) record({ type: 'safety_net', ...r });
    }
    const sandboxed = tool.effect === 'exec' ? decision.sandboxed : undefined;
    record({
      type: 'tool_start',
      call_id: call.id,
      tool: call.name,
      args: parsed.args,
      ...(sandboxed === undefined ? {} : { sandboxed }),
    });
    const t0 = Date.now();
    const ctx: ToolContext = {
      cwd: scope.root,
      signal: run.signal,
      resolve: (path, access) => scope.resolve(path, access),
    };
    const exec = sandboxed ? opts.sandboxExec : opts.plainExec;
    if (exec) ctx.exec = exec;
    const runTests = opts.runTests;
    if (runTests) ctx.runTests = (filter, signal) => runTests(filter, signal, sandboxed === true);
    let output: string;
    let isError = false;
    let changed: string[] = [];
    let lines = 0;
    let violations: string[] = [];
    try {
      const res = await tool.execute(parsed.args, ctx);
      output = res.output;
      isError = res.isError ?? false;
      changed = res.filesChanged ?? [];
      lines = res.diffLines ?? 0;
      violations = res.violations ?? [];
    } catch (err) {
      if (run.signal.aborted) throw run.signal.reason;
      if (!(err instanceof ToolError || err instanceof ScopeError || isFsError(err))) throw err;
      output = `Error: ${(err as Error).message}`;
      isError = true;
      if (err instanceof ScopeError) {
        record({
          type: 'gate_decision',
          call_id: call.id,
          tool: call.name,
          decision: 'deny',
          deny: 'scope',
          reason: err.message,
        });
        if (config.stop_on_violation) throw new Stop('SCOPE_VIOLATION', err.message);
      }
    }
    for (const f of changed) filesChanged.add(f);
    diffLines += lines;
    // a change to the files is progress: a call repeated after it can see something new (read, edit, read)
    if (lines > 0) seenCalls.clear();
    const post = matchingPostHooks(call.name);
    if (post.length) {
      const verdict = await runHooks(
        post,
        {
          ...hookBase,
          event: 'PostToolUse',
          tool: call.name,
          args: parsed.args,
          result: { output, is_error: isError },
        },
        { cwd: scope.root, signal: run.signal },
      );
      record({
        type: 'hook',
        event: 'PostToolUse',
        tool: call.name,
        decision: verdict.decision,
        ...(verdict.decision !== 'allow' ? { reason: verdict.reason, hook: verdict.hook } : {}),
      });
      // the tool already ran; a PostToolUse objection becomes feedback the model must read
      if (verdict.decision !== 'allow') output = `${output}\n\n[hook ${verdict.hook}]: ${verdict.reason}`;
    }
    record({
      type: 'tool_result',
      call_id: call.id,
      tool: call.name,
      output,
      is_error: isError,
      files_changed: changed,
      diff_lines: lines,
      duration_ms: Date.now() - t0,
    });
    if (violations.length) {
      record({ type: 'violation', call_id: call.id, tool: call.name, removed: violations });
      if (config.stop_on_violation)
        throw new Stop('SCOPE_VIOLATION', `${call.name} created protected names: ${violations.join(', ')}`);
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

function isFsError(err: unknown): boolean {
  return err instanceof Error && typeof (err as NodeJS.ErrnoException).code === 'string' && 'syscall' in err;
}

function validJsonOr(text: string, fallback: string): string {
  try {
    JSON.parse(text);
    return text;
  } catch {
    return fallback;
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
