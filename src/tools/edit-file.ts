/** edit_file: exact string replacement in one file, refusing ambiguous or no-op edits with a hint. */
import * as z from 'zod';
import { openHeld } from '../policy/held-path.js';
import { hasBinaryExtension } from './binary.js';
import { countDiffLines, sha256, writeAtomic } from './file-change.js';
import { workspacePath } from './files.js';
import {
  decodeFile,
  EncodingError,
  encodeText,
  encodingLabel,
  type TextEncoding,
  unrepresentable,
} from './text-encoding.js';
import { type Tool, type ToolContext, ToolError, type ToolResult } from './types.js';
import { unifiedDiff } from './unified-diff.js';

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
    'Replace text in a file you have read: old_string must match exactly, once unless replace_all.',
  effect: 'write',
  schema,
  paths: (args) => [{ path: args.path, access: 'write' }],
  async preview(args, ctx) {
    const p = await prepare(args, ctx);
    return { path: p.shown, diff: unifiedDiff(p.shown, p.before, p.after) };
  },
  async intend(args, ctx) {
    const p = await prepare(args, ctx);
    return {
      files: [{ path: p.shown, before: sha256(p.original), after: sha256(p.bytes) }],
      result: resultOf(p, args),
    };
  },
  async execute(args, ctx) {
    const p = await prepare(args, ctx);
    await writeAtomic(p.abs, p.bytes, p.mode);
    return resultOf(p, args);
  },
};

function resultOf(p: Awaited<ReturnType<typeof prepare>>, args: z.infer<typeof schema>): ToolResult {
  const diff = countDiffLines(p.before, p.after);
  const replacements = args.replace_all ? p.count : 1;
  return {
    output: `Edited ${p.shown}: ${replacements} replacement${replacements === 1 ? '' : 's'} (+${diff.added} -${diff.removed} lines)`,
    filesChanged: [p.shown],
    diffLines: diff.added + diff.removed,
    outcome: { added: diff.added, removed: diff.removed },
    diff: unifiedDiff(p.shown, p.before, p.after),
  };
}

/** An edit worked out but not written: what execute writes, and what preview shows a person first. */
async function prepare(args: z.infer<typeof schema>, ctx: ToolContext) {
  if (args.old_string === '') {
    throw new ToolError('old_string is empty; use write_file to create or overwrite a whole file');
  }
  if (args.old_string === args.new_string) {
    throw new ToolError('old_string and new_string are identical; nothing would change');
  }
  const abs = ctx.resolve(args.path, 'write');
  const { info, bytes } = await readWhole(abs, args.path);
  // edited in the file's own encoding, so every byte outside the replaced text stays as it was
  const decoded = decodeFile(bytes);
  if ('binary' in decoded) {
    throw new ToolError(`${args.path} is a binary file (${decoded.binary}); edit_file only edits text`);
  }
  const { encoding, text: before } = decoded;
  const label = encodingLabel(encoding);
  const { oldText, newText, count } = matchLineEndings(before, args.old_string, args.new_string);
  if (count === 0) {
    const read = encoding === 'utf-8' ? '' : ` (read as ${label})`;
    throw new ToolError(
      `old_string not found in ${args.path}${read}. Re-read the file with read_file and copy the exact text, including indentation`,
    );
  }
  if (count > 1 && !args.replace_all) {
    throw new ToolError(
      `old_string matches ${count} places in ${args.path}; include more surrounding lines to make it unique, or set replace_all=true`,
    );
  }
  const bad = unrepresentable(newText, encoding);
  if (bad) {
    throw new ToolError(
      `new_string has ${bad}, which ${args.path} cannot hold: it is ${label}, and edit_file keeps a file's encoding so no other byte changes. Leave the character out or write it as an escape the file's language understands`,
    );
  }
  // split/join and slicing, not String.replace: `$&` and friends in new_string must stay literal
  const after = args.replace_all
    ? before.split(oldText).join(newText)
    : spliceFirst(before, oldText, newText);
  return {
    abs,
    shown: workspacePath(ctx.cwd, abs),
    before,
    after,
    count,
    original: bytes,
    bytes: encodeEdit(after, encoding, args.path),
    mode: info.mode & 0o7777,
  };
}

/** The file's bytes, read through held folders (see held-path.ts) and rechecked, with its fstat. */
async function readWhole(abs: string, shown: string) {
  const file = await openHeld(abs);
  if (!file) throw new ToolError(`${shown} does not exist; use write_file to create it`);
  try {
    if (!file.stats.isFile()) throw new ToolError(`${shown} is not a regular file`);
    if (hasBinaryExtension(abs)) throw new ToolError(`${shown} is a binary file; edit_file only edits text`);
    const bytes = await file.handle.readFile();
    file.recheck();
    return { info: file.stats, bytes };
  } finally {
    await file.close();
  }
}

/** The edited text in the file's encoding; an edit that would split a character is refused. */
function encodeEdit(text: string, encoding: TextEncoding, shown: string): Buffer {
  try {
    return encodeText(text, encoding);
  } catch (err) {
    if (!(err instanceof EncodingError)) throw err;
    // only reachable when old_string cut a surrogate pair in half
    throw new ToolError(
      `the edit would split a character in ${shown} (${err.message}); include the whole character`,
    );
  }
}

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
