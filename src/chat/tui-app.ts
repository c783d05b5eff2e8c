/**
 * The full-screen chat on pi-tui: the transcript above, a status line and the input below, an
 * approval prompt in between when the session asks. Differential rendering keeps the screen still
 * while answers stream.
 */
import {
  type Component,
  Editor,
  Loader,
  matchesKey,
  ProcessTerminal,
  Text,
  TUI,
  truncateToWidth,
} from '@mariozechner/pi-tui';
import type { SessionOutcome } from '../agent/session.js';
import type { ImageAttachment } from '../model/types.js';
import { approvedPluginCommands, PluginCommandError, pluginPrompt } from '../skills/plugin-commands.js';
import { whenHighlighterLoads } from '../term/highlight.js';
import { inertLine } from '../term/inert.js';
import { ApprovalPrompt, YesNo } from './approval-prompt.js';
import type { ApprovalChoice } from './approver.js';
import type { ChatSetup } from './chat-command.js';
import { runCommand, type Screen } from './commands.js';
import { type ChatView, Conversation } from './conversation.js';
import { ChatCompletions } from './file-picker.js';
import { InputHistory } from './input-history.js';
import { attachMentions, MentionError } from './mentions.js';
import { COMMANDS, parseInput } from './slash.js';
import { statusLine } from './status-line.js';
import { color as style } from './style.js';
import { Transcript } from './transcript.js';

/** A line of keel's own text that always fits. */
class Line implements Component {
  constructor(private text: () => string) {}
  render(width: number): string[] {
    return [truncateToWidth(this.text(), width)];
  }
  invalidate(): void {}
}

/** Run the full-screen chat until the person leaves; returns the exit status. */
export async function runTuiChat(setup: ChatSetup): Promise<number> {
  const terminal = new ProcessTerminal();
  const tui = new TUI(terminal);
  const transcript = new Transcript(setup.cwd);
  // a code block is shown plain until highlight.js has loaded (on the first fence that names a language)
  whenHighlighterLoads(() => {
    transcript.invalidate();
    tui.requestRender();
  });
  const history = new InputHistory(setup.cwd);
  const editor = new Editor(tui, {
    borderColor: (s) => style.dim(s),
    selectList: {
      selectedPrefix: (s) => style.cyan(s),
      selectedText: (s) => style.cyan(s),
      description: (s) => style.dim(s),
      scrollInfo: (s) => style.dim(s),
      noMatch: (s) => style.dim(s),
    },
  });
  editor.setAutocompleteProvider(
    new ChatCompletions(
      [
        ...COMMANDS.map((c) => ({ name: c.name, description: c.summary })),
        // the approved plugins' commands, as they stand when the chat starts
        ...(await approvedPluginCommands()).map((c) => ({
          name: `${c.plugin}:${c.name}`,
          ...(c.description ? { description: c.description } : {}),
        })),
      ],
      setup.cwd,
    ),
  );
  for (const past of history.all()) editor.addToHistory(past);

  let finish: (code: number) => void = () => {};
  const done = new Promise<number>((resolve) => {
    finish = resolve;
  });
  const loader = new Loader(
    tui,
    (s) => style.cyan(s),
    (s) => style.dim(s),
    'working',
  );
  const slot = new ContainerSlot();
  let started = 0;
  let interrupts = 0;

  // a question on screen, and how to answer it "no" when the turn stops under it
  let cancelAsk: (() => void) | undefined;
  // a question that waits for the keyboard: the editor keeps it while it holds unsent text, so keys
  // typed for a message never answer a question that appeared mid-word
  let waiting: Component | undefined;
  const handOver = () => {
    if (!waiting || editor.getText()) return;
    tui.setFocus(waiting);
    waiting = undefined;
    tui.requestRender();
  };
  const ask = <T>(make: (answer: (value: T) => void) => Component, no: T): Promise<T> =>
    new Promise<T>((resolve) => {
      const answer = (value: T) => {
        cancelAsk = undefined;
        waiting = undefined;
        slot.set(undefined);
        tui.setFocus(editor);
        tui.requestRender();
        resolve(value);
      };
      cancelAsk = () => answer(no);
      const prompt = make(answer);
      slot.set(prompt);
      waiting = prompt;
      handOver();
      tui.requestRender();
    });

  const view: ChatView = {
    turnStart: () => {
      started = Date.now();
      loader.setMessage('working · Ctrl+C stops');
      slot.loading(loader);
      loader.start();
    },
    text: (chunk) => {
      transcript.text(chunk);
      tui.requestRender();
    },
    reasoning: (chunk) => {
      transcript.reasoning(chunk);
      tui.requestRender();
    },
    toolOutput: (callId, text) => {
      transcript.toolOutput(callId, text);
      tui.requestRender();
    },
    event: (event, live) => {
      transcript.event(event, live);
      tui.requestRender();
    },
    agent: (name, id, event) => {
      transcript.agent(name, id, event);
      tui.requestRender();
    },
    turnEnd: (_outcome: SessionOutcome | undefined) => {
      loader.stop();
      slot.loading(undefined);
      tui.requestRender();
    },
    notice: (text, kind) => {
      transcript.notice(text, kind);
      tui.requestRender();
    },
    ask: (req) => ask<ApprovalChoice>((answer) => new ApprovalPrompt(req, answer, tui), { kind: 'no' }),
    confirm: (question) => ask<boolean>((answer) => new YesNo(inertLine(question), answer), false),
    status: () => tui.requestRender(),
  };
  const conv = new Conversation({ loaded: setup.loaded, cwd: setup.cwd, mode: setup.mode, view });

  const screen: Screen = {
    style,
    lines: (lines) => {
      transcript.lines(lines);
      tui.requestRender();
    },
    error: (text) => view.notice(text, 'error'),
    confirm: (question) => view.confirm(question),
    reopened: async (id) => {
      const found = await setup.read(id);
      if (!found) return view.notice(`no session matches "${inertLine(id)}"`, 'error');
      transcript.restart(false);
      transcript.notice(`── session ${found.row.id} (${found.row.mode}) ──`);
      conv.open(found.row, found.events, !setup.modeGiven);
      tui.requestRender();
    },
    sending: (shown, sent) => {
      transcript.user(shown, sent);
      tui.requestRender();
    },
    cleared: () => {
      transcript.restart(true);
      // a full redraw: the old session's lines leave the screen and its scrollback
      tui.requestRender(true);
    },
    exit: () => void leave(),
  };

  const leave = async () => {
    // the log is finished before the process goes: a running turn ends CANCELLED
    const closing = conv.close();
    cancelAsk?.();
    await closing;
    finish(0);
  };

  let previous = '';
  let current = '';
  editor.onChange = (text) => {
    previous = current;
    current = text;
    interrupts = 0;
    // the message was sent or cleared: a waiting question takes the keyboard now
    if (!text) handOver();
  };
  editor.onSubmit = (submitted) => {
    // the editor trims; the text as typed (before its clear) says whether it began with a space
    const typed = current === '' ? previous : current;
    const parsed = parseInput(typed.startsWith(' ') ? ` ${submitted}` : submitted);
    if (parsed.kind === 'empty') return;
    history.add(submitted);
    editor.addToHistory(submitted);
    if (parsed.kind === 'unknown') {
      view.notice(
        `unknown command /${inertLine(parsed.word)}${parsed.suggestion ? `; did you mean /${parsed.suggestion}?` : ''} (see /help; start with a space to send it as text)`,
        'error',
      );
      return;
    }
    if (parsed.kind === 'command') {
      void runCommand(parsed.name, parsed.arg, conv, screen).catch((err) =>
        view.notice(`/${parsed.name}: ${inertLine(String((err as Error).message ?? err))}`, 'error'),
      );
      return;
    }
    if (parsed.kind === 'plugin') {
      // a plugin's command is a prompt like any typed one: the mode and the gate decide what it may do
      void pluginPrompt(parsed.plugin, parsed.command, parsed.args).then(
        (prompt) => {
          if (!conv.running) transcript.user(submitted, prompt);
          conv.send(prompt);
          tui.requestRender();
        },
        (err) =>
          view.notice(
            inertLine(
              err instanceof PluginCommandError
                ? err.message
                : `/${parsed.plugin}:${parsed.command}: ${String((err as Error).message ?? err)}`,
            ),
            'error',
          ),
      );
      return;
    }
    let message: string;
    let images: ImageAttachment[];
    try {
      const attached = attachMentions(parsed.text, setup.cwd);
      message = attached.text;
      images = attached.images;
      if (!conv.running && !images.length) transcript.user(parsed.text, message);
      if (attached.files.length) view.notice(`attached ${attached.files.map(inertLine).join(', ')}`);
    } catch (err) {
      if (err instanceof MentionError) return view.notice(inertLine(err.message), 'error');
      throw err;
    }
    if (images.length) {
      // the server is asked first whether the model reads images: nothing is shown as sent before that
      void conv
        .sendWithImages(message, images, () => transcript.user(parsed.text, message))
        .then(() => tui.requestRender());
      return;
    }
    conv.send(message);
    tui.requestRender();
  };

  tui.addInputListener((data) => {
    if (matchesKey(data, 'ctrl+c')) {
      interrupts++;
      if (conv.running) {
        if (interrupts >= 2) void leave();
        else if (conv.stop()) {
          // a question open when the turn stops is a no: the loop must not wait on it
          cancelAsk?.();
          view.notice('stopping the turn (Ctrl+C again to leave)');
        }
        return { consume: true };
      }
      if (editor.getText() && interrupts === 1) {
        editor.setText('');
        return { consume: true };
      }
      if (interrupts >= 2) void leave();
      else view.notice('Ctrl+C again to leave (or /exit)');
      return { consume: true };
    }
    if (matchesKey(data, 'ctrl+d') && !editor.getText() && !slot.asking()) {
      void leave();
      return { consume: true };
    }
    // pi-tui leaves the completion list up when a kill key takes away the text it completes
    if (
      editor.isShowingAutocomplete() &&
      (matchesKey(data, 'ctrl+u') || matchesKey(data, 'ctrl+w') || matchesKey(data, 'ctrl+k'))
    ) {
      editor.handleInput(data);
      editor.handleInput('\x1b');
      tui.requestRender();
      return { consume: true };
    }
    if (matchesKey(data, 'ctrl+o')) {
      transcript.toggle();
      tui.requestRender();
      return { consume: true };
    }
    return undefined;
  });

  const where = `${inertLine(setup.cwd)}`;
  tui.addChild(new Text(style.dim(`keel chat · ${where} · /help for commands`), 0, 0));
  tui.addChild(transcript);
  tui.addChild(slot);
  tui.addChild(editor);
  tui.addChild(
    new Line(() => {
      const elapsed = conv.running && started ? ` · ${((Date.now() - started) / 1000).toFixed(0)}s` : '';
      return statusLine(conv, style) + style.dim(elapsed);
    }),
  );
  tui.setFocus(editor);

  for (const warning of setup.loaded.warnings) transcript.notice(`warning: ${inertLine(warning)}`, 'error');
  if (setup.resume) await screen.reopened(setup.resume);
  tui.start();
  setup.ready();
  try {
    return await done;
  } finally {
    loader.stop();
    tui.stop();
    await terminal.drainInput(200, 20).catch(() => {});
  }
}

/** The space between the transcript and the input: the spinner, or a question being asked. */
class ContainerSlot implements Component {
  private prompt: Component | undefined;
  private spinner: Component | undefined;
  set(prompt: Component | undefined): void {
    this.prompt = prompt;
  }
  loading(spinner: Component | undefined): void {
    this.spinner = spinner;
  }
  asking(): boolean {
    return this.prompt !== undefined;
  }
  render(width: number): string[] {
    return [...(this.spinner?.render(width) ?? []), ...(this.prompt?.render(width) ?? [])];
  }
  invalidate(): void {
    this.prompt?.invalidate?.();
    this.spinner?.invalidate?.();
  }
}
