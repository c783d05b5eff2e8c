/** Per-command cgroups (v2 or v1) that cap processes and memory and can kill whatever is left inside. */
import { execFileSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmdirSync,
  writeFileSync,
} from 'node:fs';
import { join, relative } from 'node:path';

export type CgroupController = 'pids' | 'memory';
export type CgroupVersion = 'v1' | 'v2';

/** A cgroup under which keel can make a child group for one controller (verified writable and enterable). */
export interface CgroupBase {
  controller: CgroupController;
  version: CgroupVersion;
  /** The parent cgroup directory; per-command groups are created inside it. */
  dir: string;
}

/** What a command's group should cap; an omitted limit is not set. */
export interface CgroupLimits {
  pids?: number;
  memoryBytes?: number;
}

interface Mount {
  root: string;
  point: string;
  fsType: string;
  superOptions: string[];
}

const CONTROLLERS: CgroupController[] = ['pids', 'memory'];
let cachedBases: Partial<Record<CgroupController, CgroupBase>> | undefined;
let sequence = 0;
// Hierarchies can be shared across pid namespaces (containers), so names carry ours: keel-<pidns>-<pid>-<n>
const namespace = pidNamespace();
const prefix = `keel-${namespace}-${process.pid}`;

function pidNamespace(): string {
  try {
    return readlinkSync('/proc/self/ns/pid').replace(/\D/g, '') || '0';
  } catch {
    return '0';
  }
}

/**
 * Find, once per process, a cgroup per controller in which keel may create children and move a process.
 * The unified (v2) hierarchy wins when the controller is already enabled for our children; otherwise v1.
 */
export function cgroupBases(): Partial<Record<CgroupController, CgroupBase>> {
  if (cachedBases) return cachedBases;
  const found: Partial<Record<CgroupController, CgroupBase>> = {};
  let mounts: Mount[] = [];
  let membership: string[] = [];
  try {
    mounts = parseMountinfo(readFileSync('/proc/self/mountinfo', 'utf8'));
    membership = readFileSync('/proc/self/cgroup', 'utf8').split('\n');
  } catch {
    // not Linux, or /proc hidden: no cgroups
  }
  for (const controller of CONTROLLERS) {
    const candidates = [
      v2Candidate(controller, mounts, membership),
      v1Candidate(controller, mounts, membership),
    ];
    for (const base of candidates) {
      if (base && usable(base)) {
        found[controller] = base;
        sweepStale(base.dir);
        break;
      }
    }
  }
  cachedBases = found;
  return found;
}

function parseMountinfo(text: string): Mount[] {
  const mounts: Mount[] = [];
  for (const line of text.split('\n')) {
    const [left, right] = line.split(' - ');
    if (!left || !right) continue;
    const fields = left.split(' ');
    const [fsType, , superOptions] = right.split(' ');
    const root = fields[3];
    const point = fields[4];
    if (!root || !point || !fsType) continue;
    mounts.push({ root, point: unescapeMount(point), fsType, superOptions: (superOptions ?? '').split(',') });
  }
  return mounts;
}

function unescapeMount(path: string): string {
  return path.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(Number.parseInt(octal, 8)));
}

function cgroupDir(mount: Mount, path: string): string | undefined {
  const rel = relative(mount.root, path);
  // our cgroup lies outside what this mount shows (another namespace's view): unusable
  if (rel.startsWith('..')) return undefined;
  return join(mount.point, rel);
}

function v2Candidate(
  controller: CgroupController,
  mounts: Mount[],
  membership: string[],
): CgroupBase | undefined {
  const mount = mounts.find((m) => m.fsType === 'cgroup2');
  const path = membership.find((l) => l.startsWith('0::'))?.slice(3);
  if (!mount || path === undefined) return undefined;
  const dir = cgroupDir(mount, path);
  if (!dir) return undefined;
  // enabling a controller for children fails while our own group holds processes, so only use a delegated one
  const enabled = readWords(join(dir, 'cgroup.subtree_control'));
  return enabled.includes(controller) ? { controller, version: 'v2', dir } : undefined;
}

function v1Candidate(
  controller: CgroupController,
  mounts: Mount[],
  membership: string[],
): CgroupBase | undefined {
  const mount = mounts.find((m) => m.fsType === 'cgroup' && m.superOptions.includes(controller));
  const line = membership.find((l) => l.split(':')[1]?.split(',').includes(controller));
  if (!mount || !line) return undefined;
  const path = line.split(':').slice(2).join(':');
  const dir = cgroupDir(mount, path);
  return dir ? { controller, version: 'v1', dir } : undefined;
}

function readWords(file: string): string[] {
  try {
    return readFileSync(file, 'utf8').trim().split(/\s+/);
  } catch {
    return [];
  }
}

// Creating a group is not enough (v2 delegation rules, read-only mounts): prove a process can be moved in
function usable(base: CgroupBase): boolean {
  const dir = join(base.dir, `${prefix}-probe`);
  try {
    mkdirSync(dir);
  } catch {
    return false;
  }
  try {
    writeLimit(base, dir, base.controller === 'pids' ? { pids: 64 } : { memoryBytes: 256 * 1024 * 1024 });
    execFileSync('/bin/sh', ['-c', 'echo $$ > "$1"', 'keel-cgroup-probe', join(dir, 'cgroup.procs')], {
      stdio: 'ignore',
      timeout: 5000,
    });
    return true;
  } catch {
    return false;
  } finally {
    try {
      rmdirSync(dir);
    } catch {
      // the probe process has exited; a failure here is swept on the next start
    }
  }
}

function writeLimit(base: CgroupBase, dir: string, limits: CgroupLimits): void {
  if (base.controller === 'pids' && limits.pids !== undefined) {
    writeFileSync(join(dir, 'pids.max'), String(limits.pids));
  }
  if (base.controller === 'memory' && limits.memoryBytes !== undefined) {
    const bytes = String(limits.memoryBytes);
    if (base.version === 'v2') {
      writeFileSync(join(dir, 'memory.max'), bytes);
      // without this the limit only pushes pages to swap; missing when swap accounting is off
      tryWrite(join(dir, 'memory.swap.max'), '0');
    } else {
      writeFileSync(join(dir, 'memory.limit_in_bytes'), bytes);
      tryWrite(join(dir, 'memory.memsw.limit_in_bytes'), bytes);
    }
  }
}

function tryWrite(file: string, value: string): void {
  try {
    writeFileSync(file, value);
  } catch {
    // optional knob
  }
}

/** The groups made for one command: their `cgroup.procs` files to enter, and a cleanup that kills leftovers. */
export class CommandCgroups {
  private constructor(private readonly dirs: string[]) {}

  /** Make one group per available controller under `bases`, with `limits` written before anything enters. */
  static create(bases: CgroupBase[], limits: CgroupLimits): CommandCgroups {
    const name = `${prefix}-${++sequence}`;
    const made = new CommandCgroups([]);
    try {
      for (const base of bases) {
        const dir = join(base.dir, name);
        mkdirSync(dir);
        made.dirs.push(dir);
        writeLimit(base, dir, limits);
      }
    } catch (err) {
      removeNow(made.dirs);
      throw new Error(`cannot set up a cgroup for the command: ${(err as Error).message}`);
    }
    return made;
  }

  /** The files a process writes its pid to, to enter every group. */
  procsFiles(): string[] {
    return this.dirs.map((d) => join(d, 'cgroup.procs'));
  }

  /** Kill anything still inside and remove the groups; retries while the kernel finishes reaping. */
  async remove(): Promise<void> {
    // the namespace's last processes are usually reaped within a millisecond or two, so poll fast first
    let waited = 0;
    let delay = 1;
    while (this.dirs.length > 0 && waited < 2000) {
      for (const dir of [...this.dirs]) {
        killMembers(dir);
        try {
          rmdirSync(dir);
          this.dirs.splice(this.dirs.indexOf(dir), 1);
        } catch (err) {
          const code = (err as NodeJS.ErrnoException).code;
          if (code === 'ENOENT') this.dirs.splice(this.dirs.indexOf(dir), 1);
        }
      }
      if (this.dirs.length === 0) break;
      await new Promise((r) => setTimeout(r, delay));
      waited += delay;
      delay = Math.min(delay * 2, 100);
    }
    // still busy after two seconds: left for sweepStale on keel's next start
  }
}

function killMembers(dir: string): void {
  for (const pid of readWords(join(dir, 'cgroup.procs'))) {
    const n = Number(pid);
    if (!Number.isInteger(n) || n <= 0) continue;
    try {
      process.kill(n, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

function removeNow(dirs: string[]): void {
  for (const dir of dirs) {
    try {
      rmdirSync(dir);
    } catch {
      // swept later
    }
  }
}

// Groups left by a keel that crashed: from our pid namespace, and that pid is no longer running
function sweepStale(parent: string): void {
  let entries: string[] = [];
  try {
    entries = readdirSync(parent).filter((e) => e.startsWith(`keel-${namespace}-`));
  } catch {
    return;
  }
  for (const entry of entries) {
    const owner = Number(entry.split('-')[2]);
    if (owner === process.pid || isAlive(owner)) continue;
    const dir = join(parent, entry);
    killMembers(dir);
    if (existsSync(dir)) removeNow([dir]);
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
