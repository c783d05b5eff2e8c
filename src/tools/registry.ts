/** The tool registry: looks tools up by name and derives the JSON schema the model sees. */
import { z } from 'zod';
import type { ToolSpec } from '../model/types.js';
import type { Effect } from '../policy/effects.js';
import type { Tool } from './types.js';

export class ToolRegistry {
  private readonly tools = new Map<string, Tool>();

  constructor(tools: Tool[] = []) {
    for (const tool of tools) this.add(tool);
  }

  add(tool: Tool): void {
    if (this.tools.has(tool.name)) throw new Error(`tool "${tool.name}" registered twice`);
    this.tools.set(tool.name, tool);
  }

  get(name: string): Tool | undefined {
    return this.tools.get(name);
  }

  has(name: string): boolean {
    return this.tools.has(name);
  }

  names(): string[] {
    return [...this.tools.keys()];
  }

  /** Tools whose effect is in `effects`, in registration order. */
  withEffects(effects: ReadonlySet<Effect>): Tool[] {
    return [...this.tools.values()].filter((t) => effects.has(t.effect));
  }
}

/** The spec sent to the model: name, description, and JSON Schema from the zod schema. */
export function toolSpec(tool: Tool): ToolSpec {
  const schema = z.toJSONSchema(tool.schema, { io: 'input', target: 'draft-7' }) as Record<string, unknown>;
  // `$schema` costs tokens on every request and no server needs it
  delete schema.$schema;
  return { name: tool.name, description: tool.description, parameters: schema };
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
