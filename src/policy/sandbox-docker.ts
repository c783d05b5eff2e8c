/** The docker sandbox: one locked-down container per session, each command a `docker exec` inside it. */
import { spawnSync } from 'node:child_process';
import type { ExecResult } from './effects.js';
import { type OutputListener, runArgv } from './exec.js';
import type { LimitReport, SandboxLimits } from './sandbox-limits.js';
import { isInside } from './scope.js';

/** The image used until the config grows a key for it: small, and has coreutils' `timeout`. */
export const DEFAULT_DOCKER_IMAGE = 'debian:12-slim';
/** Seconds between SIGTERM and SIGKILL for a command in the container (mirrors exec.ts's grace). */
const KILL_AFTER_S = 2;
const MB = 1024 * 1024;

/** What the container exposes and limits; all paths canonical. */
export interface DockerLayout {
  image: string;
  name: string;
  root: string;
  writable: string[];
  readOnly: string[];
  network: boolean;
  limits: SandboxLimits;
  /** `uid:gid` to run as, so files written into the scope belong to the user. */
  user?: string;
  /** Variables set in the container (already filtered). */
  env: Record<string, string>;
}

/** The `docker run` arguments (without the program) that start the session's idle container. */
export function dockerRunArgs(layout: DockerLayout): string[] {
  const { limits } = layout;
  const args = ['run', '--detach', '--rm', '--init', '--name', layout.name, '--label', 'keel.sandbox=1'];
  args.push('--network', layout.network ? 'bridge' : 'none');
  // exec is allowed on /tmp because test runners and compilers put binaries there
  args.push('--read-only', '--tmpfs', '/tmp:rw,exec,nosuid,nodev');
  args.push('--cap-drop', 'ALL', '--security-opt', 'no-new-privileges');
  if (layout.user) args.push('--user', layout.user);
  args.push('--pids-limit', String(limits.processes));
  // memory-swap equal to memory: no swap on top of the limit
  args.push('--memory', `${limits.memory_mb}m`, '--memory-swap', `${limits.memory_mb}m`);
  args.push('--ulimit', `cpu=${limits.cpu_s}:${limits.cpu_s}`);
  const fsize = limits.file_size_mb * MB;
  args.push('--ulimit', `fsize=${fsize}:${fsize}`);
  for (const [key, value] of Object.entries(layout.env)) args.push('--env', `${key}=${value}`);
  args.push('--workdir', layout.root);
  if (!layout.writable.some((w) => isInside(layout.root, w)))
    args.push('--mount', bindMount(layout.root, true));
  for (const dir of [...layout.writable].sort((a, b) => a.length - b.length)) {
    args.push('--mount', bindMount(dir, false));
  }
  for (const path of layout.readOnly) args.push('--mount', bindMount(path, true));
  args.push(layout.image, 'sleep', 'infinity');
  return args;
}

// --mount is CSV (unlike -v, a ':' in a path is fine); quote a field holding a comma or a quote
function bindMount(path: string, readOnly: boolean): string {
  const fields = ['type=bind', `source=${path}`, `target=${path}`];
  if (readOnly) fields.push('readonly');
  return fields.map((f) => (/[",]/.test(f) ? `"${f.replace(/"/g, '""')}"` : f)).join(',');
}

/**
 * The `docker exec` arguments for one command. Inside, coreutils `timeout` puts the command in its own
 * process group and kills that group on expiry; the pid file lets keel kill the group on abort too.
 */
export function dockerExecArgs(
  container: string,
  command: string[],
  opts: { root: string; env: Record<string, string>; timeoutS: number; pidFile: string },
): string[] {
  const args = ['exec', '--workdir', opts.root];
  for (const [key, value] of Object.entries(opts.env)) args.push('--env', `${key}=${value}`);
  const script = 'echo $$ > "$1" || exit 125; k=$2; t=$3; shift 3; exec timeout --kill-after="$k" "$t" "$@"';
  args.push(container, '/bin/sh', '-c', script, 'keel-exec', opts.pidFile);
  args.push(`${KILL_AFTER_S}s`, `${Math.max(1, Math.ceil(opts.timeoutS))}s`, ...command);
  return args;
}

/** The `docker exec` arguments that kill one command's process group (SIGTERM, then SIGKILL). */
export function dockerKillArgs(container: string, pidFile: string): string[] {
  // no `--` before the negative pid: dash's kill rejects it
  const script = `p=$(cat "$1") || exit 0; kill -TERM "-$p" 2>/dev/null || exit 0; sleep ${KILL_AFTER_S}; kill -KILL "-$p" 2>/dev/null; exit 0`;
  return ['exec', container, '/bin/sh', '-c', script, 'keel-kill', pidFile];
}

/** Limits as docker enforces them, for `describe()`. */
export function dockerLimitReport(limits: SandboxLimits): LimitReport {
  return {
    processes: {
      value: String(limits.processes),
      mechanism: 'docker',
      note: '--pids-limit, whole container',
    },
    memory: { value: `${limits.memory_mb} MB`, mechanism: 'docker', note: '--memory, whole container' },
    cpu: { value: `${limits.cpu_s} s`, mechanism: 'docker', note: '--ulimit cpu, per process' },
    fileSize: { value: `${limits.file_size_mb} MB`, mechanism: 'docker', note: '--ulimit fsize' },
    output: { value: `${limits.output_kb} KB per stream`, mechanism: 'keel', note: 'head and tail kept' },
  };
}

/** Ask the daemon whether it answers, quickly; resolves to why not, or undefined. */
export async function probeDocker(bin: string, env: NodeJS.ProcessEnv): Promise<string | undefined> {
  try {
    const result = await runArgv([bin, 'info', '--format', '{{.ServerVersion}}'], {
      cwd: '/',
      env,
      timeoutS: 5,
      signal: new AbortController().signal,
      maxOutputBytes: 4096,
    });
    if (result.exitCode === 0 && result.stdout.trim() !== '') return undefined;
    const why = result.timedOut
      ? 'docker info did not answer within 5 s'
      : result.stderr.trim().split('\n')[0];
    return `no Docker daemon answers: ${why || `exit code ${result.exitCode}`}`;
  } catch (err) {
    return `docker cannot be started: ${(err as Error).message}`;
  }
}

/** A started session container: run commands in it, remove it at the end. */
export class DockerContainer {
  private sequence = 0;
  private removed = false;
  private readonly onExit = (): void => {
    // a crash must not leave a container running; spawnSync is all an exit handler can do
    spawnSync(this.bin, ['rm', '--force', this.id], {
      stdio: 'ignore',
      env: this.clientEnv,
      timeout: 10_000,
    });
  };

  private constructor(
    private readonly bin: string,
    readonly id: string,
    private readonly clientEnv: NodeJS.ProcessEnv,
  ) {
    process.on('exit', this.onExit);
  }

  /** Start the container; throws with docker's own words when it cannot. */
  static async start(
    bin: string,
    layout: DockerLayout,
    clientEnv: NodeJS.ProcessEnv,
  ): Promise<DockerContainer> {
    const result = await runArgv([bin, ...dockerRunArgs(layout)], {
      cwd: '/',
      env: clientEnv,
      // the first run may pull the image
      timeoutS: 300,
      signal: new AbortController().signal,
      maxOutputBytes: 64 * 1024,
    });
    const id = result.stdout.trim();
    if (result.exitCode !== 0 || id === '') {
      throw new Error(`docker run failed: ${result.stderr.trim() || `exit code ${result.exitCode}`}`);
    }
    return new DockerContainer(bin, id, clientEnv);
  }

  /** Run one command; on timeout or abort its process group inside the container is killed too. */
  async exec(
    command: string[],
    opts: {
      root: string;
      env: Record<string, string>;
      timeoutS: number;
      signal: AbortSignal;
      maxOutputBytes: number;
      onOutput?: OutputListener;
    },
  ): Promise<ExecResult> {
    if (this.removed) throw new Error('the docker sandbox is closed');
    const pidFile = `/tmp/.keel-exec-${++this.sequence}.pid`;
    const args = dockerExecArgs(this.id, command, { ...opts, pidFile });
    const started = Date.now();
    // the outer timeout only guards a hung client; the one inside the container is the real one
    const result = await runArgv([this.bin, ...args], {
      cwd: '/',
      env: this.clientEnv,
      timeoutS: opts.timeoutS + KILL_AFTER_S + 5,
      signal: opts.signal,
      maxOutputBytes: opts.maxOutputBytes,
      ...(opts.onOutput ? { onOutput: opts.onOutput } : {}),
    });
    // killing the client does not kill the process in the container
    if (result.timedOut || opts.signal.aborted) await this.client(dockerKillArgs(this.id, pidFile), 15);
    // 124: timeout sent SIGTERM; 137 after the deadline: it had to SIGKILL (137 earlier is an OOM kill)
    const late = Date.now() - started >= opts.timeoutS * 1000;
    const timedOut = result.timedOut || result.exitCode === 124 || (result.exitCode === 137 && late);
    return { ...result, timedOut };
  }

  /** Remove the container (and with it everything running inside). */
  async remove(): Promise<void> {
    if (this.removed) return;
    this.removed = true;
    process.off('exit', this.onExit);
    await this.client(['rm', '--force', this.id], 30);
  }

  private async client(args: string[], timeoutS: number): Promise<void> {
    await runArgv([this.bin, ...args], {
      cwd: '/',
      env: this.clientEnv,
      timeoutS,
      signal: new AbortController().signal,
      maxOutputBytes: 4096,
    }).catch(() => undefined);
  }
}
