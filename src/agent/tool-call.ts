/**
 * One tool call of the model's, from its name to its recorded result: the tool is found (or
 * activated), its arguments parsed, a repeat caught, the gate asked (and the person, when it asks),
 * the safety net taken, the tool run, PostToolUse hooks heard, and the result capped and recorded.
 */
import { createHash } from 'node:crypto';
import { resolve as resolvePath } from 'node:path';
import type { ToolCall } from '../model/types.js';
import { type Ask, type Decision, decide } from '../policy/gate.js';
import { type HookPayload, type HookSpec, matchingHooks, runHooks } from '../policy/hooks.js';
import { ScopeError } from '../policy/scope.js';
import { offList } from '../policy/tool-allowlist.js';
import { isFamily, resolveAction } from '../tools/family.js';
import { fileSha256 } from '../tools/file-change.js';
import { parseArgs } from '../tools/registry.js';
import { capResult } from '../tools/truncate.js';
import { type Tool, type ToolContext, ToolError, type ToolResult } from '../tools/types.js';
import { type ApprovalRequest, newQuestionId } from './approvals.js';
import type { ResumedAs, SessionEvent, ToolIntent } from './events.js';
import type { SessionState } from './history.js';
import type { SessionOptions } from './loop.js';
import { Stop } from './stop.js';
import { RunError } from './terminal.js';

/** What running a call needs from its session. */
export interface CallRun {
  opts: SessionOptions;
  state: SessionState;
  /** The tool that lists and activates the deferred tools, when some are. */
  catalogue: Tool | undefined;
  /** Whether the session's mode allows a tool at all. */
  allowed(tool: Tool): boolean;
  /** The tools requests offer now. */
  offered(): string[];
  hooks: HookSpec[];
  hookBase: Omit<HookPayload, 'event' | 'tool' | 'args'>;
  record(event: SessionEvent): number;
  run: { signal: AbortSignal };
  /** Every file the run changed: a call adds its own. */
  filesChanged: Set<string>;
}

function matchingPostHooks(hooks: HookSpec[], name: string): HookSpec[] {
  return matchingHooks(hooks, 'PostToolUse', name);
}

/**
 * Answer an ask: the person sees the file and its diff, or the exact command, and a yes resumes the
 * chain where it stopped (the same paths and sandbox). With no one to ask, a hook's question is a no,
 * and keel's own `approvals` question is not asked: the policy already allows the call.
 */
async function settle(
  session: CallRun,
  ask: Ask,
  tool: Tool,
  args: unknown,
  call: ToolCall,
  id: string,
): Promise<Decision> {
  const approve = session.opts.approve;
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
      Object.assign(request, await tool.preview(args, baseContext(session)));
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

function baseContext({ opts, run }: CallRun): ToolContext {
  const { scope } = opts.policy;
  return { cwd: scope.root, signal: run.signal, resolve: (path, access) => scope.resolve(path, access) };
}

/** Run one call of the model's: checked, gated (and asked about), hooked, run, its result capped and recorded. */
export async function runCall(
  session: CallRun,
  call: ToolCall,
  round: number,
  cutOff: boolean,
  /** A resumed run settling a call the killed one left open: how (recorded on the result). */
  resumed?: ResumedAs,
): Promise<string> {
  const { opts, state, catalogue, allowed, record, hooks, hookBase, filesChanged, run } = session;
  const { tools, policy, config } = opts;
  const { scope, mode } = policy;
  const offered = session.offered();
  const throwIfAborted = () => {
    if (run.signal.aborted) throw run.signal.reason;
  };
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
  if (!offered.includes(unit.name)) record({ type: 'tools_activated', tools: [unit.name], call_id: call.id });
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
  // a skill's allowed-tools: off the list is denied before the gate; on it, the gate still decides
  const off = offList(state.allowLists, tool, parsed.args);
  if (off !== undefined) {
    record({
      type: 'gate_decision',
      call_id: call.id,
      tool: name,
      decision: 'deny',
      reason: off,
      deny: 'policy',
    });
    return `Error: denied: ${off}`;
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
    decision = await settle(session, decision, tool, parsed.args, call, asked.question_id);
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
      throw new RunError('ENVIRONMENT_ERROR', `safety net failed before ${name}: ${(err as Error).message}`);
    }
    for (const r of saved) record({ type: 'safety_net', ...r });
  }
  const sandboxed = tool.effect === 'exec' ? decision.sandboxed : undefined;
  const ctx: ToolContext = {
    ...baseContext(session),
    callId: call.id,
    ...(decision.child ? { granted: decision.child } : {}),
  };
  // the intent is in the log before the effect: a run killed mid-call is resumed from it (effect-resume.ts)
  const intent = await intentOf(tool, parsed.args, ctx, opts);
  record({
    type: 'tool_start',
    call_id: call.id,
    tool: name,
    args: parsed.args,
    ...(sandboxed === undefined ? {} : { sandboxed }),
    intent,
  });
  const t0 = Date.now();
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
  let allowTools: ToolResult['allowTools'];
  try {
    const res = await tool.execute(parsed.args, ctx);
    output = res.output;
    isError = res.isError ?? false;
    changed = res.filesChanged ?? [];
    lines = res.diffLines ?? 0;
    violations = res.violations ?? [];
    diff = res.diff;
    outcome = res.outcome;
    allowTools = res.allowTools;
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
  const post = matchingPostHooks(hooks, name);
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
    ...(intent.effect === 'write' ? { files_after: filesAfter(scope.root, intent) } : {}),
    ...(resumed ? { resumed } : {}),
  });
  if (allowTools) record({ type: 'tools_narrowed', ...allowTools, call_id: call.id });
  if (violations.length) {
    record({ type: 'violation', call_id: call.id, tool: name, removed: violations });
    if (config.stop_on_violation)
      throw new Stop('SCOPE_VIOLATION', `${name} created protected names: ${violations.join(', ')}`);
  }
  throwIfAborted();
  return output;
}

/**
 * What a call is about to do (see ToolIntent): a write's hashes and result as its tool works them out, a
 * workspace command's tree (when the session keeps trees: a fix's), an MCP tool's declared read-only-ness.
 */
async function intentOf(
  tool: Tool,
  args: unknown,
  ctx: ToolContext,
  opts: SessionOptions,
): Promise<ToolIntent> {
  if (tool.name.startsWith('mcp__')) return { effect: 'other', read_only: tool.effect === 'read' };
  if (tool.effect === 'read') return { effect: 'read' };
  if (tool.effect === 'write' && tool.intend) {
    try {
      const planned = await tool.intend(args, ctx);
      const r = planned.result;
      return {
        effect: 'write',
        files: planned.files,
        result: {
          output: capResult(r.output),
          is_error: r.isError ?? false,
          files_changed: r.filesChanged ?? [],
          diff_lines: r.diffLines ?? 0,
          ...(r.outcome ? { outcome: r.outcome } : {}),
          ...(r.diff ? { diff: r.diff } : {}),
        },
      };
    } catch (err) {
      // the call fails the same way when it runs, before it writes: nothing to hash
      if (err instanceof ToolError || err instanceof ScopeError || isFsError(err))
        return { effect: 'write', files: [] };
      throw err;
    }
  }
  if (tool.resume === 'worktree') {
    const tree = opts.worktree?.tree();
    return { effect: 'worktree', ...(tree ? { tree } : {}) };
  }
  // a call whose second run only gives the first one's result back is run again on resume
  if (tool.resume === 'idempotent') return { effect: 'other', read_only: false, idempotent: true };
  return { effect: 'other', read_only: false };
}

/** Each file a write named, hashed after it ran. */
function filesAfter(root: string, intent: Extract<ToolIntent, { effect: 'write' }>) {
  return intent.files.map((f) => ({ path: f.path, after: fileSha256(resolvePath(root, f.path)) }));
}

function isFsError(err: unknown): boolean {
  return err instanceof Error && typeof (err as NodeJS.ErrnoException).code === 'string' && 'syscall' in err;
}

/**
 * JSON with sorted keys, so the same arguments in another order count as the same call. Keys sort by
 * code unit: the same in every locale, and no collator to load (a first localeCompare costs a process
 * 6-35 ms of ICU set-up, paid in the first call's round).
 */
function stableJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as { [k: string]: unknown }).sort(([a], [b]) =>
      a < b ? -1 : a > b ? 1 : 0,
    );
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stableJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}
