/**
 * The shell sandbox: where model-run commands execute. `bwrap` and `docker` confine writes to the scope
 * (minus `.git`), hide the network and cap resources; `bwrap` also hides the host's homes, sockets and
 * keel's state; `none` only caps resources. Every kind removes protected names a command created. A
 * sandbox asked for by name that cannot run here is an error, never a silent downgrade.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, realpathSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { keelPaths } from '../config/paths.js';
import type { SandboxKind } from '../config/schema.js';
import type { ExecResult } from './effects.js';
import { commandArgv, type OutputListener } from './exec.js';
import { linkedFilesProblem } from './hard-links.js';
import { programMounts } from './program-mounts.js';
import { snapshotProtected, sweepProtected } from './protected-names.js';
import { bwrapArgs, bwrapRunner, probeBwrap, protectedPaths, SANDBOX_HOME } from './sandbox-bwrap.js';
import { DEFAULT_DOCKER_IMAGE, DockerContainer, dockerLimitReport, probeDocker } from './sandbox-docker.js';
import {
  findProgram,
  formatLimits,
  HostLimits,
  type LimitReport,
  type SandboxLimits,
} from './sandbox-limits.js';
import { hostView, LAYER, type Mount } from './sandbox-mounts.js';
import { isInside } from './scope.js';

export type { LimitMechanism, LimitReport, LimitState, SandboxLimits } from './sandbox-limits.js';
export { proveSandbox, type SandboxProof } from './sandbox-proof.js';

/** A sandbox that actually runs commands (`auto` resolves to one of these). */
export type ResolvedSandboxKind = Exclude<SandboxKind, 'auto'>;

export interface SandboxRunOptions {
  timeoutS: number;
  signal: AbortSignal;
  /** The command's output as it arrives (the result still carries all of it, bounded). */
  onOutput?: OutputListener;
}

/** Runs one session's shell commands; create with `createSandbox`, end with `close`. */
export interface Sandbox {
  readonly kind: ResolvedSandboxKind;
  readonly root: string;
  readonly writable: readonly string[];
  readonly network: boolean;
  /** One paragraph for `keel doctor`: what is confined, which mechanism enforces each limit. */
  describe(): string;
  limits(): LimitReport;
  /** Run a shell string (`/bin/sh -c`) or an argv in the workspace root; never rejects on a failing command. */
  run(command: string | string[], opts: SandboxRunOptions): Promise<ExecResult>;
  /**
   * A long-lived process (an MCP server) confined like `run`'s commands: the argv, environment and folder to
   * spawn it with, and the cleanup once it exited. Only bwrap has one; elsewhere it is undefined.
   */
  spawnSpec?(argv: string[], extra?: SpawnExtra): SpawnSpec;
  close(): Promise<void>;
}

/** What a long-lived process gets besides what every command does. */
export interface SpawnExtra {
  /** Host folders it may also read: bound read-only, over anything the sandbox hides there (a plugin's own folder). */
  show?: readonly string[];
  /**
   * Variables for the process itself, set inside the sandbox: never in the environment of the programs that
   * build it on the host (bwrap, prlimit, the shell entering the cgroups), where LD_PRELOAD would run code.
   */
  env?: Record<string, string>;
}

/** How to spawn a confined long-lived process yourself (its stdio stays yours). */
export interface SpawnSpec {
  argv: string[];
  env: Record<string, string>;
  cwd: string;
  cleanup(): Promise<void>;
}

export interface SandboxOptions {
  kind: SandboxKind;
  /** The workspace root (canonical); commands start here. */
  root: string;
  /** The writable scope (canonical folders). */
  writable: string[];
  network: boolean;
  limits: SandboxLimits;
  /** keel's environment, from which the command's is filtered; defaults to `process.env`. */
  env?: NodeJS.ProcessEnv;
  /**
   * Paths inside the scope that stay read-only besides `.git` and keel's config. Those inside keel's state
   * folders (KEEL_HOME, or the XDG config and state folders of `env`) are hidden from bwrap instead.
   */
  protectedDirs?: string[];
  /**
   * Files no command may change: the programs keel's config runs on the host (hooks, unsandboxed MCP
   * servers) that lie in the workspace. Bound read-only with their folders pinned, so neither the file nor
   * a folder above it can be replaced or renamed away.
   */
  protectedFiles?: string[];
  /** Docker image for `kind: 'docker'`. */
  image?: string;
  /** More variables of `env` to pass through, by name (`sandbox_env`: the user's config or a trusted project). */
  passEnv?: string[];
}

/** A required sandbox that cannot run here; ends the run with ENVIRONMENT_ERROR. */
export class SandboxError extends Error {
  override name = 'SandboxError';
  readonly code = 'ENVIRONMENT_ERROR' as const;
}

// Everything else in keel's environment is dropped: API keys (KEEL_API_KEY, OPENAI_API_KEY, *_TOKEN,
// *_KEY, *_SECRET) must never reach a command the model wrote, and an allowlist cannot miss a new name
const KEPT_VARIABLES = ['PATH', 'LANG', 'LANGUAGE', 'TERM', 'TZ', 'USER', 'LOGNAME'];

/** The environment a sandboxed command sees: a short allowlist from `source`, plus HOME (and TMPDIR). */
export function sandboxEnv(
  source: NodeJS.ProcessEnv,
  home: string | undefined,
  opts: { path?: boolean; pass?: string[]; network?: boolean } = {},
): Record<string, string> {
  const env: Record<string, string> = {};
  const pass = opts.pass ?? [];
  for (const [key, value] of Object.entries(source)) {
    if (value === undefined) continue;
    if (key === 'PATH' && opts.path === false) continue;
    if (KEPT_VARIABLES.includes(key) || key.startsWith('LC_') || pass.includes(key)) env[key] = value;
  }
  // corepack must not stop to ask, and with no network it must say so at once instead of retrying for a
  // minute; the error then names package.json's `packageManager` (verify/environment.ts)
  env.COREPACK_ENABLE_DOWNLOAD_PROMPT = '0';
  if (opts.network === false) env.COREPACK_ENABLE_NETWORK = '0';
  // npm and npx without a network retry each request for over a minute before they fail: told they are
  // offline, they answer from their cache or fail at once with ENOTCACHED (verify/environment.ts)
  if (opts.network === false) env.npm_config_offline = 'true';
  if (home !== undefined) env.HOME = home;
  // npm checks the registry for a newer npm on every run; with no network (or an empty HOME) that check
  // alone adds 150-300 ms to each `npm test`, and its answer is of no use inside a sandbox
  env.npm_config_update_notifier = 'false';
  return env;
}

/** Build the session's sandbox; throws SandboxError when `bwrap` or `docker` was asked for and cannot run. */
export async function createSandbox(opts: SandboxOptions): Promise<Sandbox> {
  const source = opts.env ?? process.env;
  const paths = keelPaths(source);
  const stateDirs = [...new Set([paths.stateDir, dirname(paths.userConfig)].map((d) => resolve(d)))];
  const base = {
    root: resolve(opts.root),
    writable: opts.writable.map((w) => resolve(w)),
    network: opts.network,
    limits: opts.limits,
    source,
    protectedDirs: (opts.protectedDirs ?? []).map((d) => resolve(d)),
    // where each really is: a bind mount lands on the target of a link, and its folders are pinned there
    protectedFiles: (opts.protectedFiles ?? []).map((f) => realOrSelf(resolve(f))),
    stateDirs,
    passEnv: opts.passEnv ?? [],
  };
  if (opts.kind === 'none') return new HostSandbox('none', base, 'sandbox = "none"');
  if (opts.kind === 'bwrap') {
    const found = await findBwrap(source);
    if (!found.bin) throw new SandboxError(`sandbox = "bwrap" is required but ${found.why}`);
    refuseLinkedProtected(base);
    return new HostSandbox('bwrap', base, `bubblewrap at ${found.bin}`, found.bin);
  }
  if (opts.kind === 'docker') {
    const found = await findDocker(source);
    if (!found.bin) throw new SandboxError(`sandbox = "docker" is required but ${found.why}`);
    refuseLinkedProtected(base);
    return DockerSandbox.start(found.bin, base, opts.image ?? DEFAULT_DOCKER_IMAGE);
  }
  const bwrap = await findBwrap(source);
  if (bwrap.bin) {
    refuseLinkedProtected(base);
    return new HostSandbox('bwrap', base, `sandbox = "auto" chose bubblewrap at ${bwrap.bin}`, bwrap.bin);
  }
  const docker = await findDocker(source);
  if (docker.bin) {
    refuseLinkedProtected(base);
    return DockerSandbox.start(docker.bin, base, opts.image ?? DEFAULT_DOCKER_IMAGE);
  }
  return new HostSandbox('none', base, `sandbox = "auto" found none: ${bwrap.why}; ${docker.why}`);
}

/**
 * A sandbox that keeps `.git`, keel's config and the programs it runs read-only cannot keep them so when one
 * of them has a second name in the writable workspace: refused (SandboxError), with the way out.
 */
function refuseLinkedProtected(opts: BaseOptions): void {
  if (opts.writable.length === 0) return;
  // a program that is a link to a system file (a virtualenv's python) is not the workspace's to protect
  const files = opts.protectedFiles.filter((f) => [opts.root, ...opts.writable].some((d) => isInside(f, d)));
  const paths = [...protectedPaths(opts.root, opts.writable), ...files];
  const shown = (p: string) => (isInside(p, opts.root) ? relative(opts.root, p) : p);
  const why = linkedFilesProblem(paths, opts.root, shown);
  if (why) throw new SandboxError(why);
}

function realOrSelf(path: string): string {
  try {
    return realpathSync.native(path);
  } catch {
    return path;
  }
}

/** Which sandbox a session's commands would run in here, in words ("bwrap (/usr/bin/bwrap)", "none: why"). */
export async function sandboxInUse(kind: SandboxKind, env: NodeJS.ProcessEnv = process.env): Promise<string> {
  if (kind === 'none') return 'none (sandbox = "none")';
  if (kind === 'bwrap' || kind === 'auto') {
    const bwrap = await findBwrap(env);
    if (bwrap.bin) return `bwrap (${bwrap.bin})`;
    if (kind === 'bwrap') return `none: sandbox = "bwrap" is required but ${bwrap.why}`;
  }
  const docker = await findDocker(env);
  if (docker.bin) return `docker (${docker.bin})`;
  return kind === 'docker' ? `none: sandbox = "docker" is required but ${docker.why}` : `none: ${docker.why}`;
}

interface Found {
  bin?: string;
  why: string;
}

async function findBwrap(env: NodeJS.ProcessEnv): Promise<Found> {
  const bin = findProgram('bwrap', env.PATH);
  if (!bin) return { why: 'bubblewrap (bwrap) is not installed (apt install bubblewrap)' };
  const why = await probeBwrap(bin);
  return why ? { why } : { bin, why: '' };
}

async function findDocker(env: NodeJS.ProcessEnv): Promise<Found> {
  const bin = findProgram('docker', env.PATH);
  if (!bin) return { why: 'docker is not installed' };
  const why = await probeDocker(bin, env);
  return why ? { why } : { bin, why: '' };
}

interface BaseOptions {
  root: string;
  writable: string[];
  network: boolean;
  limits: SandboxLimits;
  source: NodeJS.ProcessEnv;
  protectedDirs: string[];
  /** Programs keel's config runs on the host (`SandboxOptions.protectedFiles`). */
  protectedFiles: string[];
  /** keel's own state folders: never shown to a bwrap command, wherever they are. */
  stateDirs: string[];
  passEnv: string[];
}

// The private /tmp and /dev/shm live in memory charged to the command: half its memory limit, at most 1 GB,
// so a full /tmp fails with ENOSPC before the memory limit kills the command
function tmpBytes(limits: SandboxLimits): number {
  return Math.max(1, Math.min(Math.floor(limits.memory_mb / 2), 1024)) * 1024 * 1024;
}

/** Run a command, then remove protected names it created at the top of the writable folders. */
async function runSwept(
  opts: Pick<BaseOptions, 'root' | 'writable'>,
  run: () => Promise<ExecResult>,
): Promise<ExecResult> {
  const tops = [...new Set([opts.root, ...opts.writable])].filter((d) =>
    opts.writable.some((w) => isInside(d, w)),
  );
  const before = snapshotProtected(tops);
  const result = await run();
  const removed = sweepProtected(before);
  if (removed.length === 0) return result;
  const shown = removed.map((p) => (isInside(p, opts.root) ? relative(opts.root, p) : p));
  return { ...result, violations: shown };
}

function toArgv(command: string | string[]): string[] {
  return commandArgv(typeof command === 'string' ? { shell: command } : command);
}

function keptNames(env: Record<string, string>): string {
  return Object.keys(env).sort().join(', ');
}

// bwrap and none: both spawn on this host under the same cgroup/rlimit limits
class HostSandbox implements Sandbox {
  readonly root: string;
  readonly writable: readonly string[];
  readonly network: boolean;
  private readonly hostLimits: HostLimits;
  private readonly env: Record<string, string>;
  private readonly runner: ((argv: string[], opts: SandboxRunOptions) => Promise<ExecResult>) | undefined;
  private readonly spawner: ((argv: string[], extra: SpawnExtra) => string[]) | undefined;
  private readonly opts: BaseOptions;
  private toolchains: string[] = [];
  private closed = false;

  constructor(
    readonly kind: 'bwrap' | 'none',
    opts: BaseOptions,
    private readonly origin: string,
    bin?: string,
  ) {
    this.root = opts.root;
    this.writable = opts.writable;
    this.hostLimits = new HostLimits(opts.limits, opts.source.PATH);
    this.opts = opts;
    const home = kind === 'bwrap' ? SANDBOX_HOME : opts.source.HOME;
    // unsandboxed commands reach the network whatever the config says
    const network = kind === 'none' || opts.network;
    this.env = sandboxEnv(opts.source, home, { pass: opts.passEnv, network });
    if (kind === 'bwrap') this.env.TMPDIR = '/tmp';
    this.network = network;
    if (kind === 'bwrap' && bin) {
      const inState = (p: string) => opts.stateDirs.some((d) => isInside(p, d));
      const view = hostView(opts.source, opts.stateDirs, [opts.root, ...opts.writable]);
      Object.assign(this.env, view.env);
      const layout = {
        root: opts.root,
        writable: opts.writable,
        network: opts.network,
        dropCaps: process.getuid?.() === 0,
        host: view.mounts,
        // keel's state files are hidden one by one too: KEEL_HOME may be the workspace itself
        hidden: [...view.hidden, ...opts.protectedDirs.filter(inState)],
        tmpBytes: tmpBytes(opts.limits),
      };
      this.toolchains = view.toolchains;
      const readOnly = [...opts.protectedDirs.filter((p) => !inState(p)), ...opts.protectedFiles];
      const bwrap = bwrapRunner(bin, layout, this.hostLimits, readOnly);
      this.runner = (argv, run) => bwrap.run(argv, this.env, run.timeoutS, run.signal, run.onOutput);
      // a long-lived program installed outside the system folders (under a home) sees its own package
      const shown = [
        ...view.mounts.flatMap((m) => (m.kind === 'ro-bind' ? [m.path] : [])),
        opts.root,
        ...opts.writable,
      ];
      this.spawner = (argv, { show = [], env = {} }) => {
        const program = programMounts(argv, {
          cwd: opts.root,
          pathEnv: opts.source.PATH,
          homes: view.homes,
          hidden: layout.hidden,
          shown,
        }).map((path): Mount => ({ kind: 'ro-bind', path, layer: LAYER.host }));
        // a folder asked for is bound read-only over the writable scope too (and its own mount, deeper than a hide)
        const readOnlyNow = protectedPaths(opts.root, opts.writable, [...readOnly, ...show]);
        const setenv = Object.entries(env).flatMap(([name, value]) => ['--setenv', name, value]);
        return [
          bin,
          ...setenv,
          ...bwrapArgs({ ...layout, host: [...layout.host, ...program], readOnly: readOnlyNow }, argv),
        ];
      };
    }
  }

  spawnSpec(argv: string[], extra: SpawnExtra = {}): SpawnSpec {
    if (!this.spawner) throw new Error('only a bwrap sandbox can host a long-lived process');
    if (this.closed) throw new Error('the sandbox is closed');
    const limited = this.hostLimits.wrap(this.spawner(argv, extra));
    return { argv: limited.argv, env: { ...this.env }, cwd: this.root, cleanup: limited.cleanup };
  }

  describe(): string {
    const limits = `limits: ${formatLimits(this.hostLimits.report)}`;
    const env = `environment: only ${keptNames(this.env)}`;
    if (this.kind === 'none') {
      return `none (${this.origin}): commands run unsandboxed in ${this.root} with full access to the files and network of this user; ${limits}; ${env}`;
    }
    const cap = `${tmpBytes(this.opts.limits) / 1024 / 1024} MB`;
    return [
      `bwrap (${this.origin}): only the system folders (/usr, /etc, /opt, ...) and the toolchains on PATH (${this.toolchains.join(', ') || 'none outside them'}) are visible, read-only`,
      `workspace ${this.root} read-only; writable: ${this.writable.join(', ') || 'nothing'}`,
      '(.git and keel config inside stay read-only; a .git, keel.toml or .keel a command creates at the top is removed)',
      `hidden: home folders, /run and /var/run (host sockets), /srv, /mnt, /var, keel's state, /etc/shadow and other credentials`,
      `private /tmp and /dev/shm (${cap} each) with HOME on /tmp`,
      `network ${this.network ? 'ON (sandbox_network = true; abstract unix sockets of the host too)' : 'off (own network namespace)'}; own pid namespace`,
      `${limits}; ${env}`,
    ].join('; ');
  }

  limits(): LimitReport {
    return this.hostLimits.report;
  }

  async run(command: string | string[], opts: SandboxRunOptions): Promise<ExecResult> {
    if (this.closed) throw new Error('the sandbox is closed');
    const argv = toArgv(command);
    const runner = this.runner;
    if (runner) return runSwept(this.opts, () => runner(argv, opts));
    return runSwept(this.opts, () => this.hostLimits.run(argv, { cwd: this.root, env: this.env, ...opts }));
  }

  async close(): Promise<void> {
    this.closed = true;
  }
}

class DockerSandbox implements Sandbox {
  readonly kind = 'docker' as const;
  private readonly env: Record<string, string>;

  private constructor(
    private readonly container: DockerContainer,
    private readonly opts: BaseOptions,
    private readonly image: string,
  ) {
    this.env = sandboxEnv(opts.source, '/tmp', { path: false, pass: opts.passEnv, network: opts.network });
  }

  get root(): string {
    return this.opts.root;
  }
  get writable(): readonly string[] {
    return this.opts.writable;
  }
  get network(): boolean {
    return this.opts.network;
  }

  static async start(bin: string, opts: BaseOptions, image: string): Promise<DockerSandbox> {
    const env = sandboxEnv(opts.source, '/tmp', { path: false, pass: opts.passEnv, network: opts.network });
    const uid = process.getuid?.();
    const gid = process.getgid?.();
    const layout = {
      image,
      name: `keel-${process.pid}-${randomBytes(4).toString('hex')}`,
      root: opts.root,
      writable: opts.writable,
      readOnly: dockerProtected(opts),
      network: opts.network,
      limits: opts.limits,
      user: uid !== undefined && gid !== undefined ? `${uid}:${gid}` : undefined,
      env,
    };
    try {
      return new DockerSandbox(await DockerContainer.start(bin, layout, opts.source), opts, image);
    } catch (err) {
      throw new SandboxError(`the docker sandbox could not start: ${(err as Error).message}`);
    }
  }

  describe(): string {
    return [
      `docker (container ${this.container.id.slice(0, 12)}, image ${this.image}): read-only image`,
      `writable: ${this.opts.writable.join(', ') || 'nothing'} (.git and keel config inside stay read-only)`,
      `private /tmp; network ${this.opts.network ? 'ON (bridge)' : 'off (--network none)'}`,
      `limits: ${formatLimits(this.limits())}; environment: only ${keptNames(this.env)}`,
    ].join('; ');
  }

  limits(): LimitReport {
    return dockerLimitReport(this.opts.limits);
  }

  run(command: string | string[], opts: SandboxRunOptions): Promise<ExecResult> {
    return runSwept(this.opts, () =>
      this.container.exec(toArgv(command), {
        root: this.opts.root,
        env: this.env,
        maxOutputBytes: this.opts.limits.output_kb * 1024,
        ...opts,
      }),
    );
  }

  close(): Promise<void> {
    return this.container.remove();
  }
}

// Mounts are fixed when the container starts, so only what exists then can be protected
function dockerProtected(opts: BaseOptions): string[] {
  const names = ['.git', '.keel', 'keel.toml'];
  const inScope = [opts.root, ...opts.writable].filter((d) => opts.writable.some((w) => isInside(d, w)));
  const paths = inScope.flatMap((dir) => names.map((n) => join(dir, n)));
  return [...new Set([...paths, ...opts.protectedDirs, ...opts.protectedFiles])]
    .filter((p) => existsSync(p))
    .sort();
}
