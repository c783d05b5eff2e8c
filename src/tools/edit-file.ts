/** edit_file: exact string replacement in one file, refusing ambiguous or no-op edits with a hint. */
import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { isBinaryFile } from './binary.js';
import { countDiffLines, writeAtomic } from './file-change.js';
import { statExisting, workspacePath } from './files.js';
import { type Tool, ToolError } from './types.js';

const schema = z.object({
  path: z.string(),
  old_string: z.string().describe('exact text to replace'),
  new_string: z.string(),
  replace_all: z.boolean().optional(),
});

/** The edit_file tool. */
export const editFileTool: Tool<typeof schema> = {
  name: 'edit_file',
  description:
    'Replace exact text in a file. old_string must match the file exactly, whitespace included, and be unique unless replace_all is true. Read the file first.',
  effect: 'write',
  schema,
  paths: (args) => [{ path: args.path, access: 'write' }],
  async execute(args, ctx) {
    if (args.old_string === '') {
      throw new ToolError('old_string is empty; use write_file to create or overwrite a whole file');
    }
    if (args.old_string === args.new_string) {
      throw new ToolError('old_string and new_string are identical; nothing would change');
    }
    const abs = ctx.resolve(args.path, 'write');
    const info = await statExisting(abs, args.path, 'use write_file to create it');
    if (!info.isFile()) throw new ToolError(`${args.path} is not a regular file`);
    if (await isBinaryFile(abs))
      throw new ToolError(`${args.path} is a binary file; edit_file only edits text`);

    const before = await readFile(abs, 'utf8');
    const { oldText, newText, count } = matchLineEndings(before, args.old_string, args.new_string);
    if (count === 0) {
      throw new ToolError(
        `old_string not found in ${args.path}. Re-read the file with read_file and copy the exact text, including indentation`,
      );
    }
    if (count > 1 && !args.replace_all) {
      throw new ToolError(
        `old_string matches ${count} places in ${args.path}; include more surrounding lines to make it unique, or set replace_all=true`,
      );
    }
    // split/join and slicing, not String.replace: `$&` and friends in new_string must stay literal
    const after = args.replace_all
      ? before.split(oldText).join(newText)
      : spliceFirst(before, oldText, newText);
    await writeAtomic(abs, after, info.mode & 0o7777);

    const shown = workspacePath(ctx.cwd, abs);
    const diff = countDiffLines(before, after);
    const replacements = args.replace_all ? count : 1;
    return {
      output: `Edited ${shown}: ${replacements} replacement${replacements === 1 ? '' : 's'} (+${diff.added} -${diff.removed} lines)`,
      filesChanged: [shown],
      diffLines: diff.added + diff.removed,
    };
  },
};

/**
 * Models write `\n`; a CRLF file would then never match. Try the strings converted to the file's
 * line endings first, then as given (for files with mixed endings).
 */
function matchLineEndings(
  content: string,
  oldString: string,
  newString: string,
): { oldText: string; newText: string; count: number } {
  if (content.includes('\r\n')) {
    const toCrlf = (s: string) => s.replace(/\r?\n/g, '\r\n');
    const oldText = toCrlf(oldString);
    const count = countOccurrences(content, oldText);
    if (count > 0) return { oldText, newText: toCrlf(newString), count };
  }
  return { oldText: oldString, newText: newString, count: countOccurrences(content, oldString) };
}

function countOccurrences(content: string, needle: string): number {
  let count = 0;
  for (let at = content.indexOf(needle); at !== -1; at = content.indexOf(needle, at + needle.length)) count++;
  return count;
}

function spliceFirst(content: string, oldText: string, newText: string): string {
  const at = content.indexOf(oldText);
  return content.slice(0, at) + newText + content.slice(at + oldText.length);
}
