/** The tool registry: looks tools up by name and derives the JSON schema the model sees. */
import * as z from 'zod';
import type { ToolSpec } from '../model/types.js';
import type { Effect } from '../policy/effects.js';
import { type Family, isFamily } from './family.js';
import type { Tool } from './types.js';

/** Tools a factory asks to offer from the first request, like the core set (an MCP server with `offer = "always"`). */
const ALWAYS = new WeakSet<Tool>();

/** Mark a tool to be offered from the first request instead of on demand. */
export function offerAlways<T extends Tool>(tool: T): T {
  ALWAYS.add(tool);
  return tool;
}

/**
 * The tools a session knows. The core set is offered from the first request; the others are listed by the
 * `tools` tool and offered once activated. A family's members are known by their own names as well (an old
 * session's log calls them so), each resolving to its family as the unit that is offered.
 */
export class ToolRegistry {
  private readonly tools = new Map<string, Tool>();
  /** Tools as offered: families and single tools, in registration order (never a family's member). */
  private readonly units: Tool[] = [];
  private readonly familyOf = new Map<string, Family>();
  private readonly core = new Set<string>();

  constructor(core: Tool[] = [], more: Tool[] = []) {
    for (const tool of core) this.add(tool, true);
    for (const tool of more) this.add(tool, ALWAYS.has(tool));
  }

  add(tool: Tool, core = true): void {
    const names = [tool.name, ...(isFamily(tool) ? Object.values(tool.actions).map((m) => m.name) : [])];
    for (const name of names) if (this.tools.has(name)) throw new Error(`tool "${name}" registered twice`);
    this.tools.set(tool.name, tool);
    this.units.push(tool);
    if (core) this.core.add(tool.name);
    if (isFamily(tool))
      for (const member of Object.values(tool.actions)) {
        this.tools.set(member.name, member);
        this.familyOf.set(member.name, tool);
      }
  }

  /** A tool, family or family member by name. */
  get(name: string): Tool | undefined {
    return this.tools.get(name);
  }

  has(name: string): boolean {
    return this.tools.has(name);
  }

  /** The unit offered for a name: a member's family, else the tool itself. */
  unit(name: string): Tool | undefined {
    return this.familyOf.get(name) ?? this.tools.get(name);
  }

  /** Names of the units, in registration order. */
  names(): string[] {
    return this.units.map((t) => t.name);
  }

  /** Whether a unit is offered from the first request. */
  isCore(name: string): boolean {
    return this.core.has(name);
  }

  /** Units that have a member (or are a tool) whose effect is in `effects`, in registration order. */
  withEffects(effects: ReadonlySet<Effect>): Tool[] {
    return this.units.filter((t) => effectsOf(t).some((e) => effects.has(e)));
  }
}

/** The effects a unit's calls can have: a family's members', or the tool's own. */
export function effectsOf(tool: Tool): Effect[] {
  return isFamily(tool) ? Object.values(tool.actions).map((m) => m.effect) : [tool.effect];
}

/** The spec sent to the model: name, description, and JSON Schema from the zod schema. */
export function toolSpec(tool: Tool): ToolSpec {
  const schema = z.toJSONSchema(tool.schema, { io: 'input', target: 'draft-7' }) as Record<string, unknown>;
  // `$schema` costs tokens on every request and no server needs it
  delete schema.$schema;
  return {
    name: tool.name,
    description: tool.description,
    parameters: lean(schema) as Record<string, unknown>,
  };
}

/** Bounds the zod schema checks on every call anyway: a model that misses one is told by the error. */
const CHECKED = new Set([
  'minLength',
  'maxLength',
  'minItems',
  'maxItems',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
]);

/** The JSON Schema without the bounds (they cost tokens in every request); property names are kept as they are. */
function lean(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(lean);
  if (!node || typeof node !== 'object') return node;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node as Record<string, unknown>)) {
    if (CHECKED.has(key) && typeof value === 'number') continue;
    out[key] =
      key === 'properties' && value && typeof value === 'object'
        ? Object.fromEntries(Object.entries(value).map(([name, v]) => [name, lean(v)]))
        : lean(value);
  }
  return out;
}

/** Validate raw JSON argument text against a tool's schema; returns the parsed args or an error message. */
export function parseArgs(
  tool: Tool,
  raw: string,
): { ok: true; args: unknown } | { ok: false; error: string } {
  let value: unknown;
  try {
    value = raw.trim() === '' ? {} : JSON.parse(raw);
  } catch (err) {
    return { ok: false, error: `arguments are not valid JSON: ${(err as Error).message}` };
  }
  const result = tool.schema.safeParse(value);
  if (result.success) return { ok: true, args: result.data };
  const problems = result.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`);
  return { ok: false, error: `invalid arguments for ${tool.name}: ${problems.join('; ')}` };
}
