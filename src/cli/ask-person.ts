/**
 * Asking the person at the terminal before a call (one-shot verbs): the file and its diff, or the exact
 * command, then y (yes), n (no, the default), always (for this tool in this run; the whole word, never a
 * single key), or any other text:
 * a no, with that text sent back to the model as the reason. Questions are asked one at a time (subagents
 * may ask at once), and everything shown that came from the model or a hook is made inert.
 */
import type { ApprovalAnswer, ApprovalRequest, Approver } from '../agent/approvals.js';
import { inertLine } from '../term/inert.js';
import { askLine, Interrupted } from './ask-line.js';
import { dim, formatDiff, red } from './render.js';

/** How a request reads on a terminal: what would happen, why keel asks, and the change itself. */
export function describeRequest(req: ApprovalRequest): string {
  const what =
    req.command !== undefined
      ? `${inertLine(req.tool)}: ${inertLine(req.command)}${req.sandboxed ? dim(' (in the sandbox)') : red(' (NOT sandboxed)')}`
      : req.path !== undefined
        ? `${inertLine(req.tool)} ${inertLine(req.path)}`
        : inertLine(req.tool);
  const diff = req.diff ? `\n${formatDiff(req.diff, 80)}` : '\n';
  return `${red('keel asks:')} ${what}\n  ${dim(inertLine(req.reason))}${diff}`;
}

/** Read a typed answer: y, always, n, empty (no) or a reason (no, told to the model). */
export function parseAnswer(typed: string): ApprovalAnswer & { always?: boolean } {
  const t = typed.trim();
  if (/^y(es)?$/i.test(t)) return { allow: true };
  if (/^always$/i.test(t)) return { allow: true, always: true };
  if (t === '' || /^no?$/i.test(t)) return { allow: false };
  return { allow: false, message: t };
}

/** An approver for a terminal session: stdin for answers, stderr for questions. */
export function terminalApprover(): Approver {
  const always = new Set<string>();
  let queue: Promise<unknown> = Promise.resolve();
  const ask = async (req: ApprovalRequest): Promise<ApprovalAnswer> => {
    if (always.has(req.tool)) return { allow: true };
    process.stderr.write(describeRequest(req));
    let typed: string;
    try {
      typed = await askLine(
        `  ${dim(`[y]es / [n]o / always for ${inertLine(req.tool)} / or type what to do instead:`)} `,
      );
    } catch (err) {
      if (!(err instanceof Interrupted)) throw err;
      interrupt();
      return { allow: false, message: 'the person interrupted the session' };
    }
    const answer = parseAnswer(typed);
    if (answer.allow && answer.always) always.add(req.tool);
    return answer.allow ? { allow: true } : answer;
  };
  return (req) => {
    const next = queue.then(() => ask(req));
    queue = next.catch(() => undefined);
    return next;
  };
}

/**
 * Ctrl+C at a question is the same interruption as anywhere else: the verb's own SIGINT handler ends the
 * session CANCELLED (readline held the terminal raw, so the key never became a signal).
 */
function interrupt(): void {
  if (process.listenerCount('SIGINT') > 0) process.emit('SIGINT', 'SIGINT');
  else process.kill(process.pid, 'SIGINT');
}
