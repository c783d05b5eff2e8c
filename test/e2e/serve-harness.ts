/** `keel serve` as a client meets it: the real binary on 127.0.0.1:0, fetch, and SSE read off the wire. */
import { type ChildProcess, spawn } from 'node:child_process';
import { afterEach } from 'vitest';
import { baseEnv, KEEL_BIN } from './harness.js';

export interface Served {
  url: string;
  port: number;
  token: string;
  /** The projects it serves, as `--json` printed them. */
  projects: Array<{ name: string; path: string; default: boolean }>;
  child: ChildProcess;
  stderr(): string;
  /** A JSON request with the token (unless `token: null`); the status and the parsed body. */
  api(
    method: string,
    path: string,
    body?: unknown,
    opts?: { token?: string | null; headers?: Record<string, string> },
    // biome-ignore lint/suspicious/noExplicitAny: a test reads whatever JSON the server answers
  ): Promise<{ status: number; body: any }>;
  stop(): Promise<number | null>;
}

const running: Served[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((s) => s.stop()));
});

export async function startServe(opts: {
  cwd: string;
  home: string;
  args?: string[];
  env?: Record<string, string>;
}): Promise<Served> {
  const child = spawn(
    process.execPath,
    [KEEL_BIN, 'serve', '--listen', '127.0.0.1:0', '--json', ...(opts.args ?? [])],
    { cwd: opts.cwd, env: { ...baseEnv(opts.home), ...opts.env }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stdout = '';
  let stderr = '';
  child.stderr?.on('data', (d) => {
    stderr += d;
  });
  const first = await new Promise<Pick<Served, 'url' | 'port' | 'token' | 'projects'>>((resolve, reject) => {
    child.stdout?.on('data', (d) => {
      stdout += d;
      const line = stdout.split('\n')[0];
      if (stdout.includes('\n') && line) resolve(JSON.parse(line));
    });
    child.once('exit', (code) => reject(new Error(`keel serve exited ${code}: ${stderr}`)));
    setTimeout(() => reject(new Error(`keel serve did not start: ${stderr}`)), 20_000);
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const served: Served = {
    ...first,
    child,
    stderr: () => stderr,
    async api(method, path, body, o = {}) {
      const headers: Record<string, string> = { ...(o.headers ?? {}) };
      const token = o.token === undefined ? first.token : o.token;
      if (token) headers.authorization = `Bearer ${token}`;
      if (body !== undefined) headers['content-type'] = 'application/json';
      const res = await fetch(`http://127.0.0.1:${first.port}${path}`, {
        method,
        headers,
        ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
      });
      const text = await res.text();
      let parsed: unknown = text;
      try {
        parsed = JSON.parse(text);
      } catch {
        // not JSON (metrics, a page)
      }
      return { status: res.status, body: parsed };
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
  running.push(served);
  return served;
}

export interface SseFrame {
  id?: string;
  event: string;
  // biome-ignore lint/suspicious/noExplicitAny: a test reads whatever JSON the server streams
  data: any;
}

/**
 * Read a session's SSE stream until `until` holds for a frame (that frame included), or time runs out.
 * Comments (heartbeats) are skipped; `headers` can carry Last-Event-ID; `token` is the server's.
 */
export async function readStream(
  url: string,
  until: (frame: SseFrame, all: SseFrame[]) => boolean,
  opts: { token: string; headers?: Record<string, string>; timeoutMs?: number },
): Promise<SseFrame[]> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), opts.timeoutMs ?? 20_000);
  const frames: SseFrame[] = [];
  try {
    const headers = { authorization: `Bearer ${opts.token}`, ...opts.headers };
    const res = await fetch(url, { headers, signal: controller.signal });
    if (!res.ok || !res.body) throw new Error(`stream answered ${res.status}`);
    const decoder = new TextDecoder();
    let buffer = '';
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      buffer += decoder.decode(chunk, { stream: true });
      for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const frame: SseFrame = { event: 'message', data: '' };
        const data: string[] = [];
        for (const line of block.split('\n')) {
          if (line.startsWith(':')) continue;
          const [field, ...rest] = line.split(':');
          const value = rest.join(':').replace(/^ /, '');
          if (field === 'id') frame.id = value;
          else if (field === 'event') frame.event = value;
          else if (field === 'data') data.push(value);
        }
        if (!data.length) continue;
        frame.data = JSON.parse(data.join('\n'));
        frames.push(frame);
        if (until(frame, frames)) return frames;
      }
    }
    throw new Error(`the stream ended before the condition held: ${frames.map((f) => f.event).join(' ')}`);
  } catch (err) {
    if (controller.signal.aborted)
      throw new Error(`no such frame within the time: got ${frames.map((f) => f.event).join(' ')}`);
    throw err;
  } finally {
    clearTimeout(timer);
    controller.abort();
  }
}
