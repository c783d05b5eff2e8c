/** What each mode lets a session do, as sets of tool effects. */
import type { Mode } from '../config/schema.js';
import type { Effect } from './effects.js';

// `agent` (subagents) is in every mode: a child's policy is narrowed from its parent's, never wider
const READ_ONLY: ReadonlySet<Effect> = new Set<Effect>(['read', 'memory', 'agent']);
const WRITING: ReadonlySet<Effect> = new Set<Effect>(['read', 'write', 'exec', 'memory', 'agent']);

export const MODE_EFFECTS: Record<Mode, ReadonlySet<Effect>> = {
  ask: READ_ONLY,
  plan: READ_ONLY,
  edit: WRITING,
  auto: WRITING,
};

/** Whether a mode allows an effect class at all. */
export function modeAllows(mode: Mode, effect: Effect): boolean {
  return MODE_EFFECTS[mode].has(effect);
}
