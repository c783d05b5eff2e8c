/** Spawning the real `keel` binary once, timing it, and (optionally) taking its peak RSS. */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const BIN = fileURLToPath(new URL('../bin/keel.js', import.meta.url));
const GNU_TIME = '/usr/bin/time';

/** How peak RSS is taken on this machine: GNU time's exact maxrss, else a /proc poll (a lower bound). */
export const rssMethod = existsSync(GNU_TIME) ? 'gnu-time' : 'proc-poll';

// Only what a shell normally carries: a variable such as NODE_EXTRA_CA_CERTS (set on some build machines)
// makes every Node process load a certificate bundle at start, ~40 ms that is the machine's, not keel's
// and the hub's three, so a bench can measure a session with hub tools (they are absent when unset)
const KEPT = [
  'PATH',
  'HOME',
  'LANG',
  'TERM',
  'TZ',
  'USER',
  'KEEL_HUB_URL',
  'KEEL_HUB_TOKEN',
  'KEEL_AGENT_NAME',
];

/** The environment keel (and the node floor) run in: a plain shell's, plus a private KEEL_HOME. */
export function keelEnv(home) {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => KEPT.includes(k)));
  return { ...env, KEEL_HOME: home, NO_COLOR: '1' };
}

/** Run `node bin/keel.js ...args`; see runNode. */
export function runKeel(args, opts) {
  return runNode([BIN, ...args], opts);
}

/**
 * Run `node ...nodeArgs` in a private KEEL_HOME and resolve when it exits.
 * `ms` is wall time from just before spawn() to the 'exit' event, read with process.hrtime;
 * `t0` is that start, so callers can place other hrtime stamps (a request arriving) on the same clock.
 */
export function runNode(nodeArgs, { cwd, home, rss = false }) {
  const env = keelEnv(home);
  const rssFile =
    rss && rssMethod === 'gnu-time' ? join(mkdtempSync(join(tmpdir(), 'keel-rss-')), 'rss') : '';
  const [cmd, argv] = rssFile
    ? [GNU_TIME, ['-f', '%M', '-o', rssFile, process.execPath, ...nodeArgs]]
    : [process.execPath, nodeArgs];
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    const child = spawn(cmd, argv, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let ms = 0;
    let code = null;
    let hwmKb = 0;
    const poll =
      rss && !rssFile
        ? setInterval(() => {
            hwmKb = Math.max(hwmKb, readHwmKb(child.pid));
          }, 2)
        : undefined;
    child.stdout.on('data', (d) => {
      stdout += d;
    });
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    child.on('error', reject);
    child.on('exit', (c) => {
      ms = Number(process.hrtime.bigint() - t0) / 1e6;
      code = c;
      clearInterval(poll);
    });
    // 'close' comes after the pipes drain; the clock already stopped at 'exit'
    child.on('close', () => {
      let rssKb;
      if (rssFile) {
        rssKb = Number(readFileSync(rssFile, 'utf8').trim().split('\n').at(-1));
        rmSync(join(rssFile, '..'), { recursive: true, force: true });
      } else if (rss) {
        rssKb = hwmKb;
      }
      resolve({ code, ms, t0, stdout, stderr, ...(rssKb !== undefined ? { rssKb } : {}) });
    });
  });
}

/** Run `node ...args` with the caller's own spawn options (cwd, env; `input` is written to its stdin), untimed; resolves with { status, stdout, stderr }. */
export function runNodeWith(args, { input, ...options }) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, {
      ...options,
      stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
    if (input !== undefined) child.stdin.end(input);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += d;
    });
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

/** Fail loudly when a run did not do what the bench assumes: timing a broken run measures nothing. */
export function assertOk(run, what) {
  if (run.code === 0) return run;
  throw new Error(`${what} exited ${run.code}\nstdout: ${run.stdout}\nstderr: ${run.stderr}`);
}

function readHwmKb(pid) {
  try {
    const m = readFileSync(`/proc/${pid}/status`, 'utf8').match(/^VmHWM:\s+(\d+) kB/m);
    return m ? Number(m[1]) : 0;
  } catch {
    return 0; // the process is gone; the last good read stands
  }
}
