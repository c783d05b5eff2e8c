/** The process runner: one process group per command, bounded output, the whole tree killed on timeout or abort. */
import { spawn } from 'node:child_process';
import { StringDecoder } from 'node:string_decoder';
import { type ExecResult, omittedMarker } from './effects.js';

/** A command as an argv array (run directly) or a shell string (run by /bin/sh -c). */
export type Command = string[] | { shell: string };

export interface RunOptions {
  cwd: string;
  /** The complete environment for the command; defaults to this process's. */
  env?: NodeJS.ProcessEnv;
  timeoutS: number;
  signal: AbortSignal;
  /** Cap per stream; beyond it the head and tail are kept and the middle is counted. */
  maxOutputBytes: number;
  /** Each piece of output as it arrives (decoded as UTF-8, split characters kept whole), for live display. */
  onOutput?: OutputListener;
  /** Written to the command's stdin, which is then closed; without it stdin is closed from the start. */
  input?: string | Buffer;
}

export type OutputListener = (text: string, stream: 'stdout' | 'stderr') => void;

/** How long a process group gets between SIGTERM and SIGKILL. */
export const KILL_GRACE_MS = 2000;
// A descendant that left the group (setsid) can keep our pipes open forever; stop waiting after this
const DRAIN_AFTER_EXIT_MS = KILL_GRACE_MS + 1000;
// setTimeout fires at once for delays past 2^31-1 ms
const MAX_TIMER_MS = 2 ** 31 - 1;

/** The final argv for a command; a sandbox wraps this argv before it is spawned. */
export function commandArgv(command: Command): string[] {
  if (!Array.isArray(command)) return ['/bin/sh', '-c', command.shell];
  if (command.length === 0) throw new Error('cannot run an empty argv');
  return [...command];
}

/** Run a command to completion under a timeout and an abort signal; see `runArgv`. */
export function runCommand(command: Command, opts: RunOptions): Promise<ExecResult> {
  return runArgv(commandArgv(command), opts);
}

/**
 * Spawn a final argv in its own process group (stdin closed, or fed `input`) and capture its output. A timeout or
 * abort sends SIGTERM to the whole group, then SIGKILL after the grace period; when the command exits,
 * whatever it left running in its group is stopped too. Resolves (never rejects) on abort, so callers
 * check `signal.aborted`; rejects only when the program cannot be started.
 */
export function runArgv(argv: string[], opts: RunOptions): Promise<ExecResult> {
  const [file, ...args] = argv;
  if (file === undefined) return Promise.reject(new Error('cannot run an empty argv'));
  if (opts.signal.aborted) {
    return Promise.resolve({
      exitCode: null,
      signal: null,
      stdout: '',
      stderr: '',
      timedOut: false,
      truncated: false,
    });
  }
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, {
      cwd: opts.cwd,
      env: opts.env ?? process.env,
      detached: true,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    // a command that exits without reading its input must not crash keel with EPIPE; no input is EOF at once
    child.stdin.on('error', () => {});
    child.stdin.end(opts.input ?? '');
    const pid = child.pid;
    const stdout = new OutputCapture(opts.maxOutputBytes);
    const stderr = new OutputCapture(opts.maxOutputBytes);
    child.stdout.on('data', (chunk: Buffer) => stdout.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
    const listen = opts.onOutput;
    if (listen) {
      for (const [name, stream] of [
        ['stdout', child.stdout],
        ['stderr', child.stderr],
      ] as const) {
        const decoder = new StringDecoder('utf8');
        stream.on('data', (chunk: Buffer) => {
          const text = decoder.write(chunk);
          if (text) listen(text, name);
        });
      }
    }
    if (pid !== undefined) trackGroup(pid);

    let timedOut = false;
    let exit: { code: number | null; signal: NodeJS.Signals | null } | null = null;
    let killScheduled = false;
    let drainTimer: NodeJS.Timeout | undefined;
    let settled = false;

    const signalGroup = (sig: NodeJS.Signals): void => {
      if (pid === undefined) return;
      try {
        process.kill(-pid, sig);
      } catch {
        // ESRCH: the group is already gone
      }
    };
    const stop = (): void => {
      signalGroup('SIGTERM');
      if (killScheduled) return;
      killScheduled = true;
      // not cleared when we settle: a leftover that ignores SIGTERM must still die
      setTimeout(() => signalGroup('SIGKILL'), KILL_GRACE_MS).unref();
    };
    const timeout = setTimeout(
      () => {
        timedOut = true;
        stop();
      },
      Math.min(Math.max(opts.timeoutS, 0) * 1000, MAX_TIMER_MS),
    );
    opts.signal.addEventListener('abort', stop, { once: true });

    const settle = (error?: Error): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timeout);
      clearTimeout(drainTimer);
      opts.signal.removeEventListener('abort', stop);
      if (pid !== undefined) liveGroups.delete(pid);
      if (error) {
        reject(error);
        return;
      }
      resolve({
        exitCode: exit?.code ?? null,
        signal: exit?.signal ?? null,
        stdout: stdout.text(),
        stderr: stderr.text(),
        timedOut,
        truncated: stdout.dropped > 0 || stderr.dropped > 0,
      });
    };

    child.on('error', (err) => settle(err));
    child.on('exit', (code, signal) => {
      exit = { code, signal };
      clearTimeout(timeout);
      // background jobs would outlive the call and hold our pipes open
      stop();
      drainTimer = setTimeout(() => {
        child.stdout.destroy();
        child.stderr.destroy();
        settle();
      }, DRAIN_AFTER_EXIT_MS);
    });
    child.on('close', () => settle());
  });
}

/** Bounded capture of one stream: the first and last halves of the cap, with the middle counted. */
class OutputCapture {
  dropped = 0;
  private readonly head: Buffer[] = [];
  private headBytes = 0;
  private tail: Buffer[] = [];
  private tailBytes = 0;
  private readonly headMax: number;
  private readonly tailMax: number;

  constructor(max: number) {
    this.headMax = Math.ceil(max / 2);
    this.tailMax = Math.max(0, max - this.headMax);
  }

  push(chunk: Buffer): void {
    let rest = chunk;
    if (this.headBytes < this.headMax) {
      const take = Math.min(rest.length, this.headMax - this.headBytes);
      // copy a partial chunk so the kept bytes do not pin the whole chunk in memory
      this.head.push(take === rest.length ? rest : Buffer.from(rest.subarray(0, take)));
      this.headBytes += take;
      rest = rest.subarray(take);
    }
    if (rest.length === 0) return;
    this.tail.push(rest);
    this.tailBytes += rest.length;
    // compact only when the tail doubles, so many tiny chunks stay linear in cost
    if (this.tailBytes > 2 * this.tailMax) this.compactTail();
  }

  text(): string {
    this.compactTail();
    const head = Buffer.concat(this.head).toString('utf8');
    const tail = Buffer.concat(this.tail).toString('utf8');
    if (this.dropped === 0) return head + tail;
    return `${head}\n${omittedMarker(this.dropped)}\n${tail}`;
  }

  private compactTail(): void {
    if (this.tailBytes <= this.tailMax) return;
    const all = Buffer.concat(this.tail);
    this.dropped += all.length - this.tailMax;
    this.tail = [Buffer.from(all.subarray(all.length - this.tailMax))];
    this.tailBytes = this.tailMax;
  }
}

// Process groups still running; killed if keel itself exits, since they do not share our group
const liveGroups = new Set<number>();
let exitHookInstalled = false;

function trackGroup(pid: number): void {
  liveGroups.add(pid);
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const group of liveGroups) {
      try {
        process.kill(-group, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  });
}
