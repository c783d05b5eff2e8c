/** `keel ask|plan|edit|run`: start a session, render it, and exit with its code. */
import { existsSync, realpathSync, statSync } from 'node:fs';
import type { SessionOutcome } from '../agent/session.js';
import { count, cutOffSentence, RunError } from '../agent/terminal.js';
import { keelPaths } from '../config/paths.js';
import type { Config, Mode } from '../config/schema.js';
import { openDb } from '../store/db.js';
import { EventLog } from '../store/event-log.js';
import { EXIT, exitCodeFor } from '../term/exit-codes.js';
import { inert, inertLine } from '../term/inert.js';
import { type CommonFlags, ConfigError, load } from '../term/options.js';
import { terminalApprover } from './ask-person.js';
import { readPrompt } from './prompt-input.js';
import { createRenderer, dim, red } from './render.js';

export interface VerbFlags extends CommonFlags {
  message?: string;
  commit?: boolean;
  /** `-c`: this project's newest session. */
  continue?: boolean;
  /** `--resume ID` / `keel sessions resume ID`. */
  resume?: string;
  /** Go on without a terminal although `approvals` asks a person first. */
  skipApprovals?: boolean;
}

/** Run a session verb; returns the exit status. */
export async function runVerb(
  requested: Mode | undefined,
  words: string[],
  flags: VerbFlags,
): Promise<number> {
  // `keel -m TEXT` without a verb runs in the configured `permission` mode, known once the config loads
  let mode: Mode = requested ?? 'ask';
  const fail = (
    code: 'CONFIG_ERROR' | 'ENVIRONMENT_ERROR' | 'CANCELLED',
    message: string,
    sessionId: string | null = null,
  ): number => {
    const exit = exitCodeFor(code);
    if (flags.json) {
      process.stdout.write(
        // `error` is the shape every verb shares; `summary` stays for scripts written before it
        `${JSON.stringify({ session_id: sessionId, mode, code, exit_code: exit, error: message, summary: message })}\n`,
      );
    } else {
      process.stderr.write(`${red('keel:')} ${inert(message)}\n`);
    }
    return exit;
  };

  const reopening = flags.continue === true || flags.resume !== undefined;
  if (flags.continue && flags.resume !== undefined)
    return fail('CONFIG_ERROR', '--continue and --resume both name a session to go on with; give one');
  // going on with a killed session needs no new message; stdin is read only when it is piped
  const prompt = (await readPrompt(words, flags.message)) ?? (reopening ? '' : undefined);
  if (prompt === undefined)
    return fail(
      'CONFIG_ERROR',
      `keel ${verbOf(mode)}: no prompt given; pass it as arguments, with -m TEXT, or on stdin`,
    );
  let setup: ReturnType<typeof load>;
  try {
    setup = load(flags);
    if (!statSync(setup.cwd, { throwIfNoEntry: false })?.isDirectory()) {
      return fail('CONFIG_ERROR', `workspace ${setup.cwd} is not a folder`);
    }
  } catch (err) {
    if (err instanceof ConfigError) return fail('CONFIG_ERROR', err.message);
    throw err;
  }
  mode = requested ?? setup.loaded.config.permission;
  let resume: string | undefined = flags.resume;
  if (flags.continue) {
    const newest = newestSessionIn(setup.cwd);
    if (!newest)
      return fail('CONFIG_ERROR', `no session to continue in ${setup.cwd} (see keel sessions list)`);
    resume = newest;
  }

  for (const warning of setup.loaded.warnings)
    process.stderr.write(`${red('keel: warning:')} ${inertLine(warning)}\n`);
  // skills the session will not see (a project's, until keel trust): said once, here (src/skills/load.ts)
  for (const warning of (await (await import('../skills/load.js')).loadSkills({ root: setup.cwd })).warnings)
    process.stderr.write(`${red('keel: warning:')} ${inertLine(warning)}\n`);

  // a session that acts writes files and keeps its safety net in .git: a repository it cannot write is said now
  if (mode === 'edit' || mode === 'auto') {
    const { unwritable } = await import('./writable.js');
    const why = unwritable(setup.cwd, { workTree: true });
    if (why)
      return fail(
        'ENVIRONMENT_ERROR',
        `this repository cannot be changed: ${why}. keel ${verbOf(mode)} writes files in ${setup.cwd} and keeps its safety net in the repository's git folder; make them writable, or read it with keel ask`,
      );
  }

  // a person at a terminal is asked (writes, commands, hooks); unattended runs (auto, --json, pipes) are not
  const attended =
    mode !== 'auto' && !flags.json && process.stdin.isTTY === true && process.stderr.isTTY === true;
  const unasked = attended ? undefined : unaskedApprovals(mode, setup.loaded, flags.skipApprovals === true);
  if (unasked) return fail('CONFIG_ERROR', unasked);

  const controller = new AbortController();
  let interrupts = 0;
  const onSigint = () => {
    interrupts++;
    if (interrupts > 1) process.exit(EXIT.interrupted);
    if (!flags.json)
      process.stderr.write(dim('\n  interrupted: finishing the log (Ctrl+C again to quit now)\n'));
    controller.abort();
  };
  process.on('SIGINT', onSigint);
  process.on('SIGTERM', onSigint);

  // the server's window is asked now: its round trips overlap the loading below, and the prompt check and the
  // session share its one answer (model/window.ts)
  const window = askWindow(setup.loaded, setup.cwd, controller.signal);
  // a prompt the model cannot take is refused with the numbers before any request, not sent and retried
  let tooBig: string | undefined;
  try {
    const size = prompt ? await promptSize(prompt, setup.loaded, window, controller.signal) : undefined;
    if (size?.warn) process.stderr.write(`${red('keel: warning:')} ${inertLine(size.warn)}\n`);
    tooBig = size?.refuse;
  } catch (err) {
    process.off('SIGINT', onSigint);
    process.off('SIGTERM', onSigint);
    if (controller.signal.aborted) return fail('CANCELLED', 'interrupted while counting the prompt');
    if (err instanceof ConfigError) return fail('CONFIG_ERROR', err.message);
    throw err;
  }
  if (tooBig) {
    process.off('SIGINT', onSigint);
    process.off('SIGTERM', onSigint);
    return fail('CONFIG_ERROR', tooBig);
  }

  // every call in the team store's ledger, the session its own run: a store keel cannot reach stops it here
  const { LedgerStoreError, openRunLedger, PER_SESSION } = await import('../model/open-ledger.js');
  let runLedger: Awaited<ReturnType<typeof openRunLedger>>;
  try {
    runLedger = await openRunLedger(setup.loaded.config, PER_SESSION, {
      warn: (message) => process.stderr.write(`${red('keel: warning:')} ${inertLine(message)}\n`),
    });
  } catch (err) {
    process.off('SIGINT', onSigint);
    process.off('SIGTERM', onSigint);
    if (err instanceof LedgerStoreError) return fail('ENVIRONMENT_ERROR', err.message);
    throw err;
  }
  const { withRuntime } = await import('../agent/runtime.js');
  // on a terminal the answer is drawn as Markdown; a pipe gets the text as the model wrote it (made inert)
  const answer =
    !flags.json && process.stdout.isTTY
      ? new (await import('./markdown.js')).MarkdownStream(process.stdout)
      : undefined;
  const renderer = flags.json ? undefined : createRenderer(answer ? { answer } : {});
  let outcome: SessionOutcome;
  try {
    const tools = await (await import('../agent/session-tools.js')).sessionTools((line) =>
      process.stderr.write(`${red('keel: warning:')} ${inertLine(line)}\n`),
    );
    // one session, so the runtime (store, audit chain) lives as long as it does
    outcome = await withRuntime(
      process.env,
      (runtime) =>
        runtime.start({
          mode,
          prompt,
          tools,
          // a reopened session keeps its mode unless a verb says otherwise (`keel edit -c`)
          ...(resume ? { resume, ...(requested ? {} : { keepMode: true }) } : {}),
          loaded: setup.loaded,
          cwd: setup.cwd,
          signal: controller.signal,
          ...(flags.commit ? { commit: true } : {}),
          // a person at a terminal is asked (writes, commands, hooks); unattended runs (auto, --json, pipes) are not
          ...(attended ? { approve: terminalApprover() } : {}),
          // the answer streams inert to stdout; the work (calls, outcomes, diffs) goes to stderr
          ...(renderer
            ? {
                onText: renderer.onText,
                onReasoning: renderer.onReasoning,
                onEvent: renderer.onEvent,
                onIndexing: renderer.onIndexing,
              }
            : {}),
        }),
      { calls: runLedger.calls },
    );
  } catch (err) {
    if (err instanceof ConfigError) return fail('CONFIG_ERROR', err.message);
    if (err instanceof Error && /^(ResumeError|EventLogError|SessionLookupError)$/.test(err.name))
      return fail('CONFIG_ERROR', err.message);
    if (err instanceof RunError && (err.code === 'ENVIRONMENT_ERROR' || err.code === 'CONFIG_ERROR')) {
      const id = typeof err.detail?.session_id === 'string' ? err.detail.session_id : null;
      return fail(err.code, err.message, id);
    }
    const e = err as NodeJS.ErrnoException;
    if (typeof e.code === 'string' && /^E[A-Z]+$/.test(e.code)) return fail('ENVIRONMENT_ERROR', e.message);
    throw err;
  } finally {
    renderer?.stop();
    await answer?.drained();
    process.off('SIGINT', onSigint);
    process.off('SIGTERM', onSigint);
    await runLedger.close();
  }

  // a new session at a new place of a repository says where else it has memory; it never shares it. Said
  // after the work: opening the memory store for a note must not hold up the first request
  if (!resume && !flags.json && setup.loaded.config.memory.inject_tokens > 0)
    for (const note of await memoryElsewhere(setup.cwd, setup.loaded.config))
      process.stderr.write(`keel: ${inertLine(note)}\n`);

  const exit = exitCodeFor(outcome.code);
  if (flags.json) {
    process.stdout.write(`${JSON.stringify(jsonDocument(outcome, exit), null, 2)}\n`);
    return exit;
  }
  const tokens = outcome.tokens.input + outcome.tokens.output;
  const cost = outcome.costUsd === null ? '' : ` · $${outcome.costUsd.toFixed(4)}`;
  const files = outcome.filesChanged.length
    ? ` · changed ${outcome.filesChanged.map(inertLine).join(', ')}`
    : '';
  if (outcome.code !== 'COMPLETED') {
    process.stderr.write(`${red(`keel: ${outcome.code}`)}: ${inertLine(outcome.reason)}\n`);
  }
  if (outcome.finish === 'length')
    process.stderr.write(`${red('keel:')} ${cutOffSentence(setup.loaded.config.max_output_tokens)}\n`);
  process.stderr.write(
    dim(
      `session ${outcome.sessionId} · ${outcome.code} · ${count(outcome.rounds, 'round')} · ${tokens} tokens${cost}${files}\n`,
    ),
  );
  return exit;
}

/** The `--json` document: the contract fields from DESIGN.md, plus the reason. */
export function jsonDocument(outcome: SessionOutcome, exit: number): Record<string, unknown> {
  return {
    session_id: outcome.sessionId,
    mode: outcome.mode,
    code: outcome.code,
    exit_code: exit,
    reason: outcome.reason,
    ...(outcome.budget ? { budget: outcome.budget } : {}),
    summary: outcome.summary,
    // only when the last answer was cut at the output limit: the summary is then partial
    ...(outcome.finish ? { finish: outcome.finish } : {}),
    rounds: outcome.rounds,
    tokens: { ...outcome.tokens, total: outcome.tokens.input + outcome.tokens.output },
    cost_usd: outcome.costUsd,
    files_changed: outcome.filesChanged,
    ...(outcome.commit ? { commit: outcome.commit } : {}),
  };
}

/**
 * Why a session that cannot ask anyone must not start: the config says to ask a person before writes or
 * commands this mode could make. Undefined when nothing would be asked, or `--skip-approvals` says go on
 * (the gate still holds: approvals only ever add questions to calls the policy allows).
 */
function unaskedApprovals(
  mode: Mode,
  loaded: ReturnType<typeof load>['loaded'],
  skip: boolean,
): string | undefined {
  const setting = loaded.config.approvals;
  if (skip || setting === undefined || setting === 'never') return undefined;
  if (mode !== 'edit' && mode !== 'auto') return undefined;
  const from = loaded.sources.approvals ?? 'config';
  const why = mode === 'auto' ? `keel ${verbOf(mode)} asks no one` : 'there is no terminal to ask at';
  return `approvals = "${setting}" (${from}) asks a person first, but ${why}; run it at a terminal, or pass --skip-approvals to go on without asking (the policy still applies)`;
}

// below this many characters a prompt fits any window keel is used with, so nothing is counted or asked
const SMALL_PROMPT_CHARS = 16 * 1024;
// with no window known: above this many tokens a prompt is said to be large; above the second, it is
// refused, since few local models take it and a server would spend minutes on it before failing
const UNKNOWN_WINDOW_WARN = 32_768;
const UNKNOWN_WINDOW_REFUSE = 131_072;

/**
 * Whether the prompt can be sent: refused when it has more tokens than the context window (the
 * configured one, else the server's), or, with no window known, more than UNKNOWN_WINDOW_REFUSE;
 * a warning when the window is unknown and it has more than UNKNOWN_WINDOW_WARN.
 */
async function promptSize(
  prompt: string,
  loaded: ReturnType<typeof load>['loaded'],
  asked: Promise<number | undefined>,
  signal: AbortSignal,
): Promise<{ refuse?: string; warn?: string } | undefined> {
  if (prompt.length < SMALL_PROMPT_CHARS) return undefined;
  const { config, sources } = loaded;
  let window = config.context_window;
  let from = `context_window from ${sources.context_window ?? 'config'}`;
  if (window === undefined) {
    window = await asked;
    from = `as ${config.base_url} reports it for ${config.model || 'the model'}`;
  }
  const { countTokensCancellable, ESTIMATE_MARGIN } = await import('../model/tokens.js');
  // keel's tokenizer counts below many servers' own (Qwen3's by a quarter): the estimate errs on the safe side
  const tokens = Math.ceil((await countTokensCancellable(prompt, signal)) * (1 + ESTIMATE_MARGIN));
  const n = (x: number) => x.toLocaleString('en-US');
  if (window === undefined) {
    const unknown = `the prompt is about ${n(tokens)} tokens and the context window is unknown (${config.base_url} does not report one for ${config.model || 'the model'})`;
    const say = `if the model takes it, give its window with --context-window N or context_window in keel.toml`;
    if (tokens > UNKNOWN_WINDOW_REFUSE)
      return {
        refuse: `${unknown}; few models take more than ${n(UNKNOWN_WINDOW_REFUSE)} tokens, so it is not sent: ${say}; else shorten it, or put the text in a file and ask about the file`,
      };
    if (tokens > UNKNOWN_WINDOW_WARN)
      return {
        warn: `${unknown}; sending it, but a model with a smaller window will fail or lose its start (${say})`,
      };
    return undefined;
  }
  if (tokens <= window) return undefined;
  return {
    refuse: `the prompt is about ${n(tokens)} tokens, more than the context window of ${n(window)} tokens (${from}); shorten it, or put the text in a file and ask about the file`,
  };
}

/**
 * Start asking the model's server for its window (none when the config gives one, or for a scripted model):
 * the answer is shared through model/window.ts. A model that cannot be built is left for the session to report.
 */
async function askWindow(
  loaded: ReturnType<typeof load>['loaded'],
  cwd: string,
  signal: AbortSignal,
): Promise<number | undefined> {
  const { config } = loaded;
  if (config.context_window !== undefined || config.provider === 'scripted') return undefined;
  const [{ createModelClient }, { serverWindow }] = await Promise.all([
    import('../model/create.js'),
    import('../model/window.js'),
  ]);
  try {
    return await serverWindow(createModelClient(config, process.env, { cwd }), config, signal);
  } catch {
    return undefined;
  }
}

/** The newest conversation started in this workspace (its canonical path, as sessions record it). */
function newestSessionIn(cwd: string): string | undefined {
  const path = keelPaths().db;
  if (!existsSync(path)) return undefined;
  const db = openDb(path);
  try {
    return new EventLog(db).newestSession(realpathSync(cwd))?.id;
  } finally {
    db.close();
  }
}

function verbOf(mode: Mode): string {
  return mode === 'auto' ? 'run' : mode;
}

/** Notes on this repository's memory at other places (none when memory cannot be read: it never fails a session). */
async function memoryElsewhere(cwd: string, config: Config): Promise<string[]> {
  const [{ openMemory }, { elsewhere, notSharedNote }, { pinWorkspace }] = await Promise.all([
    import('../memory/open.js'),
    import('../memory/places.js'),
    import('../policy/git-runner.js'),
  ]);
  try {
    // pinned as the session will pin it, so the repository is found (and its first commit read) once for both
    const root = realpathSync.native(cwd);
    pinWorkspace(root);
    const m = openMemory({ dir: root, config, pinned: true });
    try {
      return elsewhere(m).map(notSharedNote);
    } finally {
      m.close();
    }
  } catch {
    return [];
  }
}
