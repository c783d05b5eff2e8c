/** Resource limits for a host command: a per-command cgroup where one is writable, rlimits via prlimit for the rest. */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import type { Config } from '../config/schema.js';
import { type CgroupBase, type CgroupLimits, CommandCgroups, cgroupBases } from './cgroup.js';
import type { ExecResult } from './effects.js';
import { type OutputListener, runArgv } from './exec.js';

export type SandboxLimits = Config['sandbox_limits'];

/** How one limit is enforced; `none` means it is not enforced at all. */
export type LimitMechanism = 'cgroup v2' | 'cgroup v1' | 'rlimit' | 'docker' | 'keel' | 'none';

export interface LimitState {
  value: string;
  mechanism: LimitMechanism;
  note?: string;
}

/** Which mechanism enforces each limit, for `keel doctor` and for tests that must not pass silently. */
export interface LimitReport {
  processes: LimitState;
  memory: LimitState;
  cpu: LimitState;
  fileSize: LimitState;
  output: LimitState;
}

/** An argv ready to spawn inside its limits, and the cleanup to run once it has exited. */
export interface LimitedArgv {
  argv: string[];
  cleanup(): Promise<void>;
}

const MB = 1024 * 1024;
// Enters each cgroup given before `--`, then execs the rest, so the command never forks outside them
const ENTER_CGROUPS = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"';

/** Resolve a program on a PATH string; undefined when it is not installed. */
export function findProgram(name: string, path: string | undefined): string | undefined {
  for (const dir of (path ?? '').split(delimiter)) {
    if (dir === '') continue;
    const candidate = join(dir, name);
    if (existsSync(candidate)) return candidate;
  }
  return undefined;
}

/**
 * An argv that starts in one fresh cgroup with no limit set, so `cleanup` ends everything it started,
 * even a child that left its process group (setsid). Where keel has no cgroup it may use, the argv as
 * it is and a cleanup that does nothing: the caller's process group is all there is.
 */
export function inOwnCgroup(argv: string[]): LimitedArgv {
  const base = cgroupBases().pids ?? cgroupBases().memory;
  let group: CommandCgroups | undefined;
  try {
    group = base ? CommandCgroups.create([base], {}) : undefined;
  } catch {
    group = undefined;
  }
  if (!group) return { argv, cleanup: async () => {} };
  const made = group;
  return {
    argv: ['/bin/sh', '-c', ENTER_CGROUPS, 'keel-group', ...made.procsFiles(), '--', ...argv],
    cleanup: () => made.remove(),
  };
}

/** Limits for commands spawned on this host (bwrap or none), decided once per sandbox. */
export class HostLimits {
  readonly report: LimitReport;
  private readonly bases: CgroupBase[];
  private readonly prlimit: string | undefined;
  private readonly rlimitNproc: boolean;
  private readonly rlimitData: boolean;

  constructor(
    private readonly limits: SandboxLimits,
    path: string | undefined,
  ) {
    const found = cgroupBases();
    this.bases = [found.pids, found.memory].filter((b): b is CgroupBase => b !== undefined);
    this.prlimit = findProgram('prlimit', path) ?? findProgram('prlimit', '/usr/bin:/bin');
    const root = process.getuid?.() === 0;
    // the kernel exempts uid 0 from RLIMIT_NPROC, so as root it would be a promise kept by nothing
    this.rlimitNproc = !found.pids && this.prlimit !== undefined && !root;
    this.rlimitData = !found.memory && this.prlimit !== undefined;
    const rlimit = (ok: boolean): LimitMechanism => (ok && this.prlimit ? 'rlimit' : 'none');
    const cgroup = (base: CgroupBase | undefined): LimitMechanism | undefined =>
      base ? (base.version === 'v2' ? 'cgroup v2' : 'cgroup v1') : undefined;
    this.report = {
      processes: {
        value: String(limits.processes),
        mechanism: cgroup(found.pids) ?? rlimit(this.rlimitNproc),
        note: found.pids
          ? `pids.max in ${found.pids.dir}`
          : this.rlimitNproc
            ? "RLIMIT_NPROC counts all of this user's tasks, so keel adds the current count"
            : root
              ? 'no writable pids cgroup, and RLIMIT_NPROC does not apply to root'
              : 'no writable pids cgroup and no prlimit',
      },
      memory: {
        value: `${limits.memory_mb} MB`,
        mechanism: cgroup(found.memory) ?? rlimit(this.rlimitData),
        note: found.memory
          ? `in ${found.memory.dir}`
          : this.rlimitData
            ? 'RLIMIT_DATA (heap, not page cache)'
            : undefined,
      },
      cpu: { value: `${limits.cpu_s} s`, mechanism: rlimit(true), note: 'RLIMIT_CPU, per process' },
      fileSize: { value: `${limits.file_size_mb} MB`, mechanism: rlimit(true), note: 'RLIMIT_FSIZE' },
      output: { value: `${limits.output_kb} KB per stream`, mechanism: 'keel', note: 'head and tail kept' },
    };
  }

  /** Bytes kept per output stream. */
  get maxOutputBytes(): number {
    return this.limits.output_kb * 1024;
  }

  /** Wrap an argv so it starts inside fresh cgroups and under rlimits; call `cleanup` after it exits. */
  wrap(argv: string[]): LimitedArgv {
    const cgroupLimits: CgroupLimits = {
      pids: this.limits.processes,
      memoryBytes: this.limits.memory_mb * MB,
    };
    const groups = this.bases.length > 0 ? CommandCgroups.create(this.bases, cgroupLimits) : undefined;
    const rlimits = this.prlimit ? [this.prlimit, ...this.rlimitFlags(), '--'] : [];
    const limited = [...rlimits, ...argv];
    if (!groups) return { argv: limited, cleanup: async () => {} };
    return {
      argv: ['/bin/sh', '-c', ENTER_CGROUPS, 'keel-limits', ...groups.procsFiles(), '--', ...limited],
      cleanup: () => groups.remove(),
    };
  }

  /** Run an argv to completion inside these limits, output capped, the groups removed afterwards. */
  async run(
    argv: string[],
    opts: {
      cwd: string;
      env: NodeJS.ProcessEnv;
      timeoutS: number;
      signal: AbortSignal;
      onOutput?: OutputListener;
    },
  ): Promise<ExecResult> {
    const limited = this.wrap(argv);
    try {
      return await runArgv(limited.argv, { ...opts, maxOutputBytes: this.maxOutputBytes });
    } finally {
      await limited.cleanup();
    }
  }

  private rlimitFlags(): string[] {
    const flags = [`--cpu=${this.limits.cpu_s}`, `--fsize=${this.limits.file_size_mb * MB}`];
    if (this.rlimitNproc) flags.push(`--nproc=${this.limits.processes + processesOfUser()}`);
    if (this.rlimitData) flags.push(`--data=${this.limits.memory_mb * MB}`);
    return flags;
  }
}

/** One line per limit: value and mechanism, for `describe()`. */
export function formatLimits(report: LimitReport): string {
  const rows: [string, LimitState][] = [
    ['processes', report.processes],
    ['memory', report.memory],
    ['cpu', report.cpu],
    ['file size', report.fileSize],
    ['output', report.output],
  ];
  return rows
    .map(([name, s]) =>
      s.mechanism === 'none'
        ? `${name} ${s.value}: NOT ENFORCED${s.note ? ` (${s.note})` : ''}`
        : `${name} ${s.value} via ${s.mechanism}${s.note ? ` (${s.note})` : ''}`,
    )
    .join('; ');
}

// RLIMIT_NPROC is checked against every task (thread) of the real uid on the machine, not just this command's
function processesOfUser(): number {
  const uid = process.getuid?.();
  if (uid === undefined) return 0;
  let count = 0;
  for (const entry of safeReaddir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const status = readFileSync(`/proc/${entry}/status`, 'utf8');
      const real = /^Uid:\s+(\d+)/m.exec(status)?.[1];
      if (Number(real) === uid) count += Number(/^Threads:\s+(\d+)/m.exec(status)?.[1] ?? 1);
    } catch {
      // exited while we counted
    }
  }
  return count;
}

function safeReaddir(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}
