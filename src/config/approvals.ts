/**
 * The `approvals` setting: when keel itself asks a person before a call (a hook may ask too). The
 * setting only adds questions to calls the policy already allows: it can never allow what the gate denies.
 *
 * - unset (the default): shell (exec) calls that would run outside the sandbox;
 * - "shell": every exec call; "writes": every write, plus the default's;
 * - "all": every write and exec call; "never": keel asks nothing (a hook that asks is still asked).
 *
 * The gate applies it (src/policy/approvals.ts).
 */

export const APPROVALS = ['writes', 'shell', 'all', 'never'] as const;
export type Approvals = (typeof APPROVALS)[number] | undefined;

/** What a setting asks about: `unsandboxed` is exec outside the sandbox. */
export type Asked = 'unsandboxed' | 'exec' | 'write';
const ASKS: Record<(typeof APPROVALS)[number] | 'default', ReadonlySet<Asked>> = {
  default: new Set(['unsandboxed']),
  shell: new Set(['unsandboxed', 'exec']),
  writes: new Set(['unsandboxed', 'write']),
  all: new Set(['unsandboxed', 'exec', 'write']),
  never: new Set(),
};

/** What a setting asks about. */
export function askedBy(setting: Approvals): ReadonlySet<Asked> {
  return ASKS[setting ?? 'default'];
}

/** Whether `after` asks about everything `before` did (a change that drops a question widens). */
export function asksAtLeast(after: Approvals, before: Approvals): boolean {
  const a = ASKS[after ?? 'default'];
  return [...ASKS[before ?? 'default']].every((q) => a.has(q));
}
