/** list_dir: a directory tree to a depth, gitignored entries hidden, folders marked with a trailing `/`. */
import * as z from 'zod';
import { listFiles, statExisting, workspacePath } from './files.js';
import { truncateHead } from './truncate.js';
import { type Tool, ToolError } from './types.js';

const DEFAULT_DEPTH = 2;
const MAX_DEPTH = 5;
// A tree longer than this tells a model less than listing a subfolder would
const MAX_ENTRIES = 500;

const schema = z.object({
  path: z.string().optional(),
  depth: z.coerce.number().min(1).optional().describe('default 2, max 5'),
});

interface DirNode {
  dirs: Map<string, DirNode>;
  files: string[];
  /** Files anywhere below this folder. */
  count: number;
}

const newNode = (): DirNode => ({ dirs: new Map(), files: [], count: 0 });

/** The list_dir tool. */
export const listDirTool: Tool<typeof schema> = {
  name: 'list_dir',
  description: 'List a folder as a tree, gitignored entries hidden.',
  effect: 'read',
  schema,
  paths: (args) => [{ path: args.path ?? '.', access: 'read' }],
  async execute(args, ctx) {
    const path = args.path ?? '.';
    const abs = ctx.resolve(path, 'read');
    const info = await statExisting(abs, path);
    if (!info.isDirectory()) throw new ToolError(`${path} is a file; use read_file to read it`);
    const depth = Math.min(Math.max(Math.floor(args.depth ?? DEFAULT_DEPTH), 1), MAX_DEPTH);

    const listing = await listFiles(abs, { signal: ctx.signal, maxDepth: depth });
    const root = newNode();
    for (const dir of listing.dirs) nodeAt(root, dir.split('/'), false);
    for (const file of listing.files) {
      const parts = file.split('/');
      const name = parts.pop() ?? file;
      nodeAt(root, parts, true).files.push(name);
    }

    const lines = [`${workspacePath(ctx.cwd, abs)}/`];
    render(root, 1, depth, lines);
    if (lines.length === 1) return { output: `${lines[0]} (empty, or every entry is gitignored)` };
    let output = truncateHead(lines.join('\n'), 'list a subfolder or lower the depth', {
      maxLines: MAX_ENTRIES,
    });
    if (listing.truncated) output += `\n[listing stopped at ${listing.files.length} files]`;
    return { output };
  },
};

/** The node for a folder path, created if new; `addFile` counts one more file below each folder on the way. */
function nodeAt(root: DirNode, parts: string[], addFile: boolean): DirNode {
  const step = addFile ? 1 : 0;
  let node = root;
  node.count += step;
  for (const part of parts) {
    let child = node.dirs.get(part);
    if (!child) {
      child = newNode();
      node.dirs.set(part, child);
    }
    node = child;
    node.count += step;
  }
  return node;
}

function render(node: DirNode, level: number, depth: number, out: string[]): void {
  const indent = '  '.repeat(level);
  for (const name of [...node.dirs.keys()].sort()) {
    const child = node.dirs.get(name);
    if (!child) continue;
    if (level >= depth) {
      out.push(child.count > 0 ? `${indent}${name}/ (${child.count} files)` : `${indent}${name}/`);
      continue;
    }
    out.push(`${indent}${name}/`);
    render(child, level + 1, depth, out);
  }
  for (const name of node.files.sort()) out.push(`${indent}${name}`);
}
