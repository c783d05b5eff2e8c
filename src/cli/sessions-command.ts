/** `keel sessions list|show|fork|export`: read sessions back from the event log, and branch them. */
import { distinctCallIds } from '../agent/call-ids.js';
import type { Runtime } from '../agent/runtime.js';
import { alive } from '../agent/session.js';
import { forkStored, withLog, withSession } from '../agent/stored-sessions.js';
import type { EventLog, SessionRow, StoredEvent } from '../store/event-log.js';
import { EXIT } from '../term/exit-codes.js';
import { inertLine } from '../term/inert.js';
import { type CommonFlags, ConfigError, load, workspace } from '../term/options.js';
import { reportError } from './errors.js';
import { readPrompt } from './prompt-input.js';
import { dim, red } from './render.js';
import { age } from './runs-command.js';
import type { VerbFlags } from './session-command.js';

/** A listed session: its row plus what a reader wants at a glance. */
interface Listed extends SessionRow {
  title: string;
  /** The terminal code of its last run, `running`, or `interrupted` (killed: resume it). */
  state: string;
}

function listed(log: EventLog, row: SessionRow): Listed & { session_id: string } {
  const title = row.prompt.split('\n')[0]?.trim().slice(0, 80) ?? '';
  // `session_id` as every session result names it; `id` stays for scripts written before
  return {
    ...row,
    session_id: row.id,
    title,
    state: row.code ?? (runningPid(log, row.id) ? 'running' : 'interrupted'),
  };
}

/** The project column: the workspace folder's name (the whole path is in --json). */
function projectName(cwd: string): string {
  return cwd.split('/').filter(Boolean).at(-1) ?? cwd;
}

/** The process running a session's current run, when it is alive. */
function runningPid(log: EventLog, id: string): number | undefined {
  const starts = log.events(id).filter((e) => e.type === 'session_start' || e.type === 'session_resume');
  const pid = starts.at(-1)?.data.pid;
  return typeof pid === 'number' && alive(pid) ? pid : undefined;
}

/**
 * List recent sessions, newest first; `--project` keeps this workspace's. By default only the sessions a
 * person started (and forks): a run's plan and attempts, a loop's rounds and subagents are counted on their
 * parent's line, not listed; `--all` lists every session.
 */
export async function listSessions(flags: {
  limit: number;
  json?: boolean;
  project?: string;
  all?: boolean;
}): Promise<number> {
  // sessions record their workspace root, so a subfolder names its repository's sessions
  const cwd = flags.project === undefined ? undefined : workspace({ cwd: flags.project });
  const filter = cwd === undefined ? {} : { cwd };
  const rows: Array<Listed & { children?: number }> =
    withLog((log) =>
      flags.all
        ? log.listSessions(flags.limit, filter).map((row) => listed(log, row))
        : log
            .listTopLevel(flags.limit, filter)
            .map((row) => ({ ...listed(log, row), children: row.children })),
    ) ?? [];
  if (flags.json) {
    process.stdout.write(`${JSON.stringify({ sessions: rows }, null, 2)}\n`);
    return EXIT.ok;
  }
  if (!rows.length) {
    process.stderr.write('no sessions yet\n');
    return EXIT.ok;
  }
  const projects = rows.map((s) => inertLine(projectName(s.cwd)));
  const width = Math.min(20, Math.max(7, ...projects.map((p) => p.length)));
  const clip = (text: string, n: number) => (text.length > n ? `${text.slice(0, n - 3)}...` : text);
  process.stdout.write(
    dim(
      `${'SESSION'.padEnd(rows[0]?.id.length ?? 22)}  ${'AGE'.padStart(4)}  ${'PROJECT'.padEnd(width)}  MODE  ${'STATE'.padEnd(19)}  ${'COST'.padStart(9)}  TASK\n`,
    ),
  );
  for (const [i, s] of rows.entries()) {
    const title = inertLine(s.title);
    const cost = s.cost_usd === null ? '-' : `$${s.cost_usd.toFixed(4)}`;
    const parent = s.parent_id
      ? `  ${dim(`<- ${s.parent_id}${s.forked_seq ? `@${s.forked_seq}` : ''}`)}`
      : '';
    const children = s.children ? `  ${dim(`(+${s.children} session${s.children === 1 ? '' : 's'})`)}` : '';
    const project = clip(projects[i] ?? '', width).padEnd(width);
    process.stdout.write(
      `${s.id}  ${age(s.updated_at).padStart(4)}  ${project}  ${s.mode.padEnd(4)}  ${s.state.padEnd(19)}  ${cost.padStart(9)}  ${clip(title, 50)}${parent}${children}\n`,
    );
  }
  return EXIT.ok;
}

/** `keel sessions fork ID [--at SEQ] [-m TEXT]`: branch a session; with a message, go on in the branch. */
export async function forkSession(
  id: string,
  words: string[],
  flags: VerbFlags & { at?: number },
): Promise<number> {
  const fail = (message: string) => reportError(flags.json, 'CONFIG_ERROR', message, { session_id: null });
  const result = forkStored(id, flags.at);
  if (typeof result === 'string') return fail(result);
  const message = await readPrompt(words, flags.message);
  if (message) {
    const { runVerb } = await import('./session-command.js');
    return runVerb(undefined, [], { ...flags, message, resume: result.id });
  }
  if (flags.json)
    process.stdout.write(
      `${JSON.stringify({ session_id: result.id, parent_id: result.parent_id, forked_seq: result.forked_seq })}\n`,
    );
  else
    process.stdout.write(
      `${result.id}\n${dim(`forked from ${result.parent_id} at event ${result.forked_seq}; go on with: keel sessions resume ${result.id} -m TEXT`)}\n`,
    );
  return EXIT.ok;
}

/** Show one session and its events. A session with no end event was killed; its log is still complete to that point. */
export async function showSession(id: string, flags: { json?: boolean; tree?: boolean }): Promise<number> {
  if (flags.tree) return showTree(id, flags);
  const found = withSession(id, (log, session) => ({
    session,
    events: distinctCallIds(log.events(session.id)),
  }));
  if (typeof found === 'string') return reportError(flags.json, 'CONFIG_ERROR', found);
  if (flags.json) {
    process.stdout.write(`${JSON.stringify(found, null, 2)}\n`);
    return EXIT.ok;
  }
  const { session, events } = found;
  const where = inertLine(`${session.provider}/${session.model} · ${session.cwd}`);
  process.stdout.write(
    `session ${session.id}\nmode ${session.mode} · ${where}\ncode ${session.code ?? 'UNFINISHED (no session_end event: the process was killed)'}\n\n`,
  );
  for (const e of events)
    process.stdout.write(
      `${dim(`${String(e.seq).padStart(4)} ${e.ts.slice(11, 23)}`)} ${inertLine(describe(e))}\n`,
    );
  return EXIT.ok;
}

/** `keel sessions export ID`: the transcript on standard output, or in a file (-o). */
export async function exportCommand(id: string, flags: { format: string; output?: string }): Promise<number> {
  const { EXPORT_FORMATS, exportSession } = await import('../term/session-export.js');
  const format = EXPORT_FORMATS.find((f) => f === flags.format);
  if (!format) {
    process.stderr.write(`keel: --format must be md or html, got "${inertLine(flags.format)}"\n`);
    return EXIT.usage;
  }
  const made = await exportSession(id, format);
  if ('error' in made) return reportError(false, 'CONFIG_ERROR', made.error);
  if (!flags.output) {
    process.stdout.write(made.text);
    return EXIT.ok;
  }
  const { writeFileSync } = await import('node:fs');
  try {
    writeFileSync(flags.output, made.text);
  } catch (err) {
    process.stderr.write(
      `keel: cannot write ${inertLine(flags.output)}: ${inertLine((err as Error).message)}\n`,
    );
    return EXIT.environment;
  }
  process.stderr.write(`exported session ${made.id} to ${inertLine(flags.output)}\n`);
  return EXIT.ok;
}

/** One line for an event; its text is the model's, a tool's or a hook's, so the caller makes it inert. */
function describe(e: StoredEvent): string {
  const d = e.data as { [k: string]: unknown };
  const short = (v: unknown, n = 100) => {
    const s = typeof v === 'string' ? v : JSON.stringify(v);
    const one = (s ?? '').replace(/\s+/g, ' ');
    return one.length > n ? `${one.slice(0, n - 3)}...` : one;
  };
  switch (e.type) {
    case 'user_message':
      return `user: ${short(d.text)}`;
    case 'assistant_message': {
      const calls = (d.tool_calls as Array<{ name: string }>).map((c) => c.name).join(', ');
      return `assistant: ${short(d.text, 70)}${calls ? ` [calls: ${calls}]` : ''}`;
    }
    case 'tool_start':
      return `tool ${d.tool} ${short(d.args, 80)}`;
    case 'tool_result':
      return `result ${d.tool}${d.is_error ? ' (error)' : ''}: ${short(d.output, 70)}`;
    case 'gate_decision':
      return `gate ${d.tool}: ${d.decision}${d.reason ? ` (${short(d.reason, 80)})` : ''}`;
    case 'session_end':
      return `end ${d.code}: ${short(d.reason)}`;
    default:
      return `${e.type} ${short(d, 90)}`;
  }
}

interface TreeNode {
  session: Listed;
  children: TreeNode[];
}

/** The tree a session belongs to, from its root: forks, a run's attempts, subagents. */
function showTree(id: string, flags: { json?: boolean }): number {
  const tree = withSession(id, (log, start) => {
    let root = start;
    const seen = new Set([root.id]);
    for (let up = root.parent_id ? log.getSession(root.parent_id) : undefined; up && !seen.has(up.id); ) {
      seen.add(up.id);
      root = up;
      up = up.parent_id ? log.getSession(up.parent_id) : undefined;
    }
    const build = (row: SessionRow, depth: number): TreeNode => ({
      session: listed(log, row),
      // a hand-made cycle or a runaway depth cannot hang the reader
      children: depth > 32 ? [] : log.childSessions(row.id).map((c) => build(c, depth + 1)),
    });
    return { tree: build(root, 0), selected: start.id };
  });
  if (typeof tree === 'string') return reportError(flags.json, 'CONFIG_ERROR', tree);
  if (flags.json) {
    process.stdout.write(`${JSON.stringify(tree, null, 2)}\n`);
    return EXIT.ok;
  }
  const print = (node: TreeNode, prefix: string, last: boolean, top: boolean) => {
    const s = node.session;
    const branch = top ? '' : last ? '└─ ' : '├─ ';
    const cost = s.cost_usd === null ? '' : ` $${s.cost_usd.toFixed(4)}`;
    const at = s.forked_seq ? ` (fork @${s.forked_seq})` : '';
    const mark = s.id === tree.selected ? ' *' : '';
    process.stdout.write(
      `${prefix}${branch}${s.id}  ${s.mode}  ${s.state}${cost}${at}  ${inertLine(s.title.slice(0, 50))}${mark}\n`,
    );
    const next = top ? '' : `${prefix}${last ? '   ' : '│  '}`;
    for (const [i, c] of node.children.entries()) print(c, next, i === node.children.length - 1, false);
  };
  print(tree.tree, '', true, true);
  return EXIT.ok;
}

/** `keel sessions compact ID`: summarize the older turns now and say how much smaller the history is. */
export async function compactCommand(id: string, flags: CommonFlags & { json?: boolean }): Promise<number> {
  const fail = (message: string, exit: number = EXIT.usage) => {
    if (flags.json)
      process.stdout.write(
        `${JSON.stringify({ session_id: null, compacted: false, code: exit === EXIT.model ? 'MODEL_ERROR' : exit === EXIT.environment ? 'ENVIRONMENT_ERROR' : 'CONFIG_ERROR', exit_code: exit, error: message })}\n`,
      );
    else process.stderr.write(`${red('keel:')} ${inertLine(message)}\n`);
    return exit;
  };
  const row = withSession(id, (_log, found) => found);
  if (typeof row === 'string') return fail(row);
  const { withRuntime } = await import('../agent/runtime.js');
  let result: Awaited<ReturnType<Runtime['compact']>>;
  try {
    const { loaded } = load({ ...flags, cwd: flags.cwd ?? row.cwd });
    // the summary's request lands in the ledger: a store keel cannot reach stops it before the call
    const { LedgerStoreError, openRunLedger, PER_SESSION } = await import('../model/open-ledger.js');
    let runLedger: Awaited<ReturnType<typeof openRunLedger>>;
    try {
      runLedger = await openRunLedger(loaded.config, PER_SESSION);
    } catch (err) {
      if (err instanceof LedgerStoreError) return fail(err.message, EXIT.environment);
      throw err;
    }
    try {
      result = await withRuntime(
        process.env,
        (runtime) => runtime.compact({ id: row.id, loaded, signal: new AbortController().signal }),
        { calls: runLedger.calls },
      );
    } finally {
      await runLedger.close();
    }
  } catch (err) {
    if (err instanceof ConfigError || (err instanceof Error && /ResumeError|EventLogError/.test(err.name)))
      return fail(err.message);
    if (err instanceof Error && err.name === 'ModelError') return fail(err.message, EXIT.model);
    throw err;
  }
  const e = result.event;
  if (flags.json) {
    process.stdout.write(
      `${JSON.stringify({
        session_id: result.sessionId,
        compacted: e !== undefined,
        ...(e
          ? { tokens_before: e.tokens_before, tokens_after: e.tokens_after, keep_from_seq: e.keep_from_seq }
          : {}),
      })}\n`,
    );
    return EXIT.ok;
  }
  process.stdout.write(
    e
      ? `compacted ${result.sessionId}: ${e.tokens_before} -> ${e.tokens_after} tokens (events from ${e.keep_from_seq} kept verbatim)\n`
      : `nothing to compact in ${result.sessionId}: its newest turns are all there is\n`,
  );
  return EXIT.ok;
}
