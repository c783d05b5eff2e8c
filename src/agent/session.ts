/**
 * A session end to end, in a runtime (src/agent/runtime.ts, which holds the store and the audit chain):
 * build the scope, tools and model, run the loop, record its end. A new session and a reopened one
 * (resume, continue, a fork's first run) take the same path; a reopened one starts from the state its
 * events fold to.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LoadedConfig } from '../config/load.js';
import { realRoot } from '../config/narrowing.js';
import { protectedStatePaths } from '../config/paths.js';
import { sessionPrograms } from '../config/programs.js';
import type { Mode } from '../config/schema.js';
import { sessionInjection } from '../memory/inject.js';
import { observeSession } from '../memory/observe.js';
import type { ModelClient } from '../model/chain.js';
import { createModelClient } from '../model/create.js';
import type { ImageAttachment } from '../model/types.js';
import { serverWindow } from '../model/window.js';
import { pinWorkspace } from '../policy/git-runner.js';
import { type Policy, policyFor } from '../policy/policy.js';
import type { Sandbox } from '../policy/sandbox.js';
import { Scope } from '../policy/scope.js';
import { activateSkillTool, skillCatalog } from '../skills/catalog.js';
import { loadSkills, usedSkills } from '../skills/load.js';
import { auditEntryFor } from '../store/audit-entries.js';
import { findVouchingLine, startProblem } from '../store/audit-sessions.js';
import type { EventLog, SessionRow } from '../store/event-log.js';
import { builtinTools } from '../tools/builtin.js';
import { ToolRegistry } from '../tools/registry.js';
import type { ToolContext } from '../tools/types.js';
import type { TestSuite } from '../verify/suite.js';
import type { Approver } from './approvals.js';
import { Spend, type Spent } from './budgets.js';
import { parseEvents } from './event-schema.js';
import type { SessionEvent } from './events.js';
import { replay, type SessionState } from './history.js';
import { runSession, type SessionResult, type WorktreeJournal } from './loop.js';
import { trivialTask } from './prompt.js';
import type { Runtime } from './runtime.js';
import { RunError } from './terminal.js';
import type { AgentEventListener, SessionToolDeps, SessionToolFactory } from './tool-deps.js';

export interface StartOptions {
  mode: Mode;
  prompt: string;
  /** Images attached to the prompt, read and checked by agent/images.ts (bytes included). */
  images?: ImageAttachment[];
  /** An image of a resumed history that is not sent again: its file changed or went. */
  onImageMissing?(image: ImageAttachment, why: string): void;
  loaded: LoadedConfig;
  cwd: string;
  signal: AbortSignal;
  onText?(text: string): void;
  onReasoning?(text: string): void;
  /** A running tool call's output as it is produced (a command's stdout and stderr); its result is logged. */
  onToolOutput?(callId: string, text: string, stream: 'stdout' | 'stderr'): void;
  /** Each event once it is stored, with its seq in the session's log. */
  onEvent?(event: SessionEvent, seq: number): void;
  /** Each event of a subagent (and theirs) once it is stored, by the agent's name: its progress for a face. */
  onAgentEvent?: AgentEventListener;
  /** A large repository is being indexed for the repo map before the first request: files done of total. */
  onIndexing?(done: number, total: number): void;
  /** A subagent's policy, narrowed from its parent's by the gate; a person's session builds its own from config. */
  policy?: Policy;
  /** More tools, made for this session from its dependencies (subagents, MCP, memory). */
  tools?: SessionToolFactory[];
  /** The id for a new session (a subagent's is known before it starts); default: a fresh one. */
  id?: string;
  /** Messages for the session while it runs (from its parent), read before each model request. */
  inbox?(): string[];
  /** Reopen this session (its id) for another run instead of starting one; `prompt` may be empty. */
  resume?: string;
  /** With `resume`: run in the session's own mode rather than `mode`. */
  keepMode?: boolean;
  /** A model client to reuse (a fix run shares one across its sessions); default: built from config. */
  model?: ModelClient;
  /** The run this session belongs to (a fix run's plan and attempts). */
  parentId?: string;
  /** Folders outside the scope that commands must still see, read-only (a fix snapshot's linked node_modules). */
  readOnlyDirs?: string[];
  /** Snapshot before the first write (default true); a fix works in its own throwaway worktree. */
  safetyNet?: boolean;
  /** Commit the session's own files when it ends COMPLETED (also `auto_commit` in config). */
  commit?: boolean;
  /** Ask the person (interactive sessions); without it, a hook's question is a no (see runLoop). */
  approve?: Approver;
  /** A subagent's: its parent's node in the tree's spending counter, which its own spending is charged to too. */
  spendParent?: Spend;
  /** The workspace as trees, for a session a killed run may resume call by call (a fix's; see loop.ts). */
  worktree?: WorktreeJournal;
}

export interface SessionOutcome extends SessionResult {
  sessionId: string;
  mode: Mode;
  /** The commit of the session's files, when it committed them. */
  commit?: string;
}

/** Session ids sort by time and are short enough to type: 20261202-124501-a3f9c1. */
export function newSessionId(now = new Date()): string {
  const stamp = now.toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
  return `${stamp}-${randomBytes(3).toString('hex')}`;
}

/** A session that cannot be reopened: unknown, still running elsewhere, or a log that does not read back. */
export class ResumeError extends Error {
  override name = 'ResumeError';
}

/**
 * Whether a process is alive on this machine (signal 0 checks without sending anything). A zombie is not:
 * it runs nothing, and a killed run's orphan stays one until whoever adopted it reaps it.
 */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    // gone meanwhile; or no /proc on this system, where signal 0 is all there is
    return !existsSync('/proc/self/stat');
  }
}

/**
 * The state a stored session folds to, checked to be safe to go on from: a conversation, vouched for by
 * the audit chain in `audit` (its recorded start is the one keel sealed), and not running elsewhere.
 */
export function reopen(
  log: EventLog,
  id: string,
  audit: { dir: string; keyPath: string },
): { row: SessionRow; state: SessionState } {
  const row = log.findSession(id);
  if (!row) throw new ResumeError(`no session matches "${id}" (see keel sessions list)`);
  if (!['ask', 'plan', 'edit', 'auto'].includes(row.mode))
    throw new ResumeError(`session ${row.id} is a ${row.mode} run, not a conversation; it cannot be resumed`);
  const problem = startProblem(
    { row, start: log.firstOfType(row.id, 'session_start')?.data },
    (sid) => findVouchingLine(audit.dir, audit.keyPath, sid),
    (sid) => {
      const parent = log.getSession(sid);
      return parent ? { row: parent, start: log.firstOfType(sid, 'session_start')?.data } : undefined;
    },
  );
  if (problem) throw new ResumeError(`${problem}; it is not resumed`);
  const state = replay(parseEvents(log.events(row.id)));
  if (!state.ended && state.run.pid !== undefined && state.run.pid !== process.pid && alive(state.run.pid))
    throw new ResumeError(
      `session ${row.id} is still running (process ${state.run.pid}); wait for it to end, or stop it first`,
    );
  return { row, state };
}

function auditOf(runtime: Runtime): { dir: string; keyPath: string } {
  return { dir: runtime.paths.auditDir, keyPath: runtime.paths.auditKey };
}

/** Run a session in `cwd` and return its outcome (`runtime.start`); every event is in the store before it takes effect. */
export async function runSessionIn(runtime: Runtime, opts: StartOptions): Promise<SessionOutcome> {
  const reopened = opts.resume ? reopen(runtime.log, opts.resume, auditOf(runtime)) : undefined;
  const mode = reopened && opts.keepMode ? (reopened.row.mode as Mode) : opts.mode;
  if (reopened && !opts.prompt && reopened.state.ended)
    throw new ResumeError(
      `session ${reopened.row.id} ended (${reopened.row.code ?? 'no code'}); give a new message (-m TEXT) to go on with it`,
    );
  return runIn(runtime, { ...opts, mode }, reopened);
}

async function runIn(
  runtime: Runtime,
  opts: StartOptions,
  reopened: { row: SessionRow; state: SessionState } | undefined,
): Promise<SessionOutcome> {
  const { env, paths, log, audit } = runtime;
  const { config } = opts.loaded;
  // a subagent comes with its policy already narrowed from its parent's; a session a person starts builds one
  const granted = opts.policy;
  // the files in the workspace that hooks and servers run on the host: as checked at load, never the model's to write
  const programs = sessionPrograms(
    config,
    granted?.scope.root ?? realRoot(opts.cwd),
    env.PATH,
    opts.loaded.programs,
  );
  const scope =
    granted?.scope ??
    new Scope({
      root: opts.cwd,
      writable: config.scope,
      protectedDirs: protectedStatePaths(paths),
      protectedFiles: programs.map((p) => ({
        path: p.path,
        why: `a program keel's config runs on the host (${p.by})`,
      })),
    });
  // the session's repository is found now, once: a .git the model makes later is never used by keel
  pinWorkspace(scope.root);
  const client = opts.model ?? createModelClient(config, env, { cwd: opts.cwd });
  // the window the server runs with: Ollama takes it per request (num_ctx), and compaction budgets by it everywhere.
  // Asked now and awaited only before the first request, so its round trips overlap the set-up below
  const windowAsked =
    config.context_window !== undefined
      ? Promise.resolve(config.context_window)
      : serverWindow(client, config, opts.signal);
  const sessionId = reopened?.row.id ?? opts.id ?? newSessionId();
  // every call in the ledger under this session: in its run's (a fix's, a parent's), else a run of its own
  const calls = client.calls?.with({ sessionId }) ?? runtime.calls?.with({ runId: sessionId, sessionId });
  const model = calls ? client.withCalls(calls) : client;
  // the row exists before anything can fail: a session that cannot start still has its log and audit line
  if (reopened) log.reopenSession(sessionId);
  else
    log.createSession({
      id: sessionId,
      ...(opts.parentId ? { parentId: opts.parentId } : {}),
      mode: opts.mode,
      cwd: scope.root,
      provider: model.provider,
      model: model.currentModel(),
      prompt: opts.prompt,
    });
  // memory for a new session's task (src/memory/inject.ts), recorded right after the start it is part of
  let injected: Awaited<ReturnType<typeof sessionInjection>>;
  // the repo map for a new task (src/graph/), built before the run so the first request carries it;
  // not in a fix attempt's throwaway worktree (safetyNet false), whose index rows would outlive it
  // started now, awaited just before the run: it overlaps the sandbox and test set-up below
  // a workspace's first index is not waited for (the first request goes without a map): it is awaited at the end
  let firstIndex: Promise<void> | undefined;
  const repoMapLoading =
    reopened || granted || opts.safetyNet === false || trivialTask(opts.prompt)
      ? undefined
      : import('../graph/session-map.js')
          .then((m) =>
            m.sessionRepoMap({
              dbPath: paths.db,
              root: scope.root,
              task: opts.prompt,
              budget: config.graph.map_tokens,
              signal: opts.signal,
              ...(opts.onIndexing ? { onLargeIndex: opts.onIndexing } : {}),
              background: (indexing) => {
                firstIndex = indexing;
              },
            }),
          )
          // a map that cannot be built is a note in the log, never the end of a session (or an unhandled rejection)
          .catch((err: Error) => ({ type: 'repo_map_skipped' as const, reason: err.message }));
  const record = (event: SessionEvent): number => {
    const { type, ...data } = event;
    const stored = log.append(sessionId, type, data);
    const entry = auditEntryFor(event, sessionId);
    if (entry) audit.append(entry);
    opts.onEvent?.(event, stored.seq);
    if (event.type === 'session_start' && injected) record(injected.event);
    return stored.seq;
  };
  // sandbox, tests and safety net exist only in modes that act; read-only sessions never load them
  const acting = opts.mode === 'edit' || opts.mode === 'auto';
  // the safety net's snapshot starts now in a worker thread, so its git processes overlap the set-up and
  // the first model request instead of holding up the first write (src/policy/prepare-net.ts)
  const preparing =
    acting && opts.safetyNet !== false
      ? import('../policy/prepare-net.js')
          .then((m) => m.prepareNetInWorker({ root: scope.root, sessionId, everyRun: true }))
          .catch(() => undefined)
      : undefined;
  let net: import('../policy/safety-net.js').SafetyNet | undefined;
  // a snapshot no write used is dropped: a session that changed nothing leaves no ref or tag behind
  const dropUnused = async () => {
    const ready = preparing && !net?.started ? await preparing : undefined;
    if (ready) (await import('../policy/safety-net.js')).dropPrepared(ready);
  };
  // test reports are written by the (sandboxed) test command, so they need a folder it may write
  const reportsDir = acting ? mkdtempSync(join(tmpdir(), 'keel-tests-')) : undefined;
  let setup: SessionSandboxes = { sandboxes: [] };
  try {
    if (reportsDir)
      setup = await sessionSandboxes(
        scope,
        { ...config, sandbox_network: granted?.network ?? config.sandbox_network },
        env,
        [...protectedStatePaths(paths), ...(opts.readOnlyDirs ?? [])],
        reportsDir,
        programs.map((p) => p.path),
      );
  } catch (err) {
    if (reportsDir) rmSync(reportsDir, { recursive: true, force: true });
    await dropUnused();
    if (!(err instanceof RunError)) throw err;
    failedStart(record, err, { mode: opts.mode, model, scope, reopened });
    log.finishSession(sessionId, err.code, err.message, reopened?.state.cost ?? null);
    throw new RunError(err.code, err.message, { ...err.detail, session_id: sessionId });
  }
  const { sandboxes, sandboxExec, plainExec } = setup;
  let suite: TestSuite | undefined;
  let describeRun: ((run: Awaited<ReturnType<TestSuite['run']>>) => string) | undefined;
  let beforeWrite: ((paths: string[]) => Promise<Array<{ [key: string]: unknown }>>) | undefined;
  if (reportsDir) {
    const [verify, safety] = await Promise.all([
      import('../verify/suite.js'),
      import('../policy/safety-net.js'),
    ]);
    suite = verify.findSuite(scope.root, reportsDir, config.test_command);
    describeRun = verify.describeRun;
    if (opts.safetyNet !== false) {
      const kept = new safety.SafetyNet({
        root: scope.root,
        sessionId,
        undoDir: paths.undoDir,
        // each run keeps where it began: the chat rewinds a turn to it
        everyRun: true,
      });
      net = kept;
      beforeWrite = async (written) => {
        // the prepared snapshot, when the worker made one; else this first call takes it here
        const ready = kept.started ? undefined : await preparing;
        return [...(ready ? kept.adopt(ready) : []), ...kept.beforeWrite(written)];
      };
    }
  }
  const sandboxed = sandboxExec !== undefined;
  const policy: Policy = granted
    ? Object.freeze({ ...granted, sandbox: sandboxed })
    : policyFor({ mode: opts.mode, scope, config, sandbox: sandboxed, programs });
  const closers: Array<() => Promise<void>> = [];
  // once: before the end is recorded (subagents end there, so the end counts what they spent), and in finally
  let closing: Promise<void> | undefined;
  const closeTools = () => {
    closing ??= Promise.all(closers.map((close) => close())).then(() => undefined);
    return closing;
  };
  // the tree's one counter: a reopened session starts from what its subagents spent before (their logs)
  const spend = new Spend(policy.budgets, opts.spendParent);
  if (reopened) spend.add(descendantsSpent(log, sessionId));
  const deps: SessionToolDeps = {
    policy,
    sessionId,
    model,
    signal: opts.signal,
    env,
    runtime,
    loaded: { ...opts.loaded, programs },
    ...(opts.approve ? { approve: opts.approve } : {}),
    ...(opts.onAgentEvent ? { onAgentEvent: opts.onAgentEvent } : {}),
    onClose: (fn) => closers.push(fn),
    spend,
  };
  // a person's session only: a run's attempts and a subagent get their context from what started them
  const topLevel = !opts.parentId && !granted;
  // a person's session sees the skills (src/skills/): a catalog in its prompt, and activate_skill for the bodies
  const skills = topLevel ? usedSkills(await loadSkills({ root: scope.root, env })) : [];
  if (topLevel && !reopened && !trivialTask(opts.prompt))
    injected = await sessionInjection({ root: scope.root, prompt: opts.prompt, config, env, db: runtime.db });
  const repoMap = await repoMapLoading;
  const contextWindow = await windowAsked;
  // this run's events start after the log as reopened (runSession folds into that state, so read it now)
  const runFrom = reopened?.state.lastSeq ?? 0;
  try {
    // MCP servers list their tools now (src/tools/mcp.ts); one that fails is skipped with a warning
    const extraTools = (await Promise.all((opts.tools ?? []).map((factory) => factory(deps)))).flat();
    const result = await runSession({
      policy,
      prompt: opts.prompt,
      ...(opts.images?.length ? { images: opts.images } : {}),
      ...(opts.onImageMissing ? { onImageMissing: opts.onImageMissing } : {}),
      config,
      model,
      tools: new ToolRegistry(
        [...builtinTools(), ...(skills.length ? [activateSkillTool(skills, scope.root)] : [])],
        extraTools,
      ),
      signal: opts.signal,
      sessionId,
      ...(sandboxExec ? { sandboxExec } : {}),
      ...(plainExec ? { plainExec } : {}),
      ...(beforeWrite ? { beforeWrite } : {}),
      ...(suite && describeRun ? { runTests: testRunner(suite, describeRun, sandboxExec, plainExec) } : {}),
      ...(opts.approve ? { approve: opts.approve } : {}),
      ...(contextWindow ? { contextWindow } : {}),
      ...(opts.onText ? { onText: opts.onText } : {}),
      ...(opts.onToolOutput ? { onToolOutput: opts.onToolOutput } : {}),
      ...(opts.onReasoning ? { onReasoning: opts.onReasoning } : {}),
      ...(reopened ? { resume: reopened.state } : {}),
      ...(opts.worktree ? { worktree: opts.worktree } : {}),
      ...(opts.inbox ? { inbox: opts.inbox } : {}),
      ...(injected ? { memory: injected.text } : {}),
      ...(skills.length ? { skills: skillCatalog(skills) } : {}),
      ...(repoMap ? { context: [repoMap] } : {}),
      spend,
      // a failure here is thrown again by the finally below, after the end is recorded
      beforeEnd: () => closeTools().catch(() => undefined),
      record,
    });
    log.finishSession(sessionId, result.code, result.summary.slice(0, 2000), result.costUsd);
    // memory learns from this run alone (a chat turn), and only from one that finished: a stopped or failed
    // run's half-done work is no fact about the project
    if (topLevel && result.code === 'COMPLETED')
      await observeSession({
        sessionId,
        after: runFrom,
        root: scope.root,
        prompt: opts.prompt,
        config,
        env,
        db: runtime.db,
      });
    let commit: string | undefined;
    if ((opts.commit || config.auto_commit) && result.code === 'COMPLETED' && result.filesChanged.length) {
      const title = opts.prompt.split('\n')[0]?.slice(0, 60) ?? 'keel session';
      const { commitSessionFiles } = await import('../policy/safety-net.js');
      // the user's identity as author; the trailer says which session made it (keel undo trusts that)
      commit = commitSessionFiles(
        scope.root,
        result.filesChanged,
        `keel: ${title}\n\nKeel-Session: ${sessionId}`,
      );
    }
    return { ...result, sessionId, mode: opts.mode, ...(commit ? { commit } : {}) };
  } finally {
    await closeTools();
    await firstIndex;
    await Promise.all(sandboxes.map((s) => s.close()));
    await dropUnused();
    if (reportsDir) rmSync(reportsDir, { recursive: true, force: true });
  }
}

/** What the subagents under a session spent, at every depth, from their own logs (forks are not its spending). */
function descendantsSpent(log: EventLog, id: string): Spent {
  const total: Spent = { input: 0, output: 0, costUsd: 0 };
  for (const child of log.childSessions(id)) {
    if (child.forked_seq !== null) continue;
    const own = replay(parseEvents(log.events(child.id)));
    const below = descendantsSpent(log, child.id);
    total.input += own.tokens.input + below.input;
    total.output += own.tokens.output + below.output;
    total.costUsd =
      total.costUsd === null || own.cost === null || below.costUsd === null
        ? null
        : total.costUsd + own.cost + below.costUsd;
  }
  return total;
}

/** The log of a run that could not start (no sandbox it may use): its start and its one terminal code. */
function failedStart(
  record: (event: SessionEvent) => number,
  err: RunError,
  at: { mode: Mode; model: ModelClient; scope: Scope; reopened: { state: SessionState } | undefined },
): void {
  const { mode, model, scope, reopened } = at;
  if (reopened)
    record({
      type: 'session_resume',
      run: reopened.state.run.number + 1,
      mode,
      provider: model.provider,
      model: model.currentModel(),
      pid: process.pid,
    });
  else
    record({
      type: 'session_start',
      mode,
      provider: model.provider,
      model: model.currentModel(),
      cwd: scope.root,
      scope: scope.writable.map((p) => scope.display(p)),
      instructions: [],
      tools: [],
      pid: process.pid,
    });
  record({
    type: 'session_end',
    code: err.code,
    reason: err.message,
    summary: err.message,
    rounds: 0,
    tokens: reopened ? { ...reopened.state.tokens } : { input: 0, output: 0 },
    cost_usd: reopened ? reopened.state.cost : null,
    files_changed: [],
  });
}

interface SessionSandboxes {
  sandboxes: Sandbox[];
  /** Runs a command inside the sandbox; absent when no sandbox can run here. */
  sandboxExec?: ToolContext['exec'];
  /** Runs a command without one (limits and a filtered environment only), for calls the user allowed so. */
  plainExec?: ToolContext['exec'];
}

/** Shell exists only in modes that may run commands; read-only sessions never build a sandbox. */
async function sessionSandboxes(
  scope: Scope,
  config: LoadedConfig['config'],
  env: NodeJS.ProcessEnv,
  protectedPaths: string[],
  reportsDir: string,
  protectedFiles: string[],
): Promise<SessionSandboxes> {
  const { createSandbox, SandboxError } = await import('../policy/sandbox.js');
  const common = {
    root: scope.root,
    writable: [...scope.writable, reportsDir],
    network: config.sandbox_network,
    passEnv: config.sandbox_env,
    limits: config.sandbox_limits,
    env,
    protectedDirs: protectedPaths,
    protectedFiles,
  };
  let sandbox: Sandbox;
  try {
    sandbox = await createSandbox({ ...common, kind: config.sandbox });
  } catch (err) {
    // a sandbox the user asked for by name and cannot have: refuse, never run unconfined instead
    if (err instanceof SandboxError) throw new RunError('ENVIRONMENT_ERROR', err.message);
    throw err;
  }
  const plain = sandbox.kind === 'none' ? sandbox : await createSandbox({ ...common, kind: 'none' });
  return {
    sandboxes: plain === sandbox ? [sandbox] : [sandbox, plain],
    ...(sandbox.kind !== 'none' ? { sandboxExec: (command, o) => sandbox.run(command, o) } : {}),
    plainExec: (command, o) => plain.run(command, o),
  };
}

/** `run_tests` for a session: the suite, in the sandbox when the gate says so, described for the model. */
function testRunner(
  suite: TestSuite,
  describe: (run: Awaited<ReturnType<TestSuite['run']>>) => string,
  sandboxExec: ToolContext['exec'],
  plainExec: ToolContext['exec'],
) {
  return async (filter: string | undefined, signal: AbortSignal, sandboxed: boolean) => {
    const exec = sandboxed ? sandboxExec : plainExec;
    const run = await suite.run({ signal, ...(filter ? { filter } : {}), ...(exec ? { exec } : {}) });
    return {
      output: describe(run),
      failed: run.exitCode !== 0 || run.results.length === 0,
      ...(run.parsed ? { tests: tally(run.results) } : {}),
    };
  };
}

function tally(results: Array<{ status: string }>) {
  const n = (status: string) => results.filter((r) => r.status === status).length;
  return { passed: n('passed'), failed: n('failed'), skipped: n('skipped') };
}

export interface CompactOptions {
  id: string;
  loaded: LoadedConfig;
  signal: AbortSignal;
}

/** `keel sessions compact ID` (`runtime.compact`): fold a stored session's older turns into a summary now. */
export async function compactIn(
  runtime: Runtime,
  opts: CompactOptions,
): Promise<{ sessionId: string; event?: Extract<SessionEvent, { type: 'compaction' }> }> {
  const { env, log, audit } = runtime;
  const { config } = opts.loaded;
  const { row, state } = reopen(log, opts.id, auditOf(runtime));
  // the summary's request is one of the session's calls: in the ledger under the session's run
  const calls = runtime.calls?.with({ runId: row.id, sessionId: row.id });
  const model = createModelClient(config, env, { cwd: row.cwd, ...(calls ? { calls } : {}) });
  const { compact } = await import('./compaction.js');
  const { estimateRequestTokens } = await import('../model/tokens.js');
  // with no known window, "the window" is the history itself: the newest share of it stays verbatim
  const window =
    config.context_window ??
    (await serverWindow(model, config, opts.signal)) ??
    estimateRequestTokens(state.messages, []);
  const event = await compact({
    state,
    model,
    trigger: 'manual',
    window,
    settings: config.compaction,
    tools: [],
    pricing: config.pricing,
    signal: opts.signal,
  });
  if (event) {
    const { type, ...data } = event;
    log.append(row.id, type, data);
    const entry = auditEntryFor(event, row.id);
    if (entry) audit.append(entry);
  }
  return { sessionId: row.id, ...(event ? { event } : {}) };
}
