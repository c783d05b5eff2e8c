/**
 * Words for tool calls, shared by the full-screen and the plain chat: what a call was (one line),
 * what the gate said, and how it came out (exit code, tests passed or failed, lines changed).
 * Every piece of text from the model or a tool is made inert here, before anyone styles it.
 */
import type { SessionEvent } from '../agent/events.js';
import { inertLine } from '../term/inert.js';

type ToolResult = Extract<SessionEvent, { type: 'tool_result' }>;
type GateDecision = Extract<SessionEvent, { type: 'gate_decision' }>;

/** A string cut to `n` characters with an ellipsis. */
export function clip(text: string, n: number): string {
  return text.length > n ? `${text.slice(0, n - 1)}…` : text;
}

/** One line for a call: the tool and its main argument, inert. */
export function toolHeadline(tool: string, args: unknown): string {
  const a = (args && typeof args === 'object' ? args : {}) as { [k: string]: unknown };
  const str = (v: unknown) => (typeof v === 'string' ? v : v === undefined ? '' : JSON.stringify(v));
  let main: string;
  switch (tool) {
    case 'shell':
      main = `$ ${str(a.command)}`;
      break;
    case 'run_tests':
      main = a.filter ? str(a.filter) : 'all tests';
      break;
    case 'grep':
    case 'glob':
      main = `${str(a.pattern)}${a.path ? ` in ${str(a.path)}` : ''}`;
      break;
    case 'spawn_agent':
      main = `${a.name ? `${str(a.name)}: ` : ''}${str(a.task)}`;
      break;
    default:
      main = str(a.path ?? a.name ?? a.query ?? a.pattern ?? a.command ?? (Object.keys(a).length ? a : ''));
  }
  return clip(`${inertLine(tool)} ${inertLine(main)}`.trim(), 160);
}

/** What the gate decided, in a few words (the reason is the policy's or a hook's: inert). */
export function decisionWords(event: GateDecision): string {
  if (event.decision === 'allow') return 'allowed';
  if (event.decision === 'ask') return 'asking';
  return `denied: ${clip(inertLine(event.reason ?? event.deny ?? ''), 120)}`;
}

/** How a call came out: the exit code of a command, passed/failed for tests, lines changed for a write. */
export function outcomeWords(event: ToolResult): string {
  const first = inertLine(event.output.split('\n')[0] ?? '');
  const o = event.outcome;
  if (event.interrupted) return 'interrupted';
  if (o?.timed_out) return 'timed out';
  if (o?.tests) {
    const t = o.tests;
    const counts = `${t.passed} passed, ${t.failed} failed${t.skipped ? `, ${t.skipped} skipped` : ''}`;
    return event.is_error ? `tests failed · ${counts}` : `tests passed · ${counts}`;
  }
  if (o && 'exit_code' in o)
    return o.exit_code === null || o.exit_code === undefined ? 'killed' : `exit ${o.exit_code}`;
  if (o && (o.added !== undefined || o.removed !== undefined)) {
    const where = event.files_changed.length ? ` in ${event.files_changed.map(inertLine).join(', ')}` : '';
    return `+${o.added ?? 0} -${o.removed ?? 0}${where}`;
  }
  switch (event.tool) {
    case 'shell': {
      const exit = /^exit code (\d+)/.exec(first);
      return exit ? `exit ${exit[1]}` : clip(first, 80);
    }
    case 'run_tests':
      return event.is_error ? `tests failed · ${clip(first, 80)}` : `tests passed · ${clip(first, 80)}`;
    case 'edit_file':
    case 'write_file':
      if (event.is_error) return `error: ${clip(first, 100)}`;
      return `${event.diff_lines} line${event.diff_lines === 1 ? '' : 's'} changed${event.files_changed.length ? ` in ${event.files_changed.map(inertLine).join(', ')}` : ''}`;
    default: {
      if (event.is_error) return `error: ${clip(first, 100)}`;
      const lines = event.output === '' ? 0 : event.output.split('\n').length;
      return `${lines} line${lines === 1 ? '' : 's'}`;
    }
  }
}

/** The diff to show for a call: the one the core recorded, else (a write logged before it kept one) git's. */
export function diffFor(
  event: ToolResult,
  live: boolean,
  root: string,
  fallback: (root: string, path: string) => string[],
): string[] {
  if (event.diff) return event.diff.split('\n').filter((l) => l !== '');
  if (!live || !isWrite(event.tool) || event.is_error) return [];
  return event.files_changed.flatMap((f) => fallback(root, f));
}

/** Whether a tool writes files, so its outcome comes with a diff. */
export function isWrite(tool: string): boolean {
  return tool === 'edit_file' || tool === 'write_file';
}

/** Compact token counts: 950, 12.3k, 1.2M. */
export function tokens(n: number): string {
  if (n < 1000) return String(n);
  if (n < 1_000_000) return `${(n / 1000).toFixed(n < 10_000 ? 1 : 0)}k`;
  return `${(n / 1_000_000).toFixed(1)}M`;
}
