/**
 * How a session looks in a terminal: the answer on stdout, the work on stderr (each tool call with
 * its gate decision and outcome, a coloured diff for every write, a spinner while the model thinks).
 * Every text from the model, a tool, a hook or a server is made inert before keel adds its colours.
 */
import type { SessionEvent } from '../agent/events.js';
import { inert, inertLine } from '../term/inert.js';

/** Colours and the spinner only on a terminal that shows them, and never under NO_COLOR or TERM=dumb. */
const dumb = process.env.TERM === 'dumb';
const useColor = process.stderr.isTTY === true && !process.env.NO_COLOR && !dumb;
const paint = (open: number, close: number) => (s: string) =>
  useColor ? `\x1b[${open}m${s}\x1b[${close}m` : s;
const dim = paint(2, 22);
const red = paint(31, 39);
const green = paint(32, 39);
const cyan = paint(36, 39);

type ToolResultEvent = Extract<SessionEvent, { type: 'tool_result' }>;

/** One line that says what a tool call was, short enough to scan; the model's arguments cannot break it into lines. */
export function describeCall(tool: string, args: unknown): string {
  const a = (args ?? {}) as { [k: string]: unknown };
  const main = a.path ?? a.pattern ?? a.command ?? a.filter ?? a.task ?? a.name ?? '';
  const text = inertLine(typeof main === 'string' ? main : JSON.stringify(main));
  return `${inertLine(tool)} ${text.length > 100 ? `${text.slice(0, 97)}...` : text}`.trim();
}

/** What a call came to, in a few words: `exit 0`, `3 passed, 1 failed`, `+4 -1`, or its error. */
export function describeOutcome(result: ToolResultEvent): string {
  const o = result.outcome;
  const parts: string[] = [];
  if (result.interrupted) parts.push('interrupted');
  if (o?.timed_out) parts.push('timed out');
  else if (o && 'exit_code' in o) parts.push(o.exit_code === null ? 'killed' : `exit ${o.exit_code}`);
  if (o?.tests) {
    const t = o.tests;
    parts.push(`${t.passed} passed, ${t.failed} failed${t.skipped ? `, ${t.skipped} skipped` : ''}`);
  }
  if (o?.added !== undefined) parts.push(`+${o.added} -${o.removed ?? 0}`);
  if (!parts.length && result.is_error) parts.push(firstLine(result.output.replace(/^Error: /, '')));
  // a read says how much it showed: its numbered lines
  if (!parts.length && result.tool === 'read_file') {
    const shown = result.output.split('\n').filter((l) => /^\s*\d+\t/.test(l)).length;
    if (shown) parts.push(`${shown} line${shown === 1 ? '' : 's'}`);
  }
  if (!parts.length) parts.push('done');
  const secs = result.duration_ms >= 100 ? ` · ${(result.duration_ms / 1000).toFixed(1)} s` : '';
  return `${parts.join(' · ')}${secs}`;
}

/** A unified diff for a person, inert and coloured, cut at `maxLines` with the rest counted. */
export function formatDiff(diff: string, maxLines = 60, indent = '    '): string {
  const lines = diff.split('\n');
  const shown = lines.slice(0, maxLines).map((raw) => {
    const line = inertLine(raw).replace(/\\t/g, '  ');
    if (raw.startsWith('+++') || raw.startsWith('---')) return indent + dim(line);
    if (raw.startsWith('@@')) return indent + cyan(line);
    if (raw.startsWith('+')) return indent + green(line);
    if (raw.startsWith('-')) return indent + red(line);
    return indent + dim(line);
  });
  if (lines.length > maxLines) shown.push(indent + dim(`… ${lines.length - maxLines} more lines`));
  return `${shown.join('\n')}\n`;
}

/** A spinner with elapsed time on stderr while the model has not answered yet (terminals only). */
class Spinner {
  private timer: NodeJS.Timeout | undefined;
  private started = 0;
  private frame = 0;
  constructor(private readonly out: NodeJS.WriteStream) {}

  start(label: string): void {
    if (!this.out.isTTY || dumb || this.timer) return;
    this.started = Date.now();
    const draw = () => {
      const secs = ((Date.now() - this.started) / 1000).toFixed(1);
      this.out.write(`\r${dim(`${'⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏'[this.frame++ % 10]} ${label} ${secs} s`)}\x1b[K`);
    };
    // a fast answer never shows a spinner at all
    this.timer = setInterval(draw, 80);
    this.timer.unref();
  }

  stop(): void {
    if (!this.timer) return;
    clearInterval(this.timer);
    this.timer = undefined;
    this.out.write('\r\x1b[K');
  }
}

/** Where the answer goes instead of stdout as is: Markdown drawn for a terminal (markdown.ts). */
export interface AnswerSink {
  write(inertText: string): void;
  /** The message is complete. */
  end(): void;
  /** Resolves once everything written is on the screen (a block may wait for the highlighter). */
  drained?(): Promise<void>;
}

/**
 * A renderer for one run of a session: `onText` streams the answer to stdout (holding back a tool call
 * the model writes as text, which keel runs instead of echoing), `onEvent` shows the work on stderr.
 */
export function createRenderer(
  opts: { out?: NodeJS.WriteStream; err?: NodeJS.WriteStream; answer?: AnswerSink } = {},
) {
  const out = opts.out ?? process.stdout;
  const err = opts.err ?? process.stderr;
  const spinner = new Spinner(err);
  const answer = opts.answer;
  const text = new RepeatFilter(new AnswerStream((s) => (answer ? answer.write(s) : out.write(s))));
  let indexing = false;
  // the live indexing line, until the index ends or anything else is written
  let indexLine = false;
  const endIndexLine = () => {
    if (indexLine) err.write('\r\x1b[K');
    indexLine = false;
  };
  return {
    /** A large repository is indexed before the first request: said once with its count, then live on a terminal. */
    onIndexing(done: number, total: number): void {
      const live = err.isTTY === true && !dumb;
      if (!indexing) {
        indexing = true;
        if (!live) err.write(dim(`  … indexing ${thousands(total)} files for the repo map\n`));
      }
      if (!live) return;
      if (done >= total) {
        endIndexLine();
        return;
      }
      err.write(
        `\r${dim(`  … indexing ${thousands(total)} files for the repo map: ${thousands(done)} done`)}\x1b[K`,
      );
      indexLine = true;
    },
    onText(chunk: string): void {
      endIndexLine();
      spinner.stop();
      text.push(chunk);
    },
    onReasoning(_chunk: string): void {
      spinner.stop();
    },
    onEvent(event: SessionEvent): void {
      endIndexLine();
      if (event.type === 'model_request') spinner.start('waiting for the model');
      else if (event.type !== 'model_retry') spinner.stop();
      if (event.type === 'assistant_message') {
        text.end(event.text);
        answer?.end();
      }
      renderTo(event, err);
    },
    /** Stop the spinner and show what is held (the run ended, or something else is about to write). */
    stop(): void {
      endIndexLine();
      spinner.stop();
      answer?.end();
    },
  };
}

/**
 * Print a session event for a person (stderr); silent for events that only matter to the log.
 * Every text from the model, a tool, a hook or a server is made inert before keel adds its colours.
 */
export function renderEvent(event: SessionEvent): void {
  renderTo(event, process.stderr);
}

function renderTo(event: SessionEvent, err: NodeJS.WritableStream): void {
  switch (event.type) {
    case 'tool_start':
      err.write(dim(`  → ${describeCall(event.tool, event.args)}${event.sandboxed ? ' (sandboxed)' : ''}\n`));
      return;
    case 'tool_result': {
      const mark = event.is_error ? red('✗') : green('✓');
      err.write(`    ${mark} ${dim(describeOutcome(event))}\n`);
      // a failed command shows why: the end of its stderr (else of its output); the whole went to the model and the log
      if (event.is_error && event.outcome && !event.outcome.tests)
        for (const line of failureLines(event.output)) err.write(dim(`      ${line}\n`));
      if (event.diff) err.write(formatDiff(event.diff));
      return;
    }
    case 'gate_decision':
      // an `ask` is shown as the question itself, by whoever asks the person
      if (event.decision === 'deny')
        err.write(red(`  ✗ ${inertLine(event.tool)} denied: ${inertLine(event.reason ?? '')}\n`));
      return;
    case 'violation':
      err.write(
        red(
          `  ✗ ${inertLine(event.tool)} created protected names; keel removed ${event.removed.map(inertLine).join(', ')}\n`,
        ),
      );
      return;
    case 'session_start':
      for (const s of event.instructions_skipped ?? [])
        err.write(dim(`  … not reading ${inertLine(s.file)}: ${inertLine(s.reason)}\n`));
      return;
    case 'tool_call_invalid':
      err.write(red(`  ✗ ${inertLine(event.tool)}: ${firstLine(event.error)}\n`));
      return;
    case 'repo_map_skipped':
      err.write(dim(`  … no repo map this time: ${inertLine(event.reason)}\n`));
      return;
    case 'compaction':
      err.write(dim(`  … older turns summarized (${event.tokens_before} → ${event.tokens_after} tokens)\n`));
      return;
    case 'model_retry':
      err.write(dim(`  … ${inertLine(event.error)}; retrying in ${(event.delay_ms / 1000).toFixed(1)} s\n`));
      return;
    case 'model_fallback':
      err.write(
        dim(
          `  … ${inertLine(event.from)} failed (${inertLine(event.error)}); falling back to ${inertLine(event.to)}\n`,
        ),
      );
      return;
    default:
      return;
  }
}

/**
 * The answer as it streams, minus tool calls written as text: from the first sign of one (a
 * `<tool_call>` tag, a fence opening JSON, a line that opens a JSON object) the text is held back until
 * the message is complete, and then only what keel kept as answer text (`assistant_message.text`) is
 * shown. A tail that may still become one waits for the next chunk; ordinary text streams as it comes.
 */
export class AnswerStream {
  private shown = '';
  private pending = '';
  private held = '';
  constructor(private readonly write: (s: string) => void) {}

  push(chunk: string): void {
    if (this.held) {
      this.held += chunk;
      return;
    }
    const text = this.pending + chunk;
    this.pending = '';
    let i = 0;
    for (; i < text.length; i++) {
      const lineStart = i === 0 ? this.shown === '' || this.shown.endsWith('\n') : text[i - 1] === '\n';
      if (text[i] !== '<' && text[i] !== '`' && !lineStart) continue;
      const verdict = classify(text.slice(i), lineStart);
      if (verdict === 'release') continue;
      this.emit(text.slice(0, i));
      if (verdict === 'hold') this.held = text.slice(i);
      else this.pending = text.slice(i);
      return;
    }
    this.emit(text);
  }

  /** The message is complete: show the rest of the text keel kept, then start over for the next one. */
  end(kept: string): void {
    const rest = kept.startsWith(this.shown) ? kept.slice(this.shown.length) : '';
    if (rest.trim()) this.emit(rest.endsWith('\n') ? rest : `${rest}\n`);
    else if (this.shown && !this.shown.endsWith('\n')) this.write('\n');
    this.shown = '';
    this.pending = '';
    this.held = '';
  }

  private emit(text: string): void {
    if (!text) return;
    this.write(inert(text));
    this.shown += text;
  }
}

/**
 * A message that only repeats what an earlier message of the run already showed (a model that writes
 * its answer beside a tool call, then writes it again once the call is done) is not shown twice: while
 * the streamed text may still be such a repeat it waits, and once complete an exact repeat is dropped.
 * A repeat is a whole earlier message, or a whole paragraph that ended one.
 */
class RepeatFilter {
  private readonly shown: string[] = [];
  private waiting = '';
  private passing = false;
  constructor(private readonly stream: AnswerStream) {}

  push(chunk: string): void {
    if (this.passing) {
      this.stream.push(chunk);
      return;
    }
    this.waiting += chunk;
    const start = this.waiting.trim();
    if (start && !this.shown.some((earlier) => earlier.startsWith(start))) this.release();
  }

  end(kept: string): void {
    const text = kept.trim();
    if (!this.passing && text && this.shown.includes(text)) {
      // the whole message is a repeat: nothing of it was shown, and nothing is
      this.waiting = '';
      this.stream.end('');
    } else {
      this.release();
      this.stream.end(kept);
    }
    this.passing = false;
    if (!text) return;
    // the message itself, and each paragraph that ends it, may be repeated later
    const parts = text.split(/\n\s*\n/);
    for (let i = 0; i < parts.length; i++) this.shown.push(parts.slice(i).join('\n\n').trim());
  }

  private release(): void {
    this.passing = true;
    if (this.waiting) this.stream.push(this.waiting);
    this.waiting = '';
  }
}

const TAG = '<tool_call';
const FENCE_INFO = new Set(['', 'json', 'tool_call', 'tool', 'xml']);

/** Whether text starting here is a tool call written as text ('hold'), may become one ('wait'), or is not ('release'). */
function classify(s: string, lineStart: boolean): 'hold' | 'wait' | 'release' {
  if (s.startsWith('<')) {
    if (s.startsWith(TAG)) return 'hold';
    return TAG.startsWith(s) ? 'wait' : 'release';
  }
  if (s.startsWith('`')) {
    if (!s.startsWith('```')) return '```'.startsWith(s) ? 'wait' : 'release';
    const m = /^```([\w-]*)[ \t]*(\n\s*)?(\S)?/.exec(s);
    if (!m) return 'release';
    const info = (m[1] ?? '').toLowerCase();
    if (m[2] === undefined) {
      // the fence line is still coming: wait while it may name JSON
      if (m[0].length < s.length) return 'release';
      return [...FENCE_INFO].some((f) => f.startsWith(info)) ? 'wait' : 'release';
    }
    if (!FENCE_INFO.has(info)) return 'release';
    if (m[3] === undefined) return 'wait';
    return '{[<'.includes(m[3]) ? 'hold' : 'release';
  }
  if (!lineStart) return 'release';
  if (/^[ \t]*[{[][ \t\n]*"/.test(s)) return 'hold';
  return /^[ \t]*[{[][ \t\n]*$/.test(s) ? 'wait' : 'release';
}

/** `1,234`: a count people read at a glance. */
export function thousands(n: number): string {
  return n.toLocaleString('en-US');
}

/** The first line of a tool's output or error, inert and short. */
// how much of a failed command's error a one-shot shows; the rest is in the log
const FAILURE_LINES = 3;

/** The last lines of a failed command's stderr (or of its output when it wrote no stderr), each inert. */
function failureLines(output: string): string[] {
  const at = output.indexOf('\n[stderr]\n');
  const body = at >= 0 ? output.slice(at + '\n[stderr]\n'.length) : output.split('\n').slice(1).join('\n');
  const lines = (body.trim() ? body : output)
    .split('\n')
    .map((l) => l.trimEnd())
    .filter((l) => l.trim() !== '');
  return lines.slice(-FAILURE_LINES).map((l) => firstLine(l));
}

function firstLine(text: string): string {
  const line = inertLine(text.trim().split('\n')[0] ?? '');
  return line.length > 160 ? `${line.slice(0, 157)}...` : line;
}

export { cyan, dim, green, red, useColor };
