/** How a session looks in a terminal: assistant text on stdout, tool activity on stderr. */
import type { SessionEvent } from '../agent/events.js';

const useColor = process.stderr.isTTY && !process.env.NO_COLOR;
const dim = (s: string) => (useColor ? `\x1b[2m${s}\x1b[22m` : s);
const red = (s: string) => (useColor ? `\x1b[31m${s}\x1b[39m` : s);

/** One line that says what a tool call was, short enough to scan. */
function describeCall(tool: string, args: unknown): string {
  const a = (args ?? {}) as { [k: string]: unknown };
  const main = a.path ?? a.pattern ?? a.command ?? '';
  const text = typeof main === 'string' ? main : JSON.stringify(main);
  return `${tool} ${text.length > 100 ? `${text.slice(0, 97)}...` : text}`.trim();
}

/** Print a session event for a person (stderr); silent for events that only matter to the log. */
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
        process.stderr.write(red(`  ✗ ${event.tool} denied: ${event.reason ?? ''}\n`));
      return;
    case 'tool_call_invalid':
      process.stderr.write(red(`  ✗ ${event.tool}: ${firstLine(event.error)}\n`));
      return;
    case 'model_retry':
      process.stderr.write(dim(`  … ${event.error}; retrying in ${(event.delay_ms / 1000).toFixed(1)} s\n`));
      return;
    case 'model_fallback':
      process.stderr.write(dim(`  … ${event.from} failed (${event.error}); falling back to ${event.to}\n`));
      return;
    default:
      return;
  }
}

function firstLine(text: string): string {
  const line = text.split('\n')[0] ?? '';
  return line.length > 160 ? `${line.slice(0, 157)}...` : line;
}

export { dim, red };
