/** shell: run a command through the session's exec policy and report its exit code and output. */
import * as z from 'zod';
import type { ExecResult } from '../policy/effects.js';
import { LIMITS, truncateMiddle } from './truncate.js';
import { type Tool, ToolError } from './types.js';

const DEFAULT_TIMEOUT_S = 120;
const MAX_TIMEOUT_S = 600;

const schema = z.object({
  command: z.string(),
  timeout_s: z.coerce.number().optional().describe('default 120, max 600'),
});

/** The shell tool. */
export const shellTool: Tool<typeof schema> = {
  name: 'shell',
  description: 'Run a shell command (sh -c, no stdin) in the workspace; returns exit code and output.',
  effect: 'exec',
  // its effects stay in the workspace: a resumed run restores the tree and runs it again
  resume: 'worktree',
  schema,
  paths: () => [],
  async execute(args, ctx) {
    if (!ctx.exec) throw new ToolError('shell is not available in this session');
    if (args.command.trim() === '') throw new ToolError('command is empty');
    const timeoutS = Math.min(Math.max(args.timeout_s ?? DEFAULT_TIMEOUT_S, 1), MAX_TIMEOUT_S);
    const result = await ctx.exec(args.command, {
      timeoutS,
      signal: ctx.signal,
      ...(ctx.onOutput ? { onOutput: ctx.onOutput } : {}),
    });
    // part of the command's work was undone: the model must not take it for a success
    const undone = (result.violations?.length ?? 0) > 0;
    return {
      output: formatResult(result, timeoutS),
      isError: result.exitCode !== 0 || result.timedOut || undone,
      outcome: { exit_code: result.exitCode, ...(result.timedOut ? { timed_out: true } : {}) },
      ...(undone ? { violations: result.violations } : {}),
    };
  },
};

/** The model's view of a finished command: status line, then stdout and stderr, each cut to head and tail. */
export function formatResult(result: ExecResult, timeoutS: number): string {
  const status = result.timedOut
    ? `timed out after ${timeoutS}s; the process tree was killed`
    : result.exitCode === null
      ? `killed by ${result.signal ?? 'a signal'}`
      : `exit code ${result.exitCode}`;
  const streams = [
    { name: 'stdout', text: result.stdout },
    { name: 'stderr', text: result.stderr },
  ].filter((s) => s.text.trim() !== '');
  // said first, so no truncation can hide that part of the command's work was undone
  const removed = result.violations?.length
    ? `\nkeel removed what this command created at protected names (a command may not create .git, keel.toml or .keel): ${result.violations.join(', ')}`
    : '';
  if (streams.length === 0) return `${status} (no output)${removed}`;
  // both streams share the budget, so a chatty stdout cannot push the error off the page
  const maxBytes = Math.floor(LIMITS.bytes / streams.length);
  const maxLines = Math.floor(LIMITS.lines / streams.length);
  const parts = [`${status}${removed}`];
  for (const { name, text } of streams) {
    const body = truncateMiddle(text.replace(/\n$/, ''), { maxBytes, maxLines });
    // a lone stdout needs no label; labels only disambiguate when both are present
    parts.push(streams.length === 1 && name === 'stdout' ? body : `[${name}]\n${body}`);
  }
  return parts.join('\n');
}
