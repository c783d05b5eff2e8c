/**
 * The full-screen transcript: user messages, streamed answers as markdown, reasoning dimmed and
 * folded, tool calls on one line with the gate's decision and the outcome, a coloured diff for each
 * write. All model and tool text is made inert before markdown or colour touches it.
 */
import {
  type Component,
  Container,
  Markdown,
  type MarkdownTheme,
  Text,
  truncateToWidth,
  wrapTextWithAnsi,
} from '@mariozechner/pi-tui';
import type { SessionEvent } from '../agent/events.js';
import { cutOffSentence } from '../agent/terminal.js';
import { highlightLines } from '../term/highlight.js';
import { inert, inertLine } from '../term/inert.js';
import { TurnCounter } from '../term/turns.js';
import { AgentProgress } from './agent-progress.js';
import { clip, decisionWords, diffFor, outcomeWords, tokens, toolHeadline } from './describe.js';
import { colorDiff, fileDiff } from './diff.js';
import { color as style } from './style.js';
import { TurnFooter } from './turn-footer.js';

const theme: MarkdownTheme = {
  heading: (s) => style.bold(style.cyan(s)),
  link: (s) => style.cyan(s),
  linkUrl: (s) => style.dim(s),
  code: (s) => style.yellow(s),
  codeBlock: (s) => s,
  codeBlockBorder: (s) => style.dim(s),
  // a fence that names a language keel colours (the text is inert already, and made so again there)
  highlightCode: (code, lang) => highlightLines(code, lang) ?? code.split('\n'),
  quote: (s) => style.italic(s),
  quoteBorder: (s) => style.dim(s),
  hr: (s) => style.dim(s),
  listBullet: (s) => style.cyan(s),
  bold: (s) => style.bold(s),
  italic: (s) => style.italic(s),
  strikethrough: (s) => s,
  underline: (s) => s,
};

/** Lines a folded block shows before "… N more". */
const FOLDED = 12;
const EXPANDED = 400;
/** Lines of a running command's output shown while it runs. */
const LIVE_LINES = 5;

/** A component that renders once per width and content version. */
abstract class Cached implements Component {
  private width = -1;
  private lines: string[] = [];
  protected dirty = true;
  protected abstract build(width: number): string[];
  render(width: number): string[] {
    if (this.dirty || width !== this.width) {
      this.lines = this.build(width).map((l) => truncateToWidth(l, width));
      this.width = width;
      this.dirty = false;
    }
    return this.lines;
  }
  invalidate(): void {
    this.dirty = true;
  }
}

class ReasoningBlock extends Cached {
  text = '';
  constructor(private readonly folding: { expanded: boolean }) {
    super();
  }
  add(chunk: string): void {
    this.text += inert(chunk);
    this.dirty = true;
  }
  protected build(width: number): string[] {
    const lines = this.text.trim().split('\n');
    if (!this.folding.expanded)
      return [
        style.dim(
          style.italic(` ▸ thinking · ${lines.length} line${lines.length === 1 ? '' : 's'} (Ctrl+O)`),
        ),
      ];
    return [
      style.dim(' ▾ thinking'),
      ...lines.flatMap((l) =>
        wrapTextWithAnsi(l, Math.max(10, width - 3)).map((w) => style.dim(style.italic(`   ${w}`))),
      ),
    ];
  }
}

class ToolBlock extends Cached {
  private decision: string | undefined;
  private denied = false;
  private outcome: string | undefined;
  private failed = false;
  private output: string[] = [];
  private diff: string[] = [];
  private ms: number | undefined;
  constructor(
    private headline: string,
    private readonly folding: { expanded: boolean },
  ) {
    super();
  }
  private tail: string[] = [];
  /** Output of a call still running: its last lines, shown until the result replaces them. */
  live(text: string): void {
    const joined = (this.tail.join('\n') + text).split('\n').slice(-LIVE_LINES - 1);
    this.tail = joined;
    this.dirty = true;
  }
  rename(headline: string): void {
    this.headline = headline;
    this.dirty = true;
  }
  gate(event: Extract<SessionEvent, { type: 'gate_decision' }>): void {
    this.decision = decisionWords(event);
    this.denied = event.decision === 'deny';
    this.dirty = true;
  }
  result(event: Extract<SessionEvent, { type: 'tool_result' }>, diff: string[]): void {
    this.outcome = outcomeWords(event);
    this.failed = event.is_error;
    this.ms = event.duration_ms;
    this.output = event.output.split('\n').map((l) => inertLine(l.replace(/\t/g, '    ')));
    this.diff = colorDiff(diff, style);
    this.tail = [];
    this.dirty = true;
  }
  protected build(width: number): string[] {
    const mark = this.denied
      ? style.red('✗')
      : this.outcome === undefined
        ? style.yellow('●')
        : this.failed
          ? style.red('●')
          : style.green('●');
    const parts = [this.decision && (this.denied ? style.red(this.decision) : style.dim(this.decision))];
    if (this.outcome) parts.push(this.failed ? style.red(this.outcome) : this.outcome);
    if (this.ms !== undefined) parts.push(style.dim(`${this.ms} ms`));
    const head = `${mark} ${style.bold(this.headline)}`;
    const status = parts.filter(Boolean).join(style.dim(' · '));
    const lines = [head, ...(status ? [`  ${style.dim('└')} ${status}`] : [])];
    const limit = this.folding.expanded ? EXPANDED : FOLDED;
    const body = (rows: string[]) => {
      for (const row of rows.slice(0, limit)) lines.push(`    ${row}`);
      if (rows.length > limit) lines.push(style.dim(`    … ${rows.length - limit} more lines (Ctrl+O)`));
    };
    if (this.outcome === undefined)
      for (const row of this.tail.filter((l) => l !== '').slice(-LIVE_LINES))
        lines.push(`    ${style.dim(inertLine(row.replace(/\t/g, '    ')))}`);
    if (this.diff.length) body(this.diff);
    else if (this.folding.expanded && this.output.length) body(this.output.map((l) => style.dim(l)));
    return lines.map((l) => truncateToWidth(l, width));
  }
}

/** A subagent at work: its counts and the call it is on; one line with its outcome once it ends. */
class AgentBlock extends Cached {
  constructor(readonly progress: AgentProgress) {
    super();
  }
  see(event: SessionEvent): void {
    if (this.progress.see(event)) this.dirty = true;
  }
  protected build(): string[] {
    const p = this.progress;
    const name = style.bold(`agent ${inertLine(p.name)}`);
    const done = p.folded();
    if (done) {
      const ok = done.code === 'COMPLETED';
      const mark = ok ? style.green('◆') : done.code === 'CANCELLED' ? style.dim('◆') : style.red('◆');
      return [`${mark} ${name} ${ok ? done.code : style.red(done.code)} ${style.dim(`· ${done.text}`)}`];
    }
    const lines = [`${style.yellow('◇')} ${name} ${style.dim(`working · ${p.counts()}`)}`];
    const now = p.now();
    if (now) {
      const mark =
        now.outcome === undefined ? style.yellow('●') : now.failed ? style.red('●') : style.green('●');
      lines.push(
        `  ${style.dim('└')} ${mark} ${now.headline}${now.outcome ? style.dim(` · ${now.outcome}`) : ''}`,
      );
    }
    return lines;
  }
}

/** The conversation so far, as components; events come live or replayed from the log. */
export class Transcript extends Container {
  readonly folding = { expanded: false };
  private answer: Markdown | undefined;
  private answerText = '';
  private thinking: ReasoningBlock | undefined;
  private readonly tools = new Map<string, ToolBlock>();
  /** The subagents at work or done, by their session. */
  private readonly agents = new Map<string, AgentBlock>();
  private pending: string | undefined;
  /** Each call's arguments as the model sent them, for a call the gate stops before it starts. */
  private readonly calls = new Map<string, unknown>();
  private readonly footer = new TurnFooter();
  /** The turns as numbered on screen (`/rewind N` counts the same way). */
  private turns = new TurnCounter();

  constructor(private readonly root: string) {
    super();
  }

  /**
   * The person's message that opens turn `n` (default: the next), shown as typed (made inert); `sent`:
   * the text the log will hold (with @files attached).
   */
  user(text: string, sent = text, n = this.turns.count + 1): void {
    this.endAnswer();
    this.pending = sent;
    const shown = inert(text).split('\n').slice(0, 20).join('\n');
    this.addChild(new Text(style.dim(`${n} `) + style.bold(style.cyan('› ')) + shown, 0, 0));
  }

  /** An empty screen for another session (/clear, /rewind, /resume): its turns are numbered from 1. */
  restart(clear: boolean): void {
    if (clear) this.clear();
    this.endAnswer();
    this.tools.clear();
    this.agents.clear();
    this.calls.clear();
    this.pending = undefined;
    this.turns = new TurnCounter();
  }

  text(chunk: string): void {
    if (!this.answer) {
      this.answerText = '';
      this.answer = new Markdown('', 1, 0, theme);
      this.addChild(this.answer);
    }
    this.answerText += chunk;
    this.answer.setText(inert(this.answerText));
  }

  reasoning(chunk: string): void {
    if (!this.thinking) {
      this.thinking = new ReasoningBlock(this.folding);
      this.addChild(this.thinking);
    }
    this.thinking.add(chunk);
  }

  toolOutput(callId: string, text: string): void {
    this.tools.get(callId)?.live(text);
  }

  /** A subagent's event, live: its block shows where it started and changes in place as it works. */
  agent(name: string, sessionId: string, event: SessionEvent): void {
    let block = this.agents.get(sessionId);
    if (!block) {
      this.endAnswer();
      block = new AgentBlock(new AgentProgress(name, sessionId));
      this.agents.set(sessionId, block);
      this.addChild(block);
    }
    block.see(event);
  }

  notice(text: string, kind: 'info' | 'error' | 'ok' = 'info'): void {
    const paint = kind === 'error' ? style.red : kind === 'ok' ? style.green : style.dim;
    // notices carry error messages, and those can quote a server's or a model's words
    this.addChild(new Text(paint(inertLine(text)), 1, 0));
  }

  /** Lines from a command (already styled, already inert). */
  lines(lines: string[]): void {
    this.addChild(new Text(lines.join('\n'), 1, 0));
  }

  toggle(): void {
    this.folding.expanded = !this.folding.expanded;
    this.invalidate();
  }

  /** A block ends where the model's answer of that round ends. */
  private endAnswer(): void {
    this.answer = undefined;
    this.thinking = undefined;
  }

  event(event: SessionEvent, live: boolean): void {
    switch (event.type) {
      case 'user_message': {
        const opens = this.turns.see(event.type);
        if (live && event.text === this.pending) return;
        if (live || !opens) {
          this.endAnswer();
          this.addChild(
            new Text(`${style.magenta('↳ steering delivered: ')}${inertLine(clip(event.text, 200))}`, 1, 0),
          );
          return;
        }
        this.user(event.text, event.text, this.turns.count);
        return;
      }
      case 'session_resume':
        this.turns.see(event.type);
        return;
      case 'assistant_message': {
        for (const call of event.tool_calls) this.calls.set(call.id, parseArgs(call.arguments));
        if (live) {
          // the recorded text is the answer without reasoning tags or recovered tool calls
          if (this.answer) {
            if (event.text.trim()) this.answer.setText(inert(event.text));
            else this.removeChild(this.answer);
          } else if (event.text.trim()) this.text(event.text);
        } else {
          if (event.reasoning) this.reasoning(event.reasoning);
          if (event.text.trim()) this.text(event.text);
        }
        this.endAnswer();
        return;
      }
      case 'tool_start': {
        this.endAnswer();
        this.block(event.call_id, event.tool).rename(toolHeadline(event.tool, event.args));
        return;
      }
      case 'gate_decision':
        this.block(event.call_id, event.tool).gate(event);
        return;
      case 'tool_result': {
        // a diff for every write that landed, taken now (when replaying, the files have moved on)
        const diff = diffFor(event, live, this.root, fileDiff);
        this.block(event.call_id, event.tool).result(event, diff);
        return;
      }
      case 'tool_call_invalid':
        this.notice(`✗ ${inertLine(event.tool)}: ${inertLine(clip(event.error, 160))}`, 'error');
        return;
      case 'violation':
        this.notice(
          `✗ ${inertLine(event.tool)} created protected names; keel removed ${event.removed.map(inertLine).join(', ')}`,
          'error',
        );
        return;
      case 'model_retry':
        this.notice(
          `… ${inertLine(clip(event.error, 120))}; retrying in ${(event.delay_ms / 1000).toFixed(1)} s`,
        );
        return;
      case 'model_fallback':
        this.notice(`… ${inertLine(event.from)} failed; falling back to ${inertLine(event.to)}`);
        return;
      case 'compaction':
        this.notice(
          `… compacted the history: ${tokens(event.tokens_before)} -> ${tokens(event.tokens_after)} tokens`,
        );
        return;
      case 'session_fork':
        this.notice(`── forked from ${inertLine(event.from)} at event ${event.at} ──`);
        return;
      case 'session_start':
        this.turns.see(event.type);
        this.footer.reset();
        return;
      case 'session_end': {
        this.endAnswer();
        if (event.finish === 'length') this.notice(cutOffSentence(), 'error');
        const summary = this.footer.line(event);
        if (event.code === 'COMPLETED') this.notice(summary);
        else
          this.notice(
            `${event.code}: ${inertLine(clip(event.reason, 200))} · ${summary}`,
            event.code === 'CANCELLED' ? 'info' : 'error',
          );
        return;
      }
      default:
        return;
    }
  }

  private block(callId: string, tool: string): ToolBlock {
    let block = this.tools.get(callId);
    if (!block) {
      this.endAnswer();
      block = new ToolBlock(toolHeadline(tool, this.calls.get(callId)), this.folding);
      this.tools.set(callId, block);
      this.addChild(block);
    }
    return block;
  }
}

function parseArgs(raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    return {};
  }
}
