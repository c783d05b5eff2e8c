/** write_file: create or overwrite a whole file atomically, creating its parent folders. */
import { mkdir, readFile, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { z } from 'zod';
import { hasBinaryExtension } from './binary.js';
import { countDiffLines, writeAtomic } from './file-change.js';
import { workspacePath } from './files.js';
import { type Tool, ToolError } from './types.js';

const MAX_DIFF_BYTES = 5 * 1024 * 1024;

const schema = z.object({
  path: z.string(),
  content: z.string(),
});

/** The write_file tool. */
export const writeFileTool: Tool<typeof schema> = {
  name: 'write_file',
  description:
    'Create or overwrite a file with content, creating parent folders. To change part of a file, use edit_file.',
  effect: 'write',
  schema,
  paths: (args) => [{ path: args.path, access: 'write' }],
  async execute(args, ctx) {
    // resolve checks the whole parent chain, including folders that do not exist yet
    const abs = ctx.resolve(args.path, 'write');
    const existing = await stat(abs).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return null;
      throw err;
    });
    if (existing && !existing.isFile()) throw new ToolError(`${args.path} exists and is not a regular file`);
    // the old text is only needed for the diff count; a huge or binary file counts as all-new
    const comparable = existing && existing.size <= MAX_DIFF_BYTES && !hasBinaryExtension(abs);
    const before = comparable ? await readFile(abs, 'utf8') : '';
    const shown = workspacePath(ctx.cwd, abs);
    if (existing && comparable && before === args.content) {
      return { output: `${shown} already has this content; nothing written` };
    }

    await mkdir(dirname(abs), { recursive: true });
    await writeAtomic(abs, args.content, existing ? existing.mode & 0o7777 : undefined);

    const diff = countDiffLines(before, args.content);
    const diffLines = diff.added + diff.removed;
    if (!existing) {
      return { output: `Created ${shown} (${diff.added} lines)`, filesChanged: [shown], diffLines };
    }
    return {
      output: `Overwrote ${shown} (+${diff.added} -${diff.removed} lines)`,
      filesChanged: [shown],
      diffLines,
    };
  },
};
