/**
 * The plain chat: line-based, for NO_COLOR, TERM=dumb and pipes. One line per message or tool call;
 * no escape codes at all unless stdout is a colour terminal. Piped lines are turns, one after
 * another; on a terminal, a line typed during a turn steers it.
 */
import { createInterface } from 'node:readline';
import type { SessionEvent } from '../agent/events.js';
import { cutOffSentence } from '../agent/terminal.js';
import { PluginCommandError, pluginPrompt } from '../skills/plugin-commands.js';
import { inert, inertLine } from '../term/inert.js';
import { TurnCounter } from '../term/turns.js';
import { AgentProgress } from './agent-progress.js';
import type { ApprovalChoice, ApprovalRequest } from './approver.js';
import type { ChatSetup } from './chat-command.js';
import { runCommand, type Screen } from './commands.js';
import { type ChatView, Conversation } from './conversation.js';
import { clip, decisionWords, diffFor, outcomeWords, tokens, toolHeadline } from './describe.js';
import { colorDiff, fileDiff } from './diff.js';
import { InputHistory } from './input-history.js';
import { attachMentions, MentionError } from './mentions.js';
import { parseInput } from './slash.js';
import { statusLine } from './status-line.js';
import { color, colorAllowed, noColor } from './style.js';
import { TurnFooter } from './turn-footer.js';

export async function runPlainChat(setup: ChatSetup): Promise<number> {
  const style = colorAllowed(process.env, process.stdout) ? color : noColor;
  const interactive = process.stdin.isTTY === true;
  const out = (line: string) => process.stdout.write(`${line}\n`);
  const history = new InputHistory(setup.cwd);
  const rl = createInterface({
    input: process.stdin,
    output: process.stdout,
    terminal: interactive && process.stdout.isTTY === true,
    history: interactive ? [...history.all()].reverse() : [],
  });
  // a question waiting for the next line (an approval, a yes/no)
  let pending: ((line: string) => void) | undefined;
  const question = (text: string): Promise<string> =>
    new Promise((resolve) => {
      out(text);
      pending = resolve;
      rl.setPrompt('? ');
      rl.prompt();
    });

  let midLine = false;
  const endLine = () => {
    if (midLine) process.stdout.write('\n');
    midLine = false;
  };
  const gates = new Map<string, string>();
  const footer = new TurnFooter();
  const args = new Map<string, unknown>();
  const agents = new Map<string, AgentProgress>();
  const view: ChatView = {
    turnStart: () => {},
    text: (chunk) => {
      process.stdout.write(inert(chunk));
      midLine = !chunk.endsWith('\n');
    },
    reasoning: () => {},
    event: (event, live) => {
      for (const line of linesFor(event, live)) {
        endLine();
        out(line);
      }
    },
    agent: (name, id, event) => {
      // a subagent's calls as they come out, and one line when it ends
      const progress = agents.get(id) ?? new AgentProgress(name, id);
      agents.set(id, progress);
      if (!progress.see(event)) return;
      const label = `agent ${inertLine(name)}`;
      const done = progress.folded();
      const now = progress.now();
      const line = done
        ? `◆ ${label} ${done.code} · ${done.text}`
        : event.type === 'tool_result' && now?.outcome
          ? `  ${label} › ● ${now.headline} · ${now.outcome}`
          : undefined;
      if (!line) return;
      endLine();
      out(done && done.code !== 'COMPLETED' ? style.red(line) : style.dim(line));
    },
    turnEnd: () => {
      endLine();
      if (interactive) rl.prompt();
    },
    notice: (text, kind) => {
      endLine();
      // notices carry error messages, and those can quote a server's or a model's words
      const line = inertLine(text);
      out(kind === 'error' ? style.red(`error: ${line}`) : style.dim(line));
    },
    ask: async (req: ApprovalRequest): Promise<ApprovalChoice> => {
      endLine();
      if (!interactive) {
        out(
          style.red(
            `keel asks: ${inertLine(req.tool)} ${inertLine(req.reason)}: no (stdin is not a terminal)`,
          ),
        );
        return { kind: 'no' };
      }
      const what =
        req.kind === 'shell'
          ? `${inertLine(req.tool)} wants to run: ${inertLine(req.command ?? '')}${req.sandboxed === false ? ' (outside the sandbox)' : ''}`
          : req.kind === 'write'
            ? `${inertLine(req.tool)} wants to change ${inertLine(req.path ?? '')}`
            : `${toolHeadline(req.tool, req.args)}: ${inertLine(req.reason)}`;
      if (req.diff) for (const l of colorDiff(req.diff.split('\n'), style)) out(`  ${l}`);
      const answer = (await question(`keel asks: ${what}  [y]es [n]o always, or type why not`)).trim();
      if (/^y(es)?$/i.test(answer)) return { kind: 'yes' };
      if (/^always$/i.test(answer)) return { kind: 'always' };
      if (/^n(o)?$/i.test(answer) || !answer) return { kind: 'no' };
      return { kind: 'explain', message: answer };
    },
    confirm: async (text) => {
      endLine();
      if (!interactive) return false;
      return /^y(es)?$/i.test((await question(`keel asks: ${inertLine(text)} [y/N]`)).trim());
    },
    status: () => {},
  };

  let turns = new TurnCounter();
  const linesFor = (event: SessionEvent, live: boolean): string[] => {
    switch (event.type) {
      case 'session_resume':
        turns.see(event.type);
        return [];
      case 'user_message': {
        const opens = turns.see(event.type);
        if (live || !opens)
          return event.text === lastSent
            ? []
            : [style.dim(`steering delivered: ${inertLine(clip(event.text, 200))}`)];
        return [`${turns.count} › ${inertLine(clip(event.text, 400))}`];
      }
      case 'assistant_message':
        for (const call of event.tool_calls) args.set(call.id, safeJson(call.arguments));
        if (live) return [];
        return event.text.trim() ? [inert(event.text.trim())] : [];
      case 'gate_decision':
        if (event.decision === 'deny')
          return [
            style.red(`✗ ${toolHeadline(event.tool, args.get(event.call_id))} · ${decisionWords(event)}`),
          ];
        gates.set(event.call_id, decisionWords(event));
        return [];
      case 'tool_result': {
        const head = `● ${toolHeadline(event.tool, args.get(event.call_id))} · ${gates.get(event.call_id) ?? 'allowed'} · ${outcomeWords(event)}`;
        const diff = diffFor(event, live, setup.cwd, fileDiff);
        return [event.is_error ? style.red(head) : head, ...colorDiff(diff, style).map((l) => `  ${l}`)];
      }
      case 'tool_call_invalid':
        return [style.red(`✗ ${inertLine(event.tool)}: ${inertLine(clip(event.error, 160))}`)];
      case 'compaction':
        return [
          style.dim(
            `… compacted the history: ${tokens(event.tokens_before)} -> ${tokens(event.tokens_after)} tokens`,
          ),
        ];
      case 'session_start':
        turns.see(event.type);
        footer.reset();
        return [];
      case 'session_end': {
        const summary = footer.line(event);
        return [
          ...(event.finish === 'length'
            ? [style.red(cutOffSentence(setup.loaded.config.max_output_tokens))]
            : []),
          style.dim(
            event.code === 'COMPLETED'
              ? `(${summary})`
              : `(${event.code}: ${inertLine(clip(event.reason, 160))} · ${summary})`,
          ),
        ];
      }
      default:
        return [];
    }
  };

  const conv = new Conversation({ loaded: setup.loaded, cwd: setup.cwd, mode: setup.mode, view });
  let lastSent: string | undefined;
  let leaving = false;
  let interrupts = 0;
  let finish: (code: number) => void = () => {};
  const done = new Promise<number>((resolve) => {
    finish = resolve;
  });
  const leave = async () => {
    if (leaving) return;
    leaving = true;
    const closing = conv.close();
    const open = pending;
    pending = undefined;
    open?.('');
    await closing;
    rl.close();
    // piped in, the chat is a script: it exits as its last turn did
    finish(interactive ? 0 : conv.lastExit);
  };
  const screen: Screen = {
    style,
    lines: (lines) => {
      endLine();
      for (const l of lines) out(l);
    },
    error: (text) => view.notice(text, 'error'),
    confirm: (q) => view.confirm(q),
    reopened: async (id) => {
      const found = await setup.read(id);
      if (!found) return view.notice(`no session matches "${inertLine(id)}"`, 'error');
      turns = new TurnCounter();
      out(style.dim(`── session ${found.row.id} (${found.row.mode}) ──`));
      conv.open(found.row, found.events, !setup.modeGiven);
    },
    sending: (shown, sent) => {
      lastSent = sent;
      out(`› ${inertLine(shown)}`);
    },
    cleared: () => {
      turns = new TurnCounter();
      out(style.dim('── a new session ──'));
    },
    exit: () => void leave(),
  };

  let buffered = '';
  // piped lines run one after another, in order, even while a turn still runs
  let chain: Promise<void> = Promise.resolve();
  const handle = async (line: string) => {
    if (pending) {
      const answer = pending;
      pending = undefined;
      rl.setPrompt('> ');
      answer(line);
      return;
    }
    interrupts = 0;
    // a trailing backslash goes on with the next line
    if (line.endsWith('\\')) {
      buffered += `${line.slice(0, -1)}\n`;
      return;
    }
    const raw = buffered + line;
    buffered = '';
    if (!interactive) await conv.idle();
    const parsed = parseInput(raw);
    if (parsed.kind === 'empty') {
      if (interactive) rl.prompt();
      return;
    }
    if (interactive) history.add(raw.trim());
    if (parsed.kind === 'unknown') {
      view.notice(
        `unknown command /${inertLine(parsed.word)}${parsed.suggestion ? `; did you mean /${parsed.suggestion}?` : ''} (see /help)`,
        'error',
      );
      if (interactive) rl.prompt();
      return;
    }
    if (parsed.kind === 'command') {
      await runCommand(parsed.name, parsed.arg, conv, screen);
      if (interactive && !leaving) rl.prompt();
      return;
    }
    if (parsed.kind === 'plugin') {
      // a plugin's command is a prompt like any typed one: the mode and the gate decide what it may do
      try {
        const prompt = await pluginPrompt(parsed.plugin, parsed.command, parsed.args);
        if (!conv.running) lastSent = prompt;
        conv.send(prompt);
      } catch (err) {
        if (!(err instanceof PluginCommandError)) throw err;
        view.notice(inertLine(err.message), 'error');
        if (interactive) rl.prompt();
      }
      return;
    }
    try {
      const attached = attachMentions(parsed.text, setup.cwd);
      if (attached.files.length) view.notice(`attached ${attached.files.map(inertLine).join(', ')}`);
      if (attached.images.length) {
        const sent = await conv.sendWithImages(attached.text, attached.images, () => {
          lastSent = attached.text;
        });
        if (!sent && interactive) rl.prompt();
        return;
      }
      if (!conv.running) lastSent = attached.text;
      conv.send(attached.text);
    } catch (err) {
      if (!(err instanceof MentionError)) throw err;
      view.notice(inertLine(err.message), 'error');
      if (interactive) rl.prompt();
    }
  };
  rl.on('line', (line) => {
    if (pending || interactive) void handle(line);
    else chain = chain.then(() => handle(line));
  });
  rl.on('close', () => {
    // end of the piped input: finish what was asked, then leave
    void chain.then(() => conv.idle()).then(() => leave());
  });
  const onInterrupt = () => {
    interrupts++;
    if (interrupts >= 2 || !conv.running) {
      if (interrupts >= 2) return void leave();
      view.notice('Ctrl+C again to leave (or /exit)');
      return;
    }
    conv.stop();
    // an open question is a no when the turn stops
    const open = pending;
    pending = undefined;
    open?.('');
    view.notice('stopping the turn (Ctrl+C again to leave)');
  };
  rl.on('SIGINT', onInterrupt);
  process.on('SIGINT', onInterrupt);

  for (const warning of setup.loaded.warnings) out(style.red(`warning: ${inertLine(warning)}`));
  out(style.dim(`keel chat · ${inertLine(setup.cwd)} · /help for commands`));
  if (setup.resume) await screen.reopened(setup.resume);
  out(statusLine(conv, style));
  rl.setPrompt('> ');
  if (interactive) rl.prompt();
  setup.ready();
  try {
    return await done;
  } finally {
    process.off('SIGINT', onInterrupt);
  }
}

function safeJson(raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    return {};
  }
}
