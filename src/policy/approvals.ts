/** The gate's reading of the `approvals` setting (src/config/approvals.ts): which question a call needs. */
import { type Approvals, askedBy } from '../config/approvals.js';
import type { Effect } from './effects.js';

/** Which approval a call needs before it runs ('write' or 'shell'), or undefined. */
export function approvalFor(
  setting: Approvals,
  effect: Effect,
  sandboxed: boolean,
): 'write' | 'shell' | undefined {
  const asks = askedBy(setting);
  if (effect === 'write' && asks.has('write')) return 'write';
  if (effect === 'exec' && (asks.has('exec') || (!sandboxed && asks.has('unsandboxed')))) return 'shell';
  return undefined;
}
