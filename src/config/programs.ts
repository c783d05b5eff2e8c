/**
 * The programs a config runs on the host that lie in the workspace: a hook's or a stdio MCP server's
 * command, and every argument that names a file there (`command = ["node", "tools/docs-server.js"]`).
 * Trusting a project config trusts them as they are (their hashes are in the trust record); a session
 * keeps them read-only and runs one only while it is still what was checked at start.
 *
 * Which arguments count, kept simple and on the safe side: the command itself when it has a `/` or PATH
 * leads into the workspace, and any argument not starting with `-` that is a file in the workspace, or
 * that looks like a path (has a `/`) and does not exist yet (then "absent" is what is trusted). A folder
 * argument (`node tools/server`) and the modules a script imports are not covered: keep such code in
 * `.keel/`, which no session may write.
 */
import { createHash } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { delimiter, isAbsolute, relative, resolve, sep } from 'node:path';

/** One file a config runs, as found now. */
export interface Program {
  /** Absolute path in the workspace, as the config names it (links not followed). */
  path: string;
  /** The same path relative to the workspace: what people see, and how a copy of the workspace finds it. */
  name: string;
  /** Who runs it, for people: `a PreToolUse hook`, `mcp server "docs"`. */
  by: string;
  /** The argv that names it. */
  argv: readonly string[];
  /** sha256 of its bytes; null when there is no such file; `not a file` for a folder or anything else. */
  sha256: string | null;
}

const NOT_A_FILE = 'not a file';

/** sha256 of a program's bytes, null when absent (links followed, as the program is run). */
export function programHash(path: string): string | null {
  try {
    if (!statSync(path).isFile()) return NOT_A_FILE;
    return createHash('sha256').update(readFileSync(path)).digest('hex');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return code === 'ENOENT' || code === 'ENOTDIR' ? null : NOT_A_FILE;
  }
}

/** Hashes taken once per load, so the trust check and the session's pins agree on one reading. */
export type HashCache = Map<string, string | null>;

function hashed(path: string, cache: HashCache): string | null {
  if (!cache.has(path)) cache.set(path, programHash(path));
  return cache.get(path) ?? null;
}

/** The programs in the workspace `root` that these config values (raw or validated) run, hashed now. */
export function configPrograms(
  values: { hooks?: unknown; mcp_servers?: unknown },
  root: string,
  pathEnv: string | undefined,
  cache: HashCache = new Map(),
): Program[] {
  const found: Program[] = [];
  const add = (argv: unknown, by: string) => {
    if (!Array.isArray(argv) || !argv.every((a) => typeof a === 'string')) return;
    for (const path of programPaths(argv, root, pathEnv))
      if (!found.some((p) => p.path === path && p.by === by))
        found.push({ path, name: relative(root, path), by, argv, sha256: hashed(path, cache) });
  };
  for (const hook of list(values.hooks)) add(hook.command, `a ${String(hook.event ?? '')} hook`.trim());
  for (const server of list(values.mcp_servers))
    add(server.command, `mcp server ${JSON.stringify(String(server.name ?? ''))}`);
  return found;
}

/** The programs among `programs` that an argv runs (a hook's or a server's own). */
export function programsOf(argv: readonly string[], programs: readonly Program[]): Program[] {
  const key = JSON.stringify(argv);
  return programs.filter((p) => JSON.stringify(p.argv) === key);
}

/** The programs that are no longer what was hashed (changed, replaced, removed or created). */
export function changedPrograms(programs: readonly Program[]): Program[] {
  return programs.filter((p) => programHash(p.path) !== p.sha256);
}

/**
 * The programs a session in `root` runs, held to the hashes keel checked at load (`loaded`, found in the
 * workspace the config was loaded for): a session in a copy of it (a fix worktree) runs its copy's files,
 * which must be what was checked; a file that changed since the check is held to the old hash, so it does not run.
 */
export function sessionPrograms(
  values: { hooks?: unknown; mcp_servers?: unknown },
  root: string,
  pathEnv: string | undefined,
  loaded: readonly Program[] | undefined,
): Program[] {
  const checked = new Map((loaded ?? []).map((p) => [p.name, p.sha256]));
  return configPrograms(values, root, pathEnv).map((p) =>
    checked.has(p.name) ? { ...p, sha256: checked.get(p.name) ?? null } : p,
  );
}

function list(v: unknown): Array<Record<string, unknown>> {
  return Array.isArray(v)
    ? v.filter((e): e is Record<string, unknown> => typeof e === 'object' && e !== null)
    : [];
}

function programPaths(argv: string[], root: string, pathEnv: string | undefined): string[] {
  const paths: string[] = [];
  const [command, ...args] = argv;
  if (command !== undefined) {
    const where = command.includes('/') ? resolve(root, command) : onPath(command, root, pathEnv);
    if (where !== undefined && within(where, root)) paths.push(where);
  }
  for (const arg of args) {
    if (arg.startsWith('-') || arg === '') continue;
    const where = resolve(root, arg);
    if (!within(where, root) || where === root) continue;
    const hash = programHash(where);
    if (hash === NOT_A_FILE) continue;
    if (hash !== null || arg.includes('/')) paths.push(where);
  }
  return paths;
}

// A bare command name found on PATH; a relative PATH entry (`.`, `node_modules/.bin`) counts from the workspace
function onPath(name: string, root: string, pathEnv: string | undefined): string | undefined {
  for (const dir of (pathEnv ?? '').split(delimiter)) {
    const candidate = resolve(root, dir || '.', name);
    try {
      if (statSync(candidate).isFile()) return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

function within(path: string, root: string): boolean {
  const rel = relative(root, path);
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel));
}
