/** The one place terminal codes become exit statuses (a public contract, see DESIGN.md). */
import type { TerminalCode } from '../agent/terminal.js';

export const EXIT = {
  ok: 0,
  failed: 1,
  usage: 2,
  environment: 3,
  model: 4,
  interrupted: 130,
} as const;

/** Exit status for a terminal code. */
export function exitCodeFor(code: TerminalCode): number {
  switch (code) {
    case 'COMPLETED':
      return EXIT.ok;
    case 'BUDGET_EXCEEDED':
    case 'SCOPE_VIOLATION':
    case 'HOOK_DENIED':
    case 'LOOP_DETECTED':
    case 'NO_TEST_PROGRESS':
    case 'VERIFICATION_FAILED':
    case 'BLOCKED_UNCERTAIN':
      return EXIT.failed;
    case 'CONFIG_ERROR':
      return EXIT.usage;
    case 'ENVIRONMENT_ERROR':
      return EXIT.environment;
    case 'MODEL_ERROR':
      return EXIT.model;
    case 'CANCELLED':
      return EXIT.interrupted;
  }
}
