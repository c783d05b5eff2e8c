/** How a session looks in a terminal: assistant text on stdout, tool activity on stderr. */
import type { SessionEvent } from '../agent/events.js';
import { inertLine } from './inert.js';

const useColor = process.stderr.isTTY && !process.env.NO_COLOR;
const dim = (s: string) => (useColor ? `\x1b[2m${s}\x1b[22m` : s);
const red = (s: string) => (useColor ? `\x1b[31m${s}\x1b[39m` : s);

/** One line that says what a tool call was, short enough to scan; the model's arguments cannot break it into lines. */
function describeCall(tool: string, args: unknown): string {
  const a = (args ?? {}) as { [k: string]: unknown };
  const main = a.path ?? a.pattern ?? a.command ?? '';
  const text = inertLine(typeof main === 'string' ? main : JSON.stringify(main));
  return `${inertLine(tool)} ${text.length > 100 ? `${text.slice(0, 97)}...` : text}`.trim();
}

/**
 * Print a session event for a person (stderr); silent for events that only matter to the log.
 * Every text from the model, a tool, a hook or a server is made inert before keel adds its colours.
 */
export function renderEvent(event: SessionEvent): void {
  switch (event.type) {
    case 'tool_start':
      process.stderr.write(dim(`  → ${describeCall(event.tool, event.args)}\n`));
      return;
    case 'tool_result':
      if (event.is_error) process.stderr.write(dim(`    ${firstLine(event.output)}\n`));
      return;
    case 'gate_decision':
      // an `ask` is shown as the question itself, by whoever asks the person
      if (event.decision === 'deny')
        process.stderr.write(red(`  ✗ ${inertLine(event.tool)} denied: ${inertLine(event.reason ?? '')}\n`));
      return;
    case 'violation':
      process.stderr.write(
        red(
          `  ✗ ${inertLine(event.tool)} created protected names; keel removed ${event.removed.map(inertLine).join(', ')}\n`,
        ),
      );
      return;
    case 'session_start':
      for (const s of event.instructions_skipped ?? [])
        process.stderr.write(dim(`  … not reading ${inertLine(s.file)}: ${inertLine(s.reason)}\n`));
      return;
    case 'tool_call_invalid':
      process.stderr.write(red(`  ✗ ${inertLine(event.tool)}: ${firstLine(event.error)}\n`));
      return;
    case 'model_retry':
      process.stderr.write(
        dim(`  … ${inertLine(event.error)}; retrying in ${(event.delay_ms / 1000).toFixed(1)} s\n`),
      );
      return;
    case 'model_fallback':
      process.stderr.write(
        dim(
          `  … ${inertLine(event.from)} failed (${inertLine(event.error)}); falling back to ${inertLine(event.to)}\n`,
        ),
      );
      return;
    default:
      return;
  }
}

/** The first line of a tool's output or error, inert and short. */
function firstLine(text: string): string {
  const line = inertLine(text.split('\n')[0] ?? '');
  return line.length > 160 ? `${line.slice(0, 157)}...` : line;
}

export { dim, red };
