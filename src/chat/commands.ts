/**
 * The slash commands, for either face: each reads or changes the conversation and answers in lines
 * of text (keel's own words, with anything from the log made inert here).
 */
import { MODES, type Mode } from '../config/schema.js';
import { approvedPluginCommands } from '../skills/plugin-commands.js';
import { inertLine } from '../term/inert.js';
import { type Conversation, errorLine } from './conversation.js';
import { clip, tokens } from './describe.js';
import { colorDiff, workspaceDiff } from './diff.js';
import { COMMANDS, type CommandName } from './slash.js';
import type { Style } from './style.js';

/** Where a command answers: lines of text, an error line, a yes/no question. */
export interface Screen {
  style: Style;
  lines(lines: string[]): void;
  error(text: string): void;
  confirm(question: string): Promise<boolean>;
  /** Show a stored session's transcript (after /resume or /fork). */
  reopened(id: string): Promise<void>;
  /** Empty the screen for another session (/clear, /rewind). */
  cleared(): void;
  /** A turn keel sends for the person (/init): shown as `shown`, logged as `sent`. */
  sending(shown: string, sent: string): void;
  exit(): void;
}

/** Run one slash command. */
export async function runCommand(
  name: CommandName,
  arg: string,
  conv: Conversation,
  screen: Screen,
): Promise<void> {
  const { style } = screen;
  const busy = () => {
    if (!conv.running) return false;
    screen.error(`/${name} waits until the turn ends (Ctrl+C stops it)`);
    return true;
  };
  switch (name) {
    case 'help': {
      // plugin text: the description is one plain line already, and inert here again as everything shown is
      const plugins = await approvedPluginCommands();
      screen.lines([
        style.bold('commands'),
        ...COMMANDS.map((c) => `  /${`${c.name} ${c.args}`.trim().padEnd(28)} ${style.dim(c.summary)}`),
        ...(plugins.length
          ? [
              style.bold('plugin commands'),
              ...plugins.map(
                (c) =>
                  `  /${inertLine(`${c.plugin}:${c.name} [ARGS]`).padEnd(28)} ${style.dim(inertLine(c.description ?? ''))}`,
              ),
            ]
          : []),
        style.bold('keys'),
        `  ${'Enter'.padEnd(29)} ${style.dim('send (during a turn: steer it at the next step)')}`,
        `  ${'Shift+Enter, or \\ then Enter'.padEnd(29)} ${style.dim('a new line')}`,
        `  ${'Up / Down'.padEnd(29)} ${style.dim("this project's earlier prompts")}`,
        `  ${'Tab'.padEnd(29)} ${style.dim('complete a command or a file path')}`,
        `  ${'@'.padEnd(29)} ${style.dim('pick a workspace file (type to narrow; Enter inserts @path, attached when sent)')}`,
        `  ${'Ctrl+O'.padEnd(29)} ${style.dim('expand or fold reasoning and tool output')}`,
        `  ${'Ctrl+C'.padEnd(29)} ${style.dim('stop the turn; twice: leave')}`,
        style.dim('  a leading space sends slash text as a message; /src/app.ts is a message too'),
      ]);
      return;
    }
    case 'mode': {
      if (!arg) {
        screen.lines([`mode ${conv.mode} ${style.dim(`(one of ${MODES.join(', ')})`)}`]);
        return;
      }
      if (!(MODES as readonly string[]).includes(arg)) {
        screen.error(`unknown mode "${inertLine(arg)}"; use one of ${MODES.join(', ')}`);
        return;
      }
      conv.setMode(arg as Mode);
      screen.lines([`mode ${arg} from the next turn`]);
      return;
    }
    case 'model': {
      // checked against what the server offers, so a typo fails here and not at the next turn
      const { serverModels, findModel } = await import('./models.js');
      const offered = await serverModels(conv.config);
      const shown = (names: string[]) =>
        names.length > 12
          ? `${names.slice(0, 12).join(', ')}, … (${names.length})`
          : names.join(', ') || '(none)';
      if (!arg) {
        if (offered.kind === 'list') {
          screen.lines([
            `${style.bold(`models at ${inertLine(offered.where)}`)} ${style.dim('(/model NAME switches)')}`,
            ...offered.models.map(
              (m) => `  ${inertLine(m)}${findModel([m], conv.model) ? style.dim(' (current)') : ''}`,
            ),
            ...(offered.models.some((m) => findModel([m], conv.model))
              ? []
              : [style.dim(`  (current: ${inertLine(conv.model)}, not among them)`)]),
          ]);
        } else {
          const why =
            offered.kind === 'none'
              ? `${offered.why}; /model NAME takes a name unchecked`
              : `cannot list them: ${offered.message}`;
          screen.lines([
            `model ${inertLine(conv.model)} ${style.dim(`(provider ${conv.config.provider}); ${inertLine(why)}`)}`,
          ]);
        }
        return;
      }
      if (offered.kind === 'error') {
        screen.error(
          `cannot check "${inertLine(arg)}" against the server's models: ${inertLine(offered.message)}; the model stays ${inertLine(conv.model)}`,
        );
        return;
      }
      if (offered.kind === 'list' && !findModel(offered.models, arg)) {
        screen.error(
          `unknown model "${inertLine(arg)}": the server at ${inertLine(offered.where)} has ${inertLine(shown(offered.models))}; the model stays ${inertLine(conv.model)}`,
        );
        return;
      }
      conv.setModel(arg);
      screen.lines([
        `model ${inertLine(arg)} from the next turn${offered.kind === 'none' ? ` (not checked: ${inertLine(offered.why)})` : ''}`,
      ]);
      return;
    }
    case 'resume': {
      if (busy()) return;
      if (!arg || arg === '--all') {
        const [{ withLog }, { resumeList }] = await Promise.all([
          import('../agent/stored-sessions.js'),
          import('./resume-list.js'),
        ]);
        const all = arg === '--all';
        screen.lines(
          withLog((log) => resumeList(log, { cwd: conv.cwd, all, limit: 15 }, style)) ?? ['no sessions yet'],
        );
        return;
      }
      const { withLog } = await import('../agent/stored-sessions.js');
      const row = withLog((log) => log.findSession(arg));
      if (!row) {
        screen.error(`no session matches "${inertLine(arg)}" (see /resume)`);
        return;
      }
      await screen.reopened(row.id);
      return;
    }
    case 'clear': {
      if (busy()) return;
      const old = conv.sessionId;
      conv.fresh();
      screen.cleared();
      screen.lines([
        old
          ? `a new session (model ${inertLine(conv.model)}, mode ${conv.mode}); the last one goes on with /resume ${old}`
          : `a new session (model ${inertLine(conv.model)}, mode ${conv.mode})`,
      ]);
      return;
    }
    case 'permissions': {
      const { permissionsCommand } = await import('./permissions.js');
      permissionsCommand(arg, conv, screen);
      return;
    }
    case 'status': {
      const [{ createModelClient }, { sandboxInUse }] = await Promise.all([
        import('../model/create.js'),
        import('../policy/sandbox.js'),
      ]);
      const { provider } = createModelClient(conv.config).primary;
      const s = conv.stats;
      const acting = conv.mode === 'edit' || conv.mode === 'auto';
      const sandbox = acting
        ? await sandboxInUse(conv.config.sandbox)
        : `${await sandboxInUse(conv.config.sandbox)}; no shell in ${conv.mode} mode`;
      const window = s.contextWindow
        ? `${tokens(s.contextTokens)}/${tokens(s.contextWindow)} (${Math.round((100 * s.contextTokens) / s.contextWindow)}%)`
        : `${tokens(s.contextTokens)}/unknown (the server has not said; --context-window sets it)`;
      const row = (k: string, v: string) => `  ${style.dim(k.padEnd(9))} ${v}`;
      screen.lines([
        style.bold('status'),
        row('model', inertLine(conv.model)),
        row('provider', `${provider.name} at ${inertLine(provider.baseUrl || '(none)')}`),
        row('mode', conv.mode),
        row('scope', conv.config.scope.map(inertLine).join(', ')),
        row('sandbox', inertLine(sandbox)),
        row('context', window),
        row(
          'spend',
          `${tokens(s.tokens)} tokens · ${s.cost === null ? 'cost unknown (no pricing for this model)' : `$${s.cost.toFixed(4)}`}`,
        ),
        row('session', conv.sessionId ?? '(not started: the next message starts it)'),
      ]);
      return;
    }
    case 'rewind': {
      if (busy()) return;
      const n = Number(arg);
      if (!arg || !Number.isInteger(n) || n <= 0) {
        screen.error(`/rewind takes a turn number as the transcript shows it, got "${inertLine(arg)}"`);
        return;
      }
      if (!conv.sessionId) {
        screen.error('nothing to rewind yet: send a message first');
        return;
      }
      const [{ prepareRewind }, { recordEvent }] = await Promise.all([
        import('./rewind.js'),
        import('../agent/stored-sessions.js'),
      ]);
      const plan = prepareRewind(conv.sessionId, n);
      if ('error' in plan) {
        screen.error(plan.error);
        return;
      }
      screen.lines([
        style.bold(
          `rewind to the start of turn ${n}: ${inertLine(clip(plan.text.split('\n')[0] ?? '', 60))}`,
        ),
        plan.steps.length
          ? 'files put back:'
          : style.dim('  no files to put back (the turns since changed nothing the safety net saved)'),
        ...plan.steps.map((s) => `  ${inertLine(s)}`),
      ]);
      if (plan.undo && !(await screen.confirm(`put these files back and rewind to turn ${n}?`))) {
        screen.lines(['not rewound']);
        return;
      }
      const source = plan.session.id;
      let steps: string[] = [];
      const kept = plan.undo?.keep.map((k) => k.ref) ?? [];
      if (plan.undo) {
        const { applyUndo } = await import('../policy/undo.js');
        try {
          steps = applyUndo(plan.undo);
        } catch (err) {
          recordEvent(source, 'rewind', {
            turn: n,
            at: plan.at,
            fork: null,
            applied: false,
            steps: plan.steps,
            error: errorLine(err),
          });
          screen.error(`rewind stopped: ${inertLine(errorLine(err))}; the conversation is as it was`);
          return;
        }
      }
      let fork: string | null = null;
      if (plan.at > 0 && n > 1) {
        const { forkStored } = await import('../agent/stored-sessions.js');
        const made = forkStored(source, plan.at);
        if (typeof made === 'string') {
          recordEvent(source, 'rewind', {
            turn: n,
            at: plan.at,
            fork: null,
            applied: true,
            steps,
            kept,
            error: made,
          });
          screen.error(`files put back, but the conversation could not be forked: ${inertLine(made)}`);
          return;
        }
        fork = made.id;
      }
      recordEvent(source, 'rewind', { turn: n, at: plan.at, fork, applied: true, steps, kept });
      screen.cleared();
      if (fork) await screen.reopened(fork);
      else conv.fresh();
      screen.lines([
        `rewound ${source} to the start of turn ${n}${fork ? `: going on in ${fork}` : ': a new session'}${steps.length ? `; ${steps.length} file step${steps.length === 1 ? '' : 's'} done` : ''} (the old session stays: /resume ${source})`,
      ]);
      return;
    }
    case 'export': {
      const format = arg || 'md';
      if (format !== 'md' && format !== 'html') {
        screen.error(`/export takes md or html, got "${inertLine(arg)}"`);
        return;
      }
      if (!conv.sessionId) {
        screen.error('nothing to export yet: send a message first');
        return;
      }
      const [{ exportSession }, { join }, { writeAtomic }] = await Promise.all([
        import('../term/session-export.js'),
        import('node:path'),
        import('../tools/file-change.js'),
      ]);
      const made = await exportSession(conv.sessionId, format);
      if ('error' in made) {
        screen.error(made.error);
        return;
      }
      const file = join(conv.cwd, `keel-session-${made.id}.${format}`);
      // the workspace is the model's too: a symlink put at this name is replaced, never written through
      try {
        await writeAtomic(file, made.text);
      } catch (err) {
        screen.error(`export failed: ${inertLine(errorLine(err))}`);
        return;
      }
      screen.lines([`exported the session to ${inertLine(file)}`]);
      return;
    }
    case 'init': {
      if (busy()) return;
      const { INIT_FILE, INIT_PROMPT } = await import('./init-prompt.js');
      const config = conv.config;
      // one turn that may write only AGENTS.md, and asks before it does (a stricter setting stays)
      const loaded = {
        ...conv.loadedConfig,
        config: {
          ...config,
          scope: [INIT_FILE],
          approvals:
            config.approvals === 'all' || config.approvals === 'shell'
              ? ('all' as const)
              : ('writes' as const),
        },
      };
      screen.sending(
        `/init: draft ${INIT_FILE} (keel reads the repository, then asks before it writes)`,
        INIT_PROMPT,
      );
      conv.send(INIT_PROMPT, { mode: 'edit', loaded });
      return;
    }
    case 'fork': {
      if (busy()) return;
      if (!conv.sessionId) {
        screen.error('nothing to fork yet: send a message first');
        return;
      }
      const at = arg ? Number(arg) : undefined;
      if (at !== undefined && (!Number.isInteger(at) || at <= 0)) {
        screen.error(`/fork takes an event number (see keel sessions show), got "${inertLine(arg)}"`);
        return;
      }
      const { forkStored } = await import('../agent/stored-sessions.js');
      const fork = forkStored(conv.sessionId, at);
      if (typeof fork === 'string') {
        screen.error(fork);
        return;
      }
      screen.lines([
        `forked ${conv.sessionId} at event ${fork.forked_seq} into ${fork.id}; going on in the fork`,
      ]);
      await screen.reopened(fork.id);
      return;
    }
    case 'compact': {
      if (busy()) return;
      if (!conv.sessionId) {
        screen.error('nothing to compact yet');
        return;
      }
      try {
        const result = await (await conv.runtime()).compact({
          id: conv.sessionId,
          loaded: conv.loadedConfig,
          signal: new AbortController().signal,
        });
        const e = result.event;
        if (e) conv.compacted(e);
        screen.lines([
          e
            ? `compacted: ${tokens(e.tokens_before)} -> ${tokens(e.tokens_after)} tokens (events from ${e.keep_from_seq} kept verbatim)`
            : 'nothing to compact: the newest turns are all there is',
        ]);
      } catch (err) {
        screen.error(`compaction failed: ${inertLine(errorLine(err))}`);
      }
      return;
    }
    case 'undo': {
      if (busy()) return;
      if (!conv.sessionId) {
        screen.error('this chat has changed nothing yet');
        return;
      }
      const [{ prepareUndo }, { recordEvent }] = await Promise.all([
        import('../term/undo-target.js'),
        import('../agent/stored-sessions.js'),
      ]);
      const prepared = prepareUndo(conv.sessionId, conv.cwd);
      if ('error' in prepared) {
        screen.error(prepared.error);
        return;
      }
      screen.lines([style.bold('undo will:'), ...prepared.steps.map((s) => `  ${inertLine(s)}`)]);
      if (!(await screen.confirm('undo these changes?'))) {
        screen.lines(['not undone']);
        return;
      }
      const { applyUndo } = await import('../policy/undo.js');
      try {
        const done = applyUndo(prepared.plan);
        const kept = prepared.plan.keep.map((k) => k.ref);
        recordEvent(prepared.session.id, 'undo', { applied: true, steps: done, kept, cwd: conv.cwd });
        screen.lines([style.bold('undone:'), ...done.map((s) => `  ${inertLine(s)}`)]);
      } catch (err) {
        recordEvent(prepared.session.id, 'undo', {
          applied: false,
          steps: prepared.steps,
          error: errorLine(err),
        });
        screen.error(`undo stopped: ${inertLine(errorLine(err))}`);
      }
      return;
    }
    case 'diff': {
      const lines = workspaceDiff(conv.cwd);
      if (lines === undefined) screen.error(`${conv.cwd} is not a git repository: no diff to show`);
      else if (!lines.length) screen.lines(['no changes against HEAD']);
      else screen.lines(colorDiff(lines, style));
      return;
    }
    case 'cost': {
      const s = conv.stats;
      const window = s.contextWindow ? ` of ${tokens(s.contextWindow)}` : '';
      screen.lines([
        `session ${conv.sessionId ?? '(not started)'}`,
        `  tokens ${tokens(s.tokens)} · context ${tokens(s.contextTokens)}${window} · cost ${s.cost === null ? 'unknown (no pricing for this model)' : `$${s.cost.toFixed(4)}`}`,
      ]);
      return;
    }
    case 'agents': {
      if (!conv.sessionId) {
        screen.lines(['no subagents: the session has not started']);
        return;
      }
      const root = conv.sessionId;
      const { withLog } = await import('../agent/stored-sessions.js');
      const lines =
        withLog((log) => {
          const out: string[] = [];
          const walk = (id: string, depth: number) => {
            if (depth > 16) return;
            for (const child of log.childSessions(id)) {
              const state = child.code ?? (conv.running ? 'running' : 'unfinished');
              const paint = child.code === 'COMPLETED' ? style.green : child.code ? style.red : style.yellow;
              out.push(
                `${'  '.repeat(depth + 1)}${child.id}  ${child.mode}  ${paint(state)}  ${inertLine(clip(child.prompt.split('\n')[0] ?? '', 60))}`,
              );
              walk(child.id, depth + 1);
            }
          };
          walk(root, 0);
          return out;
        }) ?? [];
      screen.lines(
        lines.length ? [style.bold(`subagents of ${root}`), ...lines] : ['no subagents in this session'],
      );
      return;
    }
    case 'memory': {
      // the project's memory: the newest items, or those a search finds (model-written ones are marked)
      const [{ openMemory }, { injectedLine }] = await Promise.all([
        import('../memory/open.js'),
        import('../memory/inject.js'),
      ]);
      const m = openMemory({ dir: conv.cwd, config: conv.config });
      try {
        const items = arg
          ? (await m.memory.search(arg, 10)).map((h) => h.item)
          : m.memory.list({ limit: 10 });
        const head = arg ? `memory matching "${inertLine(arg)}"` : 'newest memory items';
        screen.lines(
          items.length
            ? [
                style.bold(`${head} (${m.project.key})`),
                ...items.map((i) => `  ${i.id.slice(0, 8)}  ${inertLine(injectedLine(i).slice(2))}`),
              ]
            : [
                arg
                  ? 'nothing remembered matches'
                  : 'nothing remembered for this project yet (keel memory add TEXT)',
              ],
        );
      } finally {
        m.close();
      }
      return;
    }
    case 'exit':
      screen.exit();
      return;
  }
}
