/**
 * The bubblewrap sandbox: an empty root with the system folders and toolchains read-only, the workspace
 * read-only, the writable scope minus git internals and keel config, private size-capped /tmp, no network.
 */
import { existsSync, lstatSync, readFileSync, realpathSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { type OutputListener, runArgv } from './exec.js';
import type { HostLimits } from './sandbox-limits.js';
import { hideMounts, LAYER, type Mount, mountArgs, systemMounts } from './sandbox-mounts.js';
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
  /** System folders and toolchains, read-only (`hostView().mounts`). */
  host: Mount[];
  /** Host paths covered wherever a visible folder would show them (`hostView().hidden`). */
  hidden: string[];
  /** Size cap of the private /tmp and of /dev/shm, in bytes. */
  tmpBytes: number;
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
  const host = LAYER.host;
  // a workspace at / (the probe) already shows the system folders; binding them again would collide
  const visible = [layout.root, ...layout.writable];
  const mounts: Mount[] = [
    ...layout.host.filter((m) => !visible.some((v) => isInside(m.path, v))),
    { kind: 'dev', path: '/dev', layer: host },
    { kind: 'proc', path: '/proc', layer: host },
    { kind: 'tmpfs', path: '/tmp', sizeBytes: layout.tmpBytes, layer: host },
    // /dev/shm is bwrap's /dev tmpfs otherwise, with no cap at all
    { kind: 'tmpfs', path: '/dev/shm', sizeBytes: layout.tmpBytes, layer: host },
    { kind: 'dir', path: SANDBOX_HOME, layer: host },
  ];
  if (layout.network) mounts.push(...resolvConf());
  if (!layout.writable.some((w) => isInside(layout.root, w)))
    mounts.push({ kind: 'ro-bind', path: layout.root, layer: LAYER.root });
  for (const dir of layout.writable)
    if (existsSync(dir)) mounts.push({ kind: 'bind', path: dir, layer: LAYER.writable });
  for (const path of layout.readOnly) {
    mounts.push({ kind: 'ro-bind', path, layer: LAYER.readOnly });
    // a mount point cannot be renamed or removed: each writable folder above it is bound onto itself, so
    // `mv tools tools.old && mkdir tools` cannot swap in a new file where the protected one was
    // (never one inside a read-only or hidden path: binding it writable would show it again)
    for (const dir of foldersAbove(path, layout.writable))
      if (![...layout.readOnly, ...layout.hidden].some((p) => isInside(dir, p)))
        mounts.push({ kind: 'bind', path: dir, layer: LAYER.writable });
  }
  // tools that write to /var/tmp find the private /tmp there (unless the host's /var is bound)
  if (!mounts.some((m) => m.kind === 'ro-bind' && isInside('/var/tmp', m.path)))
    mounts.push({ kind: 'symlink', path: '/var/tmp', target: '/tmp', layer: host });
  mounts.push(...hideMounts(layout.hidden, mounts, [layout.root, ...layout.writable]));
  args.push(...mountArgs(mounts), '--chdir', layout.root, '--', ...command);
  return args;
}

/** The folders between a path and the writable folder it lies in, both excluded: empty when it is not in one. */
function foldersAbove(path: string, writable: string[]): string[] {
  const top = writable.filter((w) => isInside(path, w) && path !== w).sort((a, b) => b.length - a.length)[0];
  const dirs: string[] = [];
  if (top === undefined) return dirs;
  for (let dir = dirname(path); dir !== top && isInside(dir, top); dir = dirname(dir)) dirs.push(dir);
  return dirs;
}

// With the network on, a resolv.conf that links into /run (systemd-resolved) must still resolve
function resolvConf(): Mount[] {
  try {
    if (!lstatSync('/etc/resolv.conf').isSymbolicLink()) return [];
    const target = realpathSync.native('/etc/resolv.conf');
    return isInside(target, '/etc') || isInside(target, '/usr')
      ? []
      : [{ kind: 'ro-bind', path: target, layer: LAYER.host }];
  } catch {
    return [];
  }
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
  const layout: BwrapLayout = {
    root: '/',
    writable: [],
    readOnly: [],
    network: false,
    dropCaps: process.getuid?.() === 0,
    host: systemMounts(),
    hidden: [],
    tmpBytes: 1024 * 1024,
  };
  const args = bwrapArgs(layout, ['/bin/true']);
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
    onOutput?: OutputListener,
  ): ReturnType<typeof runArgv>;
}

/**
 * A runner for one session's layout; protected and hidden paths are recomputed per command, so a new
 * `.git` is protected and a KEEL_HOME created after the sandbox is still hidden.
 */
export function bwrapRunner(
  bin: string,
  layout: Omit<BwrapLayout, 'readOnly'>,
  limits: HostLimits,
  extraReadOnly: string[],
): BwrapRunner {
  return {
    run(argv, env, timeoutS, signal, onOutput) {
      const readOnly = protectedPaths(layout.root, layout.writable, extraReadOnly);
      const args = bwrapArgs({ ...layout, readOnly }, argv);
      return limits.run([bin, ...args], {
        cwd: layout.root,
        env,
        timeoutS,
        signal,
        ...(onOutput ? { onOutput } : {}),
      });
    },
  };
}
