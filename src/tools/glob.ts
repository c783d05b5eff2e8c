/** glob: files matching a glob pattern, from the gitignore-respecting listing, sorted and capped. */
import { join } from 'node:path';
import * as z from 'zod';
import { globMatcher, listFiles, statExisting, workspacePath } from './files.js';
import { truncateHead } from './truncate.js';
import { type Tool, ToolError } from './types.js';

const MAX_RESULTS = 500;

const schema = z.object({
  pattern: z.string(),
  path: z.string().optional().describe('folder to search, default .'),
});

/** The glob tool. */
export const globTool: Tool<typeof schema> = {
  name: 'glob',
  description: 'Find files by glob (src/**/*.ts; without / it matches names at any depth).',
  effect: 'read',
  schema,
  paths: (args) => [{ path: args.path ?? '.', access: 'read' }],
  async execute(args, ctx) {
    const path = args.path ?? '.';
    const abs = ctx.resolve(path, 'read');
    const info = await statExisting(abs, path);
    if (!info.isDirectory()) throw new ToolError(`path must be a folder; ${path} is a file`);

    const listing = await listFiles(abs, { signal: ctx.signal });
    const matches = listing.files.filter(await globMatcher(args.pattern));
    if (matches.length === 0) return { output: `No files match ${args.pattern} in ${path}` };
    // paths relative to the workspace, so they can go straight into read_file
    const shown = matches.map((file) => workspacePath(ctx.cwd, join(abs, file)));
    let output = truncateHead(shown.join('\n'), 'narrow the pattern or path', { maxLines: MAX_RESULTS });
    if (listing.truncated) output += `\n[listing stopped at ${listing.files.length} files; narrow the path]`;
    return { output };
  },
};
