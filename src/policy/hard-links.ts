/**
 * Hard links to protected files. The sandbox binds `.git`, keel's config and the programs a config runs
 * read-only, but a second name of the same file elsewhere in the workspace (a tarball can carry one) is an
 * ordinary writable file, and writing through it changes the protected one: `.git/config` gains a
 * `core.fsmonitor` that the user's own `git status` runs. Such a workspace is refused, not half-protected.
 */
import { lstatSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/** A protected file and how many names it has. */
export interface LinkedFile {
  path: string;
  links: number;
}

// git's object store: immutable files by content hash, hard-linked by every `git clone --local`
const SKIPPED = new Set(['objects', 'lfs']);

/** Every regular file under `paths` (files, or folders walked without following links) with more than one name. */
export function linkedProtectedFiles(paths: readonly string[]): LinkedFile[] {
  const found: LinkedFile[] = [];
  const seen = new Set<string>();
  const visit = (path: string): void => {
    if (seen.has(path)) return;
    seen.add(path);
    let stat: ReturnType<typeof lstatSync>;
    try {
      stat = lstatSync(path);
    } catch {
      return;
    }
    if (stat.isFile() && stat.nlink > 1) found.push({ path, links: stat.nlink });
    if (!stat.isDirectory()) return;
    let names: string[] = [];
    try {
      names = readdirSync(path);
    } catch {
      return;
    }
    for (const name of names) if (!SKIPPED.has(name)) visit(join(path, name));
  };
  for (const path of paths) visit(path);
  return found;
}

/** Why a workspace with hard-linked protected files cannot get a sandbox, and how to fix it; undefined when it has none. */
export function linkedFilesProblem(
  paths: readonly string[],
  root: string,
  shown: (p: string) => string,
): string | undefined {
  const linked = linkedProtectedFiles(paths);
  const first = linked[0];
  if (!first) return undefined;
  const list = linked.map((f) => `${shown(f.path)} has ${f.links} names (hard links)`).join('; ');
  return `refusing a session that runs commands here: ${list}, so a command could change it through another name in the workspace. Find the other names with \`find ${root} -samefile ${first.path}\` and remove them (or give the protected file a name of its own: cp -p FILE FILE.new && mv FILE.new FILE)`;
}
