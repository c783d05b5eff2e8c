/** The bubblewrap sandbox: read-only host, the writable scope minus git internals, private /tmp, no network. */
import { existsSync, lstatSync, readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { runArgv } from './exec.js';
import type { HostLimits } from './sandbox-limits.js';
import { isInside } from './scope.js';

/** HOME inside the sandbox: on the private /tmp, so tools that write caches there neither fail nor leak. */
export const SANDBOX_HOME = '/tmp/home';

/** What the sandbox exposes; all paths canonical. */
export interface BwrapLayout {
  root: string;
  writable: string[];
  /** Paths bound read-only over the writable ones (must exist). */
  readOnly: string[];
  network: boolean;
  /** As root, bwrap keeps every capability unless told otherwise, and the command could lift its rlimits. */
  dropCaps: boolean;
}

/**
 * Paths inside the writable scope that stay read-only, as they exist right now: `.git` (a folder, or a
 * worktree's file plus the git dirs it names), keel's project config, and any extra protected folders.
 */
export function protectedPaths(root: string, writable: string[], extra: string[] = []): string[] {
  const paths = new Set<string>();
  const add = (path: string): void => {
    if (existsSync(path)) paths.add(path);
  };
  for (const dir of new Set([root, ...writable])) {
    if (!writable.some((w) => isInside(dir, w))) continue;
    const git = resolve(dir, '.git');
    add(git);
    for (const linked of linkedGitDirs(git)) add(linked);
  }
  // scope.ts protects these at the root only
  add(resolve(root, '.keel'));
  add(resolve(root, 'keel.toml'));
  for (const dir of extra) add(dir);
  return [...paths].sort();
}

// A worktree's or submodule's `.git` file points at its real git dir, which points at the shared one
function linkedGitDirs(gitFile: string): string[] {
  try {
    if (!lstatSync(gitFile).isFile()) return [];
    const gitdir = /^gitdir:\s*(.+)$/m.exec(readFileSync(gitFile, 'utf8'))?.[1]?.trim();
    if (!gitdir) return [];
    const dir = resolve(dirname(gitFile), gitdir);
    const common = readFirstLine(resolve(dir, 'commondir'));
    return common ? [dir, resolve(dir, common)] : [dir];
  } catch {
    return [];
  }
}

function readFirstLine(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8').split('\n')[0]?.trim() || undefined;
  } catch {
    return undefined;
  }
}

/** The bwrap arguments (without the program) that run `command` inside `layout`. */
export function bwrapArgs(layout: BwrapLayout, command: string[]): string[] {
  const args = ['--unshare-all'];
  if (layout.network) args.push('--share-net');
  // --die-with-parent: if keel dies the namespace's init gets SIGKILL, and with it every process inside
  // --new-session: no access to keel's terminal (TIOCSTI could type commands into it)
  args.push('--die-with-parent', '--new-session');
  if (layout.dropCaps) args.push('--cap-drop', 'ALL');
  args.push(
    '--ro-bind',
    '/',
    '/',
    '--dev',
    '/dev',
    '--proc',
    '/proc',
    '--tmpfs',
    '/tmp',
    '--dir',
    SANDBOX_HOME,
  );
  // mounts apply in order, so the root (which may itself live under /tmp) first, then the writable
  // scope from the outermost folder in, then the read-only exceptions on top
  if (!layout.writable.some((w) => isInside(layout.root, w)))
    args.push('--ro-bind', layout.root, layout.root);
  const writable = layout.writable.filter((w) => existsSync(w)).sort((a, b) => a.length - b.length);
  for (const dir of writable) args.push('--bind', dir, dir);
  for (const path of layout.readOnly) args.push('--ro-bind', path, path);
  args.push('--chdir', layout.root, '--', ...command);
  return args;
}

const probes = new Map<string, Promise<string | undefined>>();

/** Check once per binary that bwrap can build this sandbox here; resolves to why not, or undefined. */
export function probeBwrap(bin: string): Promise<string | undefined> {
  let probe = probes.get(bin);
  if (!probe) {
    probe = runProbe(bin);
    probes.set(bin, probe);
  }
  return probe;
}

async function runProbe(bin: string): Promise<string | undefined> {
  const args = bwrapArgs(
    { root: '/', writable: [], readOnly: [], network: false, dropCaps: process.getuid?.() === 0 },
    ['/bin/true'],
  );
  try {
    const result = await runArgv([bin, ...args], {
      cwd: '/',
      env: { PATH: '/usr/bin:/bin' },
      timeoutS: 10,
      signal: new AbortController().signal,
      maxOutputBytes: 4096,
    });
    if (result.exitCode === 0) return undefined;
    const why = result.stderr.trim() || (result.timedOut ? 'timed out' : `exit code ${result.exitCode}`);
    return `bwrap cannot create a sandbox here: ${why}`;
  } catch (err) {
    return `bwrap cannot be started: ${(err as Error).message}`;
  }
}

/** Spawn a command inside bubblewrap under the host limits. */
export interface BwrapRunner {
  run(
    argv: string[],
    env: NodeJS.ProcessEnv,
    timeoutS: number,
    signal: AbortSignal,
  ): ReturnType<typeof runArgv>;
}

/** A runner for one session's layout; protected paths are recomputed per command so a new `.git` counts. */
export function bwrapRunner(
  bin: string,
  layout: Omit<BwrapLayout, 'readOnly'>,
  limits: HostLimits,
  extraProtected: string[],
): BwrapRunner {
  return {
    run(argv, env, timeoutS, signal) {
      const readOnly = protectedPaths(layout.root, layout.writable, extraProtected);
      const args = bwrapArgs({ ...layout, readOnly }, argv);
      return limits.run([bin, ...args], { cwd: layout.root, env, timeoutS, signal });
    },
  };
}
