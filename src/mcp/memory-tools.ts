/** memory_search, memory_add and memory_list: the project's memory, as `keel memory` shows it. */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import * as z from 'zod';
import { KINDS } from '../memory/items.js';
import type { McpContext } from './context.js';
import { guarded, jsonResult } from './tool-result.js';

const MAX_TEXT = 8_000;

/** Warnings the memory raised during one call (an embedding endpoint that did not answer). */
async function withWarnings<T>(
  ctx: McpContext,
  run: () => Promise<T>,
): Promise<{ value: T; warnings: string[] }> {
  const before = ctx.memory.memory.warnings.length;
  const value = await run();
  const warnings = ctx.memory.memory.warnings.splice(before);
  return { value, warnings };
}

export function registerMemoryTools(server: McpServer, ctx: McpContext): void {
  const project = ctx.memory.project.key;

  server.registerTool(
    'memory_search',
    {
      description:
        "Search what keel remembers about this project (notes, decisions, sessions' observations); best first.",
      inputSchema: z
        .object({
          query: z.string().trim().min(1).max(1_000).describe('words, identifiers or a question'),
          k: z.number().int().min(1).max(50).optional().describe('how many results (default 10)'),
        })
        .strict(),
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    (args) =>
      guarded('memory_search', async () => {
        const { value: hits, warnings } = await withWarnings(ctx, () =>
          ctx.memory.memory.search(args.query, args.k ?? 10),
        );
        return jsonResult({
          project,
          query: args.query,
          results: hits.map((h) => ({ ...h.item, score: h.score })),
          ...(warnings.length ? { warnings } : {}),
        });
      }),
  );

  server.registerTool(
    'memory_add',
    {
      description:
        'Remember a note about this project for later sessions (marked as written by a model; a duplicate is folded).',
      inputSchema: z
        .object({
          text: z.string().trim().min(1).max(MAX_TEXT).describe('the note'),
          tags: z
            .array(z.string().regex(/^[\w.:/-]{1,40}$/, 'a tag is 1-40 letters, digits or . _ : / -'))
            .max(20)
            .optional(),
        })
        .strict(),
      annotations: {
        readOnlyHint: false,
        destructiveHint: false,
        idempotentHint: true,
        openWorldHint: false,
      },
    },
    (args) =>
      guarded('memory_add', async () => {
        // an MCP client is an agent, not the person: its notes are context, never policy
        const { value, warnings } = await withWarnings(ctx, () =>
          ctx.memory.memory.add({ kind: 'note', text: args.text, tags: args.tags ?? [], author: 'model' }),
        );
        return jsonResult({
          project,
          id: value.item.id,
          folded: value.folded,
          item: value.item,
          ...(warnings.length ? { warnings } : {}),
        });
      }),
  );

  server.registerTool(
    'memory_list',
    {
      description: "This project's memory items, newest first.",
      inputSchema: z
        .object({
          kind: z
            .enum(KINDS)
            .optional()
            .describe(`only this kind: ${KINDS.join(', ')}`),
          limit: z.number().int().min(1).max(200).optional().describe('how many (default 50)'),
        })
        .strict(),
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    (args) =>
      guarded('memory_list', async () => {
        const items = ctx.memory.memory.list({
          ...(args.kind ? { kind: args.kind } : {}),
          limit: args.limit ?? 50,
        });
        return jsonResult({ project, items });
      }),
  );
}
