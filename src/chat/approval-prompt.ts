/**
 * The full-screen chat's questions: an approval (the file and its diff, or the command) answered with
 * a typed word and Enter, and a yes/no.
 */
import {
  type Component,
  type Focusable,
  Input,
  matchesKey,
  type TUI,
  truncateToWidth,
} from '@mariozechner/pi-tui';
import { inertLine } from '../term/inert.js';
import type { ApprovalChoice, ApprovalRequest } from './approver.js';
import { toolHeadline } from './describe.js';
import { colorDiff } from './diff.js';
import { color as style } from './style.js';

/** Keys that arrive this soon after a question takes the keyboard were typed for something else: dropped. */
export const ANSWER_GRACE_MS = 750;

/**
 * The question a session asks: the file and its diff, or the exact command. Keys typed for a message
 * must never answer it: the chat gives it the keyboard only once the editor holds no unsent text, it
 * drops keys for a moment after that, and every answer is a word and Enter — `y`, `n`, `e` (no, and
 * say why) or `always` spelled out; anything else answers nothing.
 */
export class ApprovalPrompt implements Component, Focusable {
  private hasFocus = false;
  /** When keys start to count (set as the prompt takes the keyboard). */
  private armedAt = Number.POSITIVE_INFINITY;
  private readonly typed = new Input();
  private explaining: Input | undefined;
  private note = '';
  constructor(
    private readonly req: ApprovalRequest,
    private readonly answer: (choice: ApprovalChoice) => void,
    private readonly tui: TUI,
  ) {
    this.typed.onSubmit = (value) => this.submit(value);
  }
  get focused(): boolean {
    return this.hasFocus;
  }
  set focused(on: boolean) {
    if (on && !this.hasFocus) {
      this.armedAt = Date.now() + ANSWER_GRACE_MS;
      // show the prompt's answer line once keys count
      setTimeout(() => this.tui.requestRender(), ANSWER_GRACE_MS + 20).unref();
    }
    this.hasFocus = on;
    this.typed.focused = on && !this.explaining;
    if (this.explaining) this.explaining.focused = on;
  }
  private armed(): boolean {
    return this.hasFocus && Date.now() >= this.armedAt;
  }
  handleInput(data: string): void {
    if (!this.armed()) return;
    if (this.explaining) {
      if (matchesKey(data, 'escape')) {
        this.explaining = undefined;
        this.typed.focused = this.hasFocus;
      } else this.explaining.handleInput(data);
    } else this.typed.handleInput(data);
    this.tui.requestRender();
  }
  private submit(value: string): void {
    const word = value.trim().toLowerCase();
    this.typed.setValue('');
    const choice: ApprovalChoice | undefined =
      word === 'y' || word === 'yes'
        ? { kind: 'yes' }
        : word === 'n' || word === 'no'
          ? { kind: 'no' }
          : word === 'always'
            ? { kind: 'always' }
            : undefined;
    if (choice) {
      this.answer(choice);
      return;
    }
    if (word === 'e') {
      const input = new Input();
      input.focused = true;
      input.onSubmit = (text) => this.answer({ kind: 'explain', message: text.trim() || 'no' });
      this.explaining = input;
      this.typed.focused = false;
      this.note = '';
      return;
    }
    this.note = word ? `"${inertLine(value.trim()).slice(0, 40)}" is not an answer` : 'type an answer';
  }
  render(width: number): string[] {
    const r = this.req;
    const what =
      r.kind === 'shell'
        ? `run ${style.bold(inertLine(r.command ?? ''))}${r.sandboxed === false ? style.red(' (outside the sandbox)') : ''}`
        : r.kind === 'write'
          ? `change ${style.bold(inertLine(r.path ?? ''))}`
          : undefined;
    const bar = style.yellow('│ ');
    const lines = [
      style.yellow(
        what
          ? `╭─ keel asks: ${inertLine(r.tool)} wants to ${what}`
          : `╭─ keel asks: ${toolHeadline(r.tool, r.args)}: ${inertLine(r.reason)}`,
      ),
      ...(r.kind !== 'hook' && r.reason ? [bar + style.dim(inertLine(r.reason))] : []),
    ];
    const diff = r.diff ? colorDiff(r.diff.split('\n'), style) : [];
    for (const d of diff.slice(0, 30)) lines.push(`${bar}${d}`);
    if (diff.length > 30) lines.push(`${bar}${style.dim(`… ${diff.length - 30} more lines`)}`);
    if (!this.hasFocus) {
      lines.push(
        style.yellow('╰─ ') +
          style.dim('your message is not sent: Enter sends it (or clear it), then answer here'),
      );
    } else if (this.explaining) {
      lines.push(style.yellow('╰─ tell the model why not (Enter sends, Esc goes back):'));
      lines.push(...this.explaining.render(width));
    } else if (!this.armed()) {
      lines.push(style.yellow('╰─ ') + style.dim('…'));
    } else {
      lines.push(
        `${style.yellow('├─ ')}${style.bold('y')} yes · ${style.bold('n')} no · ${style.bold('always')} for ${inertLine(r.tool)} · ${style.bold('e')} no, and say why · then Enter${this.note ? `  ${style.red(this.note)}` : ''}`,
      );
      lines.push(...this.typed.render(Math.max(1, width - 3)).map((l) => style.yellow('╰─ ') + l));
    }
    return lines.map((l) => truncateToWidth(l, width));
  }
  invalidate(): void {}
}

/** A yes/no question of keel's own (or a hook's, made inert): y or n. */
export class YesNo implements Component, Focusable {
  focused = false;
  constructor(
    private readonly question: string,
    private readonly answer: (yes: boolean) => void,
  ) {}
  handleInput(data: string): void {
    if (data.toLowerCase() === 'y') this.answer(true);
    else if (data.toLowerCase() === 'n' || matchesKey(data, 'enter') || matchesKey(data, 'escape'))
      this.answer(false);
  }
  render(width: number): string[] {
    return [truncateToWidth(`${style.yellow('? ')}${this.question} ${style.dim('[y/N]')}`, width)];
  }
  invalidate(): void {}
}
