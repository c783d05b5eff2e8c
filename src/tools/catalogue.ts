/**
 * `tools`: the one tool that stands for all the others a session knows but does not offer from the first
 * request (subagents, the code graph, memory, MCP and A2A tools). It lists them, and activates some: an
 * activated tool is offered in every later request of the session (the log records it, so a resumed or
 * forked session offers the same). Activating never widens a mode: only tools the mode allows are listed
 * or activated, and each call still passes the gate like any other.
 */
import * as z from 'zod';
import type { Tool } from './types.js';

export const CATALOGUE = 'tools';

/** Units named in the catalogue's own description before the rest are counted. */
const NAMED = 6;

const schema = z.object({
  activate: z.array(z.string()).optional().describe('names to offer from now on; omit to list'),
});

/** What the catalogue offers: tools the mode allows that are not offered yet. */
export interface CatalogueEntry {
  name: string;
  description: string;
}

export function catalogueTool(handlers: {
  /** The tools that can be activated, now (activated ones drop out). */
  entries(): CatalogueEntry[];
  /** Activate these (names checked already); recorded before the call's result. */
  activate(names: string[]): void;
  /** A name's unit, when it is known but not listed: a family member's family, or an offered tool. */
  unitOf(name: string): string | undefined;
  mode: string;
}): Tool<typeof schema> {
  const first = handlers.entries().map((e) => e.name);
  const named = first.slice(0, NAMED).join(', ');
  const rest = first.length > NAMED ? ` and ${first.length - NAMED} more` : '';
  return {
    name: CATALOGUE,
    description: `List or activate more tools: ${named}${rest}.`,
    effect: 'read',
    schema,
    async execute(args) {
      const entries = handlers.entries();
      if (!args.activate?.length) {
        if (!entries.length) return { output: 'every tool is offered already' };
        return { output: entries.map((e) => `${e.name}: ${e.description}`).join('\n') };
      }
      const open = new Set(entries.map((e) => e.name));
      const wanted = [...new Set(args.activate.map((n) => handlers.unitOf(n) ?? n))];
      const unknown = wanted.filter((n) => !open.has(n) && handlers.unitOf(n) === undefined);
      if (unknown.length)
        return {
          output: `Error: no tool ${unknown.map((n) => JSON.stringify(n)).join(', ')} in ${handlers.mode} mode; can be activated: ${[...open].join(', ') || 'none'}`,
          isError: true,
        };
      const fresh = wanted.filter((n) => open.has(n));
      if (fresh.length) handlers.activate(fresh);
      const already = wanted.filter((n) => !open.has(n));
      return {
        output: [
          ...(fresh.length ? [`activated ${fresh.join(', ')}: offered from your next step`] : []),
          ...(already.length ? [`offered already: ${already.join(', ')}`] : []),
        ].join('\n'),
      };
    },
  };
}
