/** grep: search file contents with a JavaScript regex, skipping gitignored, binary and very large files. */
import { join } from 'node:path';
import * as z from 'zod';
import { openHeld } from '../policy/held-path.js';
import { ScopeError } from '../policy/scope.js';
import { hasBinaryExtension } from './binary.js';
import { globMatcher, listFiles, statExisting, workspacePath } from './files.js';
import { binaryReason, bomBytes, decodeBody, detectEncoding } from './text-encoding.js';
import { clipLine, LineWindow, truncationMarker } from './truncate.js';
import { type Tool, ToolError } from './types.js';

const MAX_MATCHES = 300;
// A matching line from minified code is noise past this
const MAX_LINE_CHARS = 300;
const MAX_FILE_BYTES = 5 * 1024 * 1024;

const schema = z.object({
  pattern: z.string().describe('JavaScript regex'),
  path: z.string().optional().describe('file or folder, default .'),
  glob: z.string().optional().describe('file filter, e.g. *.ts'),
  ignore_case: z.boolean().optional(),
});

/** The grep tool. */
export const grepTool: Tool<typeof schema> = {
  name: 'grep',
  description: 'Search file contents by regex; prints path:line: text per match.',
  effect: 'read',
  schema,
  paths: (args) => [{ path: args.path ?? '.', access: 'read' }],
  async execute(args, ctx) {
    const flags = args.ignore_case ? 'i' : '';
    let regex: RegExp;
    try {
      regex = new RegExp(args.pattern, flags);
    } catch (err) {
      throw new ToolError(
        `${(err as Error).message}. Escape regex characters like ( [ { . * + ? with a backslash`,
      );
    }
    // whole-file test first: most files do not match, and splitting them into lines is the cost
    const prefilter = new RegExp(args.pattern, `${flags}m`);

    const path = args.path ?? '.';
    const abs = ctx.resolve(path, 'read');
    const info = await statExisting(abs, path);
    let targets = [abs];
    let listingCut = false;
    if (info.isDirectory()) {
      const listing = await listFiles(abs, { signal: ctx.signal });
      const wanted = args.glob ? await globMatcher(args.glob) : () => true;
      targets = listing.files.filter(wanted).map((file) => join(abs, file));
      listingCut = listing.truncated;
    }

    const window = new LineWindow({ maxLines: MAX_MATCHES });
    const skipped = { large: 0, outside: 0 };
    for (const target of targets) {
      ctx.signal.throwIfAborted();
      if (window.cutBy) break;
      if (targets.length > 1 && hasBinaryExtension(target)) continue;
      let real = target;
      if (target !== abs) {
        // a listed symlink may point out of scope; skip that one file instead of failing the search
        try {
          real = ctx.resolve(target, 'read');
        } catch {
          skipped.outside++;
          continue;
        }
      }
      let buf: Buffer | undefined;
      try {
        buf = await contents(real, skipped);
      } catch (err) {
        // a listed file whose folder became a symlink meanwhile is skipped like one outside from the start
        if (target === abs || !(err instanceof ScopeError)) throw err;
        skipped.outside++;
        continue;
      }
      if (!buf) continue;
      // decoded as read_file decodes it: a Latin-1 or UTF-16 file is searched as the text it holds
      const encoding = detectEncoding(buf);
      if (binaryReason(buf, encoding)) continue;
      const text = decodeBody(buf.subarray(bomBytes(encoding).length), encoding);
      // `$` in multiline mode does not match before \r, so CRLF files skip the prefilter
      if (!text.includes('\r') && !prefilter.test(text)) continue;
      const shown = workspacePath(ctx.cwd, target);
      const lines = text.split('\n');
      for (let i = 0; i < lines.length; i++) {
        const line = (lines[i] ?? '').replace(/\r$/, '');
        if (!regex.test(line)) continue;
        if (!window.add(`${shown}:${i + 1}: ${clipLine(line, MAX_LINE_CHARS)}`)) break;
      }
    }

    const notes: string[] = [];
    if (window.cutBy) {
      const shown = `showing the first ${window.lines.length} matches`;
      notes.push(truncationMarker(shown, 'narrow the pattern, path or glob', window.limitText()));
    }
    if (skipped.large > 0) notes.push(`[skipped ${skipped.large} files over 5 MB]`);
    if (skipped.outside > 0) notes.push(`[skipped ${skipped.outside} files outside the allowed scope]`);
    if (listingCut) notes.push('[listing stopped at the file cap; narrow the path]');
    const body =
      window.lines.length > 0 ? window.lines.join('\n') : `No matches for /${args.pattern}/ in ${path}`;
    return { output: [body, ...notes].join('\n') };
  },
};

/**
 * A file's bytes, read through held folders (see held-path.ts) and rechecked, so a folder swapped for a
 * symlink after the scope check cannot make grep read outside it; undefined for what grep passes over.
 */
async function contents(path: string, skipped: { large: number }): Promise<Buffer | undefined> {
  const file = await openHeld(path);
  if (!file) return undefined;
  try {
    if (!file.stats.isFile()) return undefined;
    if (file.stats.size > MAX_FILE_BYTES) {
      skipped.large++;
      return undefined;
    }
    const bytes = await file.handle.readFile();
    file.recheck();
    return bytes;
  } finally {
    await file.close();
  }
}
