/** End-to-end harness: the real `keel` binary, a scripted model on 127.0.0.1, a temporary KEEL_HOME. */
import { type ChildProcess, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach } from 'vitest';
import type { Script, ScriptTurn } from '../../src/model/script.js';
import { type ScriptServer, startScriptServer } from '../../src/model/script-server.js';
import { openDb } from '../../src/store/db.js';
import { EventLog, type StoredEvent } from '../../src/store/event-log.js';
import { tempDir } from '../helpers/tmp.js';

export const KEEL_BIN = fileURLToPath(new URL('../../bin/keel.js', import.meta.url));

const servers: ScriptServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

/** A scripted OpenAI-compatible model server, closed after the test. */
export async function model(
  turns: ScriptTurn[],
  opts: Parameters<typeof startScriptServer>[1] = {},
): Promise<ScriptServer> {
  const server = await startScriptServer({ turns } as Script, opts);
  servers.push(server);
  return server;
}

export interface KeelRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  ms: number;
}

export interface KeelOptions {
  cwd: string;
  home: string;
  env?: Record<string, string | undefined>;
  input?: string;
  timeoutMs?: number;
  /** Called with the child once it is spawned (to send signals). */
  onSpawn?(child: ChildProcess): void;
}

/** A clean environment: nothing from the developer's shell leaks into a test. */
export function baseEnv(home: string): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: home,
    KEEL_HOME: home,
    NO_COLOR: '1',
    LANG: 'C.UTF-8',
  };
}

/** Run the real binary and collect its output. */
export function keel(args: string[], opts: KeelOptions): Promise<KeelRun> {
  const started = Date.now();
  return new Promise((resolvePromise, reject) => {
    const env = { ...baseEnv(opts.home), ...opts.env };
    for (const [k, v] of Object.entries(env)) if (v === undefined) delete env[k];
    const child = spawn(process.execPath, [KEEL_BIN, ...args], {
      cwd: opts.cwd,
      env: env as NodeJS.ProcessEnv,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 20_000);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolvePromise({ code, signal, stdout, stderr, ms: Date.now() - started });
    });
    child.stdin.end(opts.input ?? '');
    opts.onSpawn?.(child);
  });
}

/** Flags that point keel at a scripted server. */
export function modelFlags(server: ScriptServer, name = 'test-model'): string[] {
  return ['--provider', 'openai', '--base-url', server.url, '--model', name];
}

/** A fresh KEEL_HOME, optionally with a user config file. */
export function keelHome(config?: string): string {
  const home = tempDir('keel-home-');
  if (config) writeFileSync(join(home, 'config.toml'), config);
  return home;
}

/** `fn` over the event log of a KEEL_HOME, read straight from SQLite (closed after). */
export function withEventLog<T>(home: string, fn: (log: EventLog) => T): T {
  const db = openDb(join(home, 'keel.db'));
  try {
    return fn(new EventLog(db));
  } finally {
    db.close();
  }
}

/** Every event of the newest session in a KEEL_HOME, read straight from SQLite. */
export function lastSessionEvents(home: string): StoredEvent[] {
  return withEventLog(home, (log) => {
    const [session] = log.listSessions(1);
    if (!session) throw new Error('no session recorded');
    return log.events(session.id);
  });
}

/** The terminal codes of a log's session_end events, in order. */
export const ends = (events: StoredEvent[]) =>
  events.filter((e) => e.type === 'session_end').map((e) => e.data.code);

/** Poll `fn` until it returns a value, for up to `ms`; a throw counts as not yet (the store may not exist yet). */
export async function eventually<T>(fn: () => T | undefined, ms = 15_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    try {
      const value = fn();
      if (value) return value;
    } catch {
      // the store may not exist yet
    }
    if (Date.now() > end) throw new Error('condition never held');
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Run `sh -c SCRIPT` with $KEEL naming the binary (a real pipe into keel, as a shell makes it); its output. */
export function shell(
  script: string,
  cwd: string,
  home: string,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('sh', ['-c', script], {
      cwd,
      env: { ...baseEnv(home), KEEL: `${process.execPath} ${KEEL_BIN}` },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** The chat-completion request bodies the server received, in order (metadata calls left out). */
export function chatBodies(server: ScriptServer): unknown[] {
  return server.requests
    .filter((r) => r.method === 'POST' && r.path.endsWith('/chat/completions'))
    .map((r) => r.body);
}

/** Messages of a recorded chat-completions request body. */
export function requestMessages(
  body: unknown,
): Array<{ role: string; content?: string | null; tool_calls?: unknown[] }> {
  return (body as { messages: Array<{ role: string; content?: string | null }> }).messages;
}

/** Tool names offered in a recorded request body. */
/** What the catalogue tool (`tools`) of a request names as activatable: the words of its description. */
export function catalogueOf(body: unknown): string[] {
  const tools = (body as { tools?: Array<{ function: { name: string; description: string } }> }).tools ?? [];
  const text = tools.find((t) => t.function.name === 'tools')?.function.description ?? '';
  const list = text.slice(text.indexOf(': ') + 2).replace(/( and \d+ more)?\.$/, '');
  return text.includes(': ') ? list.split(', ') : [];
}

export function offeredTools(body: unknown): string[] {
  return ((body as { tools?: Array<{ function: { name: string } }> }).tools ?? []).map(
    (t) => t.function.name,
  );
}
