/**
 * A family: several tools offered to the model as one, chosen by an `action` argument (`agent` with
 * spawn/wait/send/list/close instead of five tools). One schema costs far fewer tokens than five. A
 * call is resolved to its member before anything else sees it: the gate, hooks, approvals and the log
 * see the member's own name, effect, paths and arguments, exactly as if the model had called it.
 */
import * as z from 'zod';
import type { Tool } from './types.js';

export interface Family extends Tool {
  /** The member tool for each action, in the order the schema lists them. */
  actions: Readonly<Record<string, Tool>>;
}

export function isFamily(tool: Tool): tool is Family {
  return 'actions' in tool && typeof (tool as Family).actions === 'object';
}

/**
 * Fold tools into one: its schema is `action` plus every member's arguments (each optional; the
 * member's own schema checks the call once the action picks it). A member's field keeps the first
 * description given for its name.
 */
export function fold(name: string, description: string, actions: Record<string, Tool>): Family {
  const names = Object.keys(actions);
  if (!names.length) throw new Error(`tool family "${name}" has no actions`);
  const fields: Record<string, z.ZodType> = {};
  for (const member of Object.values(actions)) {
    const shape = (member.schema as z.ZodObject).shape as Record<string, z.ZodType> | undefined;
    for (const [key, field] of Object.entries(shape ?? {}))
      if (!(key in fields)) fields[key] = field.optional();
  }
  const first = actions[names[0] as string] as Tool;
  return {
    name,
    description,
    // never gated as itself: a call is resolved to its member first (resolveAction)
    effect: first.effect,
    schema: z.object({ action: z.enum(names as [string, ...string[]]), ...fields }),
    actions,
    async execute() {
      throw new Error(`unreachable: tool family ${name} ran without being resolved to an action`);
    },
  };
}

/** The member a family call names, with the call's arguments for it (as JSON text, without `action`). */
export function resolveAction(
  family: Family,
  raw: string,
): { ok: true; tool: Tool; raw: string } | { ok: false; error: string } {
  let value: unknown;
  try {
    value = raw.trim() === '' ? {} : JSON.parse(raw);
  } catch (err) {
    return { ok: false, error: `arguments are not valid JSON: ${(err as Error).message}` };
  }
  const choices = Object.keys(family.actions).join(', ');
  if (!value || typeof value !== 'object' || Array.isArray(value))
    return {
      ok: false,
      error: `invalid arguments for ${family.name}: give an object with action (${choices})`,
    };
  const { action, ...rest } = value as { action?: unknown };
  const tool = typeof action === 'string' ? family.actions[action] : undefined;
  if (!tool || !Object.hasOwn(family.actions, action as string))
    return {
      ok: false,
      error: `invalid arguments for ${family.name}: action must be one of ${choices}${action === undefined ? '' : `, not ${JSON.stringify(action)}`}`,
    };
  return { ok: true, tool, raw: JSON.stringify(rest) };
}
