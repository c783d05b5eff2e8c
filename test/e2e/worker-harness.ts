/** `keel worker` as its operator meets it: the real binary, its JSON event lines, a kill -9 or a clean stop. */
import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach } from 'vitest';
import type { ScriptServer } from '../../src/model/script-server.js';
import { baseEnv, KEEL_BIN, modelFlags } from './harness.js';

export interface RunningWorker {
  child: ChildProcess;
  /** The worker's `--json` event lines so far. */
  events(): Array<Record<string, unknown>>;
  stderr(): string;
  /** Resolves once an event matches. */
  until(match: (e: Record<string, unknown>) => boolean): Promise<Record<string, unknown>>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const running: ChildProcess[] = [];
afterEach(() => {
  for (const child of running.splice(0))
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

export function startWorker(opts: {
  home: string;
  cwd: string;
  hubUrl: string;
  token: string;
  name: string;
  server: ScriptServer;
  args?: string[];
}): RunningWorker {
  const child = spawn(
    process.execPath,
    [KEEL_BIN, 'worker', '--name', opts.name, '--json', ...modelFlags(opts.server), ...(opts.args ?? [])],
    {
      cwd: opts.cwd,
      env: { ...baseEnv(opts.home), KEEL_HUB_URL: opts.hubUrl, KEEL_HUB_TOKEN: opts.token },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  running.push(child);
  let stdout = '';
  let stderr = '';
  const waiters: Array<() => void> = [];
  child.stdout?.on('data', (d) => {
    stdout += d;
    for (const w of waiters) w();
  });
  child.stderr?.on('data', (d) => {
    stderr += d;
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => {
      resolve({ code, signal });
      for (const w of waiters) w();
    }),
  );
  const events = () =>
    stdout
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  return {
    child,
    events,
    stderr: () => stderr,
    exited,
    until(match) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const found = events().find(match);
          if (found) resolve(found);
          else if (child.exitCode !== null || child.signalCode !== null)
            reject(new Error(`keel worker exited: ${stderr}`));
          else return false;
          return true;
        };
        if (!check()) waiters.push(check);
      });
    },
  };
}

/** The agent key a `keel worker` kept in KEEL_HOME (there is one registration in the home). */
export function keptAgentKey(home: string): string {
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (p.includes(`${join('hub', 'agents')}`) && p.endsWith('.json')) files.push(p);
    }
  };
  walk(home);
  if (files.length !== 1) throw new Error(`expected one kept agent key in ${home}, found ${files.length}`);
  return JSON.parse(readFileSync(files[0] as string, 'utf8')).agent_key;
}
