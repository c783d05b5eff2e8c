/**
 * The graph's read tools: find_symbol, find_references, file_outline and importers, folded into one
 * `code_graph` tool (actions symbol, references, outline, importers). The first call of a session brings
 * the index up to date (incrementally, in a worker); answers are bounded.
 */
import { relative } from 'node:path';
import * as z from 'zod';
import { keelPaths } from '../config/paths.js';
import { type Db, openDb } from '../store/db.js';
import { fold } from '../tools/family.js';
import { type Tool, type ToolContext, type ToolDeps, ToolError, type ToolFactory } from '../tools/types.js';
import { importersOf } from './importers.js';
import { runIndexWorker } from './run-index.js';
import { GraphStore, type SymbolRow } from './store.js';

const MAX_DEFINITIONS = 30;
const MAX_REFERENCES = 200;
const MAX_OUTLINE = 300;
const MAX_IMPORTERS = 200;

function describe(s: SymbolRow): string {
  const name = s.parent ? `${s.parent}.${s.name}` : s.name;
  return `${s.path}:${s.start_line}-${s.end_line} ${s.kind} ${name}\n  ${s.signature}`;
}

const more = (shown: number, cap: number) =>
  shown >= cap ? `\n[showing the first ${cap}; narrow the query]` : '';

/** The graph tools of one session: they share one index run and one database connection. */
export const graphTools: ToolFactory = (deps: ToolDeps): Tool[] => {
  const dbPath = keelPaths(deps.env).db;
  let db: Db | undefined;
  let ready: Promise<void> | undefined;
  // a session that writes changes files between calls: each call then brings the index up to date
  // (incremental, so a few hundred ms); a read-only session indexes once
  const acting = deps.policy.mode === 'edit' || deps.policy.mode === 'auto';
  deps.onClose?.(async () => {
    db?.close();
  });
  const storeFor = async (ctx: ToolContext): Promise<GraphStore> => {
    ready ??= runIndexWorker(dbPath, ctx.cwd, { signal: deps.signal }).then(() => undefined);
    try {
      await ready;
    } catch (err) {
      ready = undefined;
      throw new ToolError(`could not index the workspace: ${(err as Error).message}`);
    }
    if (acting) ready = undefined;
    db ??= openDb(dbPath);
    return new GraphStore(db, ctx.cwd);
  };

  const symbolSchema = z.object({
    name: z.string().min(1).describe("a function, class or type's exact name; importers: a module"),
  });
  const findSymbol: Tool<typeof symbolSchema> = {
    name: 'find_symbol',
    description: 'Find where a function, class, method or type is defined: file, lines and signature.',
    effect: 'read',
    schema: symbolSchema,
    async execute(args, ctx) {
      const rows = (await storeFor(ctx)).definitions(args.name, MAX_DEFINITIONS);
      if (!rows.length) return { output: `no definition named ${args.name} in the index` };
      return { output: rows.map(describe).join('\n') + more(rows.length, MAX_DEFINITIONS) };
    },
  };

  const findReferences: Tool<typeof symbolSchema> = {
    name: 'find_references',
    description: 'List the places (file:line) that use a name: calls, constructions, type references.',
    effect: 'read',
    schema: symbolSchema,
    async execute(args, ctx) {
      const rows = (await storeFor(ctx)).references(args.name, MAX_REFERENCES);
      if (!rows.length) return { output: `no references to ${args.name} in the index` };
      return {
        output: rows.map((r) => `${r.path}:${r.line}`).join('\n') + more(rows.length, MAX_REFERENCES),
      };
    },
  };

  const pathSchema = z.object({
    path: z.string().min(1).describe('outline, importers: a workspace file'),
  });
  const fileOutline: Tool<typeof pathSchema> = {
    name: 'file_outline',
    description: "A source file's definitions in order: line range, kind, name and signature.",
    effect: 'read',
    schema: pathSchema,
    paths: (args) => [{ path: args.path, access: 'read' }],
    async execute(args, ctx) {
      const abs = ctx.resolve(args.path, 'read');
      const rel = relative(ctx.cwd, abs).split('\\').join('/');
      const rows = (await storeFor(ctx)).outline(rel);
      if (!rows)
        throw new ToolError(
          `${args.path} is not in the code graph (not a TypeScript, JavaScript, Python, Go, Rust or Java file, ignored, or over 1 MB)`,
        );
      if (!rows.length) return { output: `${rel}: no definitions` };
      const shown = rows.slice(0, MAX_OUTLINE);
      return {
        output:
          shown
            .map(
              (s) =>
                `${s.parent ? '  ' : ''}${s.start_line}-${s.end_line} ${s.kind} ${s.name}: ${s.signature}`,
            )
            .join('\n') + more(shown.length, MAX_OUTLINE),
      };
    },
  };

  // DESIGN.md's contract: `name` (a module: 'react', 'os') or `path` (a file of the workspace)
  const importersSchema = z
    .object({
      name: z.string().min(1).optional().describe("a module name ('react', 'os')"),
      path: z.string().min(1).optional().describe("a file of the workspace ('src/a.ts')"),
    })
    .refine((a) => (a.name === undefined) !== (a.path === undefined), {
      message: 'give one of name (a module) or path (a workspace file)',
    });
  const importers: Tool<typeof importersSchema> = {
    name: 'importers',
    description: 'List the files that import a module (name) or a workspace file (path).',
    effect: 'read',
    schema: importersSchema,
    // a file is a path like any other: the gate checks it against the scope
    paths: (args) => (args.path === undefined ? [] : [{ path: args.path, access: 'read' }]),
    async execute(args, ctx) {
      const store = await storeFor(ctx);
      const file =
        args.path === undefined
          ? undefined
          : relative(ctx.cwd, ctx.resolve(args.path, 'read')).split('\\').join('/');
      const target = file ?? args.name ?? '';
      const files = importersOf(store.imports(), target, file !== undefined);
      if (!files.length) return { output: `no file imports ${target}` };
      const shown = files.slice(0, MAX_IMPORTERS);
      return { output: shown.join('\n') + more(shown.length, MAX_IMPORTERS) };
    },
  };

  return [
    fold(
      'code_graph',
      'The code graph: where a symbol is defined, its references, a file outline, the importers of a module or file.',
      {
        symbol: findSymbol,
        references: findReferences,
        outline: fileOutline,
        importers,
      } as Record<string, Tool>,
    ),
  ];
};
