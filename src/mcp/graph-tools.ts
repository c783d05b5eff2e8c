/** find_symbol, find_references, file_outline, importers and repo_map: the project's code graph. */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import * as z from 'zod';
import { importersOf } from '../graph/importers.js';
import { buildRepoMap } from '../graph/map.js';
import { type McpContext, McpToolError } from './context.js';
import { guarded, jsonResult, textResult } from './tool-result.js';

const MAX_DEFINITIONS = 30;
const MAX_REFERENCES = 200;
const MAX_OUTLINE = 300;
const MAX_IMPORTERS = 200;
const MAX_MAP_TOKENS = 16_000;

const name = z.string().min(1).max(200).describe('the exact name of a function, class, method, type, ...');
const path = z.string().min(1).max(1_000).describe('a file of the project, relative to its root');
const readOnly = { readOnlyHint: true, openWorldHint: false } as const;

/** Rows cut at a cap (the query asked for one more), saying so: a client should narrow the query rather than page. */
function capped<T>(rows: T[], cap: number): { rows: T[]; truncated: boolean } {
  return { rows: rows.slice(0, cap), truncated: rows.length > cap };
}

export function registerGraphTools(server: McpServer, ctx: McpContext): void {
  server.registerTool(
    'find_symbol',
    {
      description: 'Find where a function, class, method or type is defined: file, lines and signature.',
      inputSchema: z.object({ name }).strict(),
      annotations: readOnly,
    },
    (args) =>
      guarded('find_symbol', async () => {
        const { rows, truncated } = capped(
          (await ctx.graph()).definitions(args.name, MAX_DEFINITIONS + 1),
          MAX_DEFINITIONS,
        );
        return jsonResult({ name: args.name, definitions: rows, truncated });
      }),
  );

  server.registerTool(
    'find_references',
    {
      description: 'List the places (file and line) that use a name: calls, constructions, type references.',
      inputSchema: z.object({ name }).strict(),
      annotations: readOnly,
    },
    (args) =>
      guarded('find_references', async () => {
        const { rows, truncated } = capped(
          (await ctx.graph()).references(args.name, MAX_REFERENCES + 1),
          MAX_REFERENCES,
        );
        return jsonResult({ name: args.name, references: rows, truncated });
      }),
  );

  server.registerTool(
    'file_outline',
    {
      description: "A source file's definitions in order: line range, kind, name and signature.",
      inputSchema: z.object({ path }).strict(),
      annotations: readOnly,
    },
    (args) =>
      guarded('file_outline', async () => {
        const file = ctx.projectPath(args.path);
        const rows = (await ctx.graph()).outline(file);
        if (!rows)
          throw new McpToolError(
            `${file} is not in the code graph (not a TypeScript, JavaScript, Python, Go, Rust or Java file, ignored, or over 1 MB)`,
          );
        const shown = capped(rows, MAX_OUTLINE);
        return jsonResult({ path: file, outline: shown.rows, truncated: shown.truncated });
      }),
  );

  server.registerTool(
    'importers',
    {
      description: 'List the files that import a module (name) or a file of the project (path).',
      inputSchema: z
        .object({
          name: z.string().min(1).max(300).optional().describe("a module name ('react', 'os')"),
          path: path.optional(),
        })
        .strict()
        .refine((a) => (a.name === undefined) !== (a.path === undefined), {
          message: 'give one of name (a module) or path (a file of the project)',
        }),
      annotations: readOnly,
    },
    (args) =>
      guarded('importers', async () => {
        const file = args.path === undefined ? undefined : ctx.projectPath(args.path);
        const target = file ?? args.name ?? '';
        const files = capped(
          importersOf((await ctx.graph()).imports(), target, file !== undefined),
          MAX_IMPORTERS,
        );
        return jsonResult({
          ...(file === undefined ? { name: target } : { path: file }),
          importers: files.rows,
          truncated: files.truncated,
        });
      }),
  );

  server.registerTool(
    'repo_map',
    {
      description:
        "The project's most relevant definitions for a task, ranked over the reference graph, as a compact outline fitted to a token budget.",
      inputSchema: z
        .object({
          task: z
            .string()
            .max(4_000)
            .optional()
            .describe('what you are about to do (ranks its neighbourhood first)'),
          tokens: z
            .number()
            .int()
            .min(1)
            .max(MAX_MAP_TOKENS)
            .optional()
            .describe("the budget in tokens (default: the config's graph.map_tokens)"),
        })
        .strict(),
      annotations: readOnly,
    },
    (args) =>
      guarded('repo_map', async () => {
        const budget = args.tokens ?? (ctx.config.graph.map_tokens || 1_000);
        await ctx.graph();
        const map = await buildRepoMap(ctx.db, ctx.root, args.task ?? '', budget);
        if (!map) return textResult('', { tokens: 0, files: [], budget });
        return textResult(map.text, { tokens: map.tokens, files: map.files, budget });
      }),
  );
}
