/**
 * write_file: create or overwrite a whole file atomically, creating its parent folders. An existing
 * file keeps its encoding and BOM (UTF-16, Latin-1, ...); content that encoding cannot hold is refused.
 */
import * as z from 'zod';
import { type HeldFile, openHeld } from '../policy/held-path.js';
import { hasBinaryExtension } from './binary.js';
import { countDiffLines, fileSha256, sha256, writeAtomic } from './file-change.js';
import { workspacePath } from './files.js';
import {
  binaryReason,
  decodeFile,
  detectEncoding,
  encodeText,
  encodingLabel,
  readHead,
  type TextEncoding,
  unrepresentable,
} from './text-encoding.js';
import { type Tool, type ToolContext, ToolError, type ToolResult } from './types.js';
import { unifiedDiff } from './unified-diff.js';

const MAX_DIFF_BYTES = 5 * 1024 * 1024;
// A file too big to diff still gets its encoding from its head
const SNIFF_BYTES = 64 * 1024;

const schema = z.object({
  path: z.string(),
  content: z.string(),
});

/** What the existing file holds: its encoding, and its bytes and text when small enough to compare. */
interface Existing {
  encoding: TextEncoding;
  bytes?: Buffer;
  text: string;
}

/** The write_file tool. */
export const writeFileTool: Tool<typeof schema> = {
  name: 'write_file',
  description: 'Create or overwrite a whole file; edit_file changes part of one.',
  effect: 'write',
  schema,
  paths: (args) => [{ path: args.path, access: 'write' }],
  async preview(args, ctx) {
    const p = await prepare(args, ctx);
    return { path: p.shown, diff: p.unchanged ? '' : diffOf(p) };
  },
  async intend(args, ctx) {
    const p = await prepare(args, ctx);
    // a file too big to hold in memory is hashed from the disk: the before is what is there now
    const before = p.existed ? (p.existing.bytes ? sha256(p.existing.bytes) : fileSha256(p.abs)) : null;
    return { files: [{ path: p.shown, before, after: sha256(p.bytes) }], result: resultOf(p) };
  },
  async execute(args, ctx) {
    const p = await prepare(args, ctx);
    if (p.unchanged) return resultOf(p);
    // missing folders are made, and the file written, in held folders (see held-path.ts)
    await writeAtomic(p.abs, p.bytes, p.mode, true);
    return resultOf(p);
  },
};

/** What a write returns once it has written (or found the content already there). */
function resultOf(p: Prepared): ToolResult {
  if (p.unchanged) return { output: `${p.shown} already has this content; nothing written` };
  const diff = countDiffLines(p.existing.text, p.content);
  const diffLines = diff.added + diff.removed;
  if (!p.existed) {
    return {
      output: `Created ${p.shown} (${diff.added} lines)`,
      filesChanged: [p.shown],
      diffLines,
      outcome: { added: diff.added, removed: 0 },
      diff: diffOf(p),
    };
  }
  const kept =
    p.existing.encoding === 'utf-8' ? '' : `; kept its encoding, ${encodingLabel(p.existing.encoding)}`;
  return {
    output: `Overwrote ${p.shown} (+${diff.added} -${diff.removed} lines${kept})`,
    filesChanged: [p.shown],
    diffLines,
    outcome: { added: diff.added, removed: diff.removed },
    diff: diffOf(p),
  };
}

/** A write worked out but not done: what execute writes, and what preview shows a person first. */
interface Prepared {
  abs: string;
  shown: string;
  existed: boolean;
  existing: Existing;
  content: string;
  bytes: Buffer;
  mode: number | undefined;
  unchanged: boolean;
}

async function prepare(args: z.infer<typeof schema>, ctx: ToolContext): Promise<Prepared> {
  // resolve checks the whole parent chain, including folders that do not exist yet
  const abs = ctx.resolve(args.path, 'write');
  const file = await openHeld(abs);
  let existing: Existing = { encoding: 'utf-8', text: '' };
  if (file) {
    try {
      if (!file.stats.isFile()) throw new ToolError(`${args.path} exists and is not a regular file`);
      existing = await inspect(file);
      file.recheck();
    } finally {
      await file.close();
    }
  }
  const info = file?.stats;
  const { encoding } = existing;
  // read_file never shows a BOM; one the model copies anyway must not be doubled
  const content =
    encoding !== 'utf-8' && encoding !== 'latin1' && args.content.startsWith('\uFEFF')
      ? args.content.slice(1)
      : args.content;
  const bad = unrepresentable(content, encoding);
  if (bad) {
    const why = info
      ? `${args.path} is ${encodingLabel(encoding)} and write_file keeps an existing file's encoding`
      : 'UTF-8 cannot store it';
    throw new ToolError(
      `content has ${bad}, which cannot be written: ${why}. Leave the character out or write it as an escape the file's language understands`,
    );
  }
  const bytes = encodeText(content, encoding);
  return {
    abs,
    shown: workspacePath(ctx.cwd, abs),
    existed: info !== undefined,
    existing,
    content,
    bytes,
    mode: info ? info.mode & 0o7777 : undefined,
    unchanged: existing.bytes?.equals(bytes) ?? false,
  };
}

/** The change as a person reads it; a binary or huge file being replaced is named, not diffed. */
function diffOf(p: Prepared): string {
  if (p.existed && !p.existing.bytes)
    return `${p.shown}: a binary or very large file is replaced (${p.bytes.length} bytes)`;
  if (p.existed && p.existing.text === '' && p.existing.bytes?.length)
    return `${p.shown}: a binary file is replaced (${p.bytes.length} bytes)`;
  return unifiedDiff(p.shown, p.existed ? p.existing.text : null, p.content);
}

/**
 * The existing file's encoding and, for the diff count, its text. A binary file is replaced by the
 * content as UTF-8 and counts as all-new; so does a huge one, whose encoding comes from its head.
 */
async function inspect(file: HeldFile): Promise<Existing> {
  if (hasBinaryExtension(file.path)) return { encoding: 'utf-8', text: '' };
  if (file.stats.size <= MAX_DIFF_BYTES) {
    const bytes = await file.handle.readFile();
    const decoded = decodeFile(bytes);
    if ('binary' in decoded) return { encoding: 'utf-8', bytes, text: '' };
    return { encoding: decoded.encoding, bytes, text: decoded.text };
  }
  const head = await readHead(file.handle, SNIFF_BYTES);
  const encoding = detectEncoding(head.bytes, head.complete);
  return { encoding: binaryReason(head.bytes, encoding) ? 'utf-8' : encoding, text: '' };
}
