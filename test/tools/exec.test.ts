import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { commandArgv, type RunOptions, runCommand } from '../../src/policy/exec.js';
import { tempDir } from './context.js';

function options(cwd: string, over: Partial<RunOptions> = {}): RunOptions {
  return { cwd, timeoutS: 10, signal: new AbortController().signal, maxOutputBytes: 1 << 20, ...over };
}

/** True while `pid` runs; a zombie (killed, not yet reaped by init) counts as dead. */
function alive(pid: number): boolean {
  const stat = `/proc/${pid}/stat`;
  if (!existsSync(stat)) return false;
  const state = readFileSync(stat, 'utf8').replace(/^.*\) /s, '')[0];
  return state !== 'Z' && state !== 'X';
}

/** Whether `pid` is still running after up to `ms`: a SIGKILLed process needs a moment to be reaped. */
async function stillAliveAfter(pid: number, ms = 3000): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (alive(pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  return alive(pid);
}

/** Wait for a file to hold a pid, written by a background job of the command under test. */
async function pidFrom(file: string): Promise<number> {
  for (let i = 0; i < 100 && !existsSync(file); i++) await new Promise((r) => setTimeout(r, 20));
  return Number(readFileSync(file, 'utf8').trim());
}

describe('commandArgv', () => {
  it('runs a shell string through /bin/sh -c and an argv as given', () => {
    expect(commandArgv({ shell: 'echo hi' })).toEqual(['/bin/sh', '-c', 'echo hi']);
    expect(commandArgv(['git', 'status'])).toEqual(['git', 'status']);
    expect(() => commandArgv([])).toThrow(/empty argv/);
  });
});

describe('runCommand', () => {
  it('hands output to a listener as it arrives, with a character split across pieces kept whole', async () => {
    const seen: Array<{ at: number; text: string; stream: string }> = [];
    const started = Date.now();
    // "é" is two bytes; printf writes the first, then the second 300 ms later
    const result = await runCommand(
      { shell: "printf 'one\\n\\303'; sleep 0.3; printf '\\251\\n' ; echo err >&2" },
      options(tempDir(), {
        onOutput: (text, stream) => seen.push({ at: Date.now() - started, text, stream }),
      }),
    );
    expect(result.stdout).toBe('one\né\n');
    const out = seen.filter((s) => s.stream === 'stdout');
    expect(out.map((s) => s.text).join('')).toBe('one\né\n');
    expect(out[0]?.text).toBe('one\n');
    // the first piece came before the command finished: live, not at the end
    expect(out[0]?.at ?? 1e9).toBeLessThan((out.at(-1)?.at ?? 0) - 200);
    expect(seen.filter((s) => s.stream === 'stderr').map((s) => s.text)).toEqual(['err\n']);
  });

  it('reports the exit code and keeps stdout and stderr apart', async () => {
    const dir = tempDir();
    const res = await runCommand({ shell: 'echo out; echo err >&2; pwd; exit 3' }, options(dir));
    expect(res).toEqual({
      exitCode: 3,
      signal: null,
      stdout: `out\n${dir}\n`,
      stderr: 'err\n',
      timedOut: false,
      truncated: false,
    });
  });

  it('runs an argv without a shell, with stdin closed and the given env', async () => {
    const dir = tempDir();
    const res = await runCommand(
      ['/bin/sh', '-c', 'cat; echo "$ONLY"'],
      options(dir, { env: { ONLY: 'this' } }),
    );
    expect(res.stdout).toBe('this\n');
    expect(res.exitCode).toBe(0);
  });

  it('rejects when the program cannot be started', async () => {
    await expect(runCommand(['/no/such/program'], options(tempDir()))).rejects.toThrow(/ENOENT/);
  });

  it('on timeout kills the whole tree, including a child that ignores SIGTERM', async () => {
    const dir = tempDir();
    const pidFile = join(dir, 'child.pid');
    const started = Date.now();
    const res = await runCommand(
      { shell: `trap "" TERM; sleep 30 & echo $! > ${pidFile}; wait` },
      options(dir, { timeoutS: 1 }),
    );
    expect(res.timedOut).toBe(true);
    expect(res.signal).toBe('SIGKILL');
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(await stillAliveAfter(await pidFrom(pidFile))).toBe(false);
  });

  it('stops the tree when the signal aborts', async () => {
    const dir = tempDir();
    const pidFile = join(dir, 'child.pid');
    const abort = new AbortController();
    const pending = runCommand(
      { shell: `sleep 30 & echo $! > ${pidFile}; wait` },
      options(dir, { signal: abort.signal }),
    );
    const child = await pidFrom(pidFile);
    abort.abort();
    const res = await pending;
    expect(res).toMatchObject({ exitCode: null, signal: 'SIGTERM', timedOut: false });
    expect(await stillAliveAfter(child)).toBe(false);
  });

  it('returns when the command exits, stopping what it left running in the background', async () => {
    const dir = tempDir();
    const pidFile = join(dir, 'child.pid');
    const started = Date.now();
    const res = await runCommand({ shell: `sleep 30 & echo $! > ${pidFile}; echo done` }, options(dir));
    expect(res.stdout).toBe('done\n');
    expect(res.exitCode).toBe(0);
    expect(Date.now() - started).toBeLessThan(10_000);
    const leftover = await pidFrom(pidFile);
    expect(await stillAliveAfter(leftover, 1000)).toBe(false);
  });

  it('caps huge output to head and tail with bounded memory, counting what it dropped', async () => {
    const dir = tempDir();
    const max = 64 * 1024;
    let peak = 0;
    const base = process.memoryUsage();
    const sampler = setInterval(() => {
      const now = process.memoryUsage();
      peak = Math.max(peak, now.heapUsed + now.arrayBuffers - base.heapUsed - base.arrayBuffers);
    }, 10);
    const res = await runCommand(
      { shell: 'yes | head -c 200000000; echo tail-end' },
      options(dir, { maxOutputBytes: max }),
    ).finally(() => clearInterval(sampler));
    expect(res.exitCode).toBe(0);
    expect(res.truncated).toBe(true);
    const total = 200_000_000 + 'tail-end\n'.length;
    expect(res.stdout).toContain(`[... ${total - max} bytes omitted ...]`);
    expect(res.stdout.startsWith('y\ny\n')).toBe(true);
    expect(res.stdout.endsWith('y\ntail-end\n')).toBe(true);
    expect(res.stdout.length).toBeLessThan(max + 100);
    // holding the whole output would be 200 MB or more
    expect(peak).toBeLessThan(100 * 1024 * 1024);
  });
});
