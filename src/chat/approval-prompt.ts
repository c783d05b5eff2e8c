/** The full-screen chat's questions: an approval (the file and its diff, or the command; y / n / a / e) and a yes/no. */
import {
  type Component,
  type Focusable,
  Input,
  matchesKey,
  type TUI,
  truncateToWidth,
} from '@mariozechner/pi-tui';
import { inertLine } from '../cli/inert.js';
import type { ApprovalChoice, ApprovalRequest } from './approver.js';
import { toolHeadline } from './describe.js';
import { colorDiff } from './diff.js';
import { color as style } from './style.js';

/** The question a session asks: the file and its diff, or the exact command; y / n / a / e. */
export class ApprovalPrompt implements Component, Focusable {
  focused = false;
  private explaining: Input | undefined;
  constructor(
    private readonly req: ApprovalRequest,
    private readonly answer: (choice: ApprovalChoice) => void,
    private readonly tui: TUI,
  ) {}
  handleInput(data: string): void {
    if (this.explaining) {
      if (matchesKey(data, 'escape')) {
        this.explaining = undefined;
      } else this.explaining.handleInput(data);
      this.tui.requestRender();
      return;
    }
    const key = data.toLowerCase();
    if (key === 'y') this.answer({ kind: 'yes' });
    else if (key === 'n') this.answer({ kind: 'no' });
    else if (key === 'a') this.answer({ kind: 'always' });
    else if (key === 'e') {
      const input = new Input();
      input.focused = true;
      input.onSubmit = (text) => this.answer({ kind: 'explain', message: text.trim() || 'no' });
      this.explaining = input;
      this.tui.requestRender();
    }
  }
  render(width: number): string[] {
    const r = this.req;
    const what =
      r.kind === 'shell'
        ? `run ${style.bold(inertLine(r.command ?? ''))}${r.sandboxed === false ? style.red(' (outside the sandbox)') : ''}`
        : r.kind === 'write'
          ? `change ${style.bold(inertLine(r.path ?? ''))}`
          : undefined;
    const lines = [
      style.yellow(
        what
          ? `╭─ keel asks: ${inertLine(r.tool)} wants to ${what}`
          : `╭─ keel asks: ${toolHeadline(r.tool, r.args)}: ${inertLine(r.reason)}`,
      ),
      ...(r.kind !== 'hook' && r.reason ? [style.yellow('│ ') + style.dim(inertLine(r.reason))] : []),
    ];
    const diff = r.diff ? colorDiff(r.diff.split('\n'), style) : [];
    for (const d of diff.slice(0, 30)) lines.push(`${style.yellow('│ ')}${d}`);
    if (diff.length > 30) lines.push(`${style.yellow('│ ')}${style.dim(`… ${diff.length - 30} more lines`)}`);
    if (this.explaining) {
      lines.push(style.yellow('╰─ tell the model why not (Enter sends, Esc goes back):'));
      lines.push(...this.explaining.render(width));
    } else
      lines.push(
        style.yellow('╰─ ') +
          `${style.bold('y')} yes · ${style.bold('n')} no · ${style.bold('a')} always for ${inertLine(r.tool)} · ${style.bold('e')} no, and say why`,
      );
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
