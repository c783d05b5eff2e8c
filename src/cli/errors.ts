/** One way every verb reports an error: a line on stderr, or with --json the one document on stdout. */
import type { TerminalCode } from '../agent/terminal.js';
import { exitCodeFor } from '../term/exit-codes.js';
import { inert } from '../term/inert.js';
import { red } from './render.js';

/** The codes an error before or outside a run can carry (usage errors are CONFIG_ERROR: both exit 2). */
export type ErrorCode = Extract<
  TerminalCode,
  'CONFIG_ERROR' | 'ENVIRONMENT_ERROR' | 'MODEL_ERROR' | 'CANCELLED'
>;

/** The --json error shape of DESIGN.md: `code`, `exit_code`, `error`, then whatever the verb adds. */
export function errorDocument(
  code: ErrorCode,
  error: string,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return { code, exit_code: exitCodeFor(code), error, ...extra };
}

/** Report an error and return its exit status; messages quote paths and servers, so they are shown inert. */
export function reportError(
  json: boolean | undefined,
  code: ErrorCode,
  message: string,
  extra: Record<string, unknown> = {},
): number {
  if (json) process.stdout.write(`${JSON.stringify(errorDocument(code, message, extra))}\n`);
  else process.stderr.write(`${red('keel:')} ${inert(message)}\n`);
  return exitCodeFor(code);
}

/** Whether argv asks for --json (before a `--`), for errors raised before any verb has parsed its flags. */
export function wantsJson(argv: readonly string[]): boolean {
  const end = argv.indexOf('--');
  return (end === -1 ? argv : argv.slice(0, end)).includes('--json');
}
