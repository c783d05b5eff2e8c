/** `keel hub` as its callers meet it: the real binary on 127.0.0.1, its admin token file, fetch, SSE off the wire. */
import { type ChildProcess, spawn } from 'node:child_process';
import { createHmac, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterEach } from 'vitest';
import { trustFile } from '../../src/config/trust.js';
import { tempDir, writeFiles } from '../helpers/tmp.js';
import { baseEnv, KEEL_BIN, type KeelRun, keel } from './harness.js';

export interface RunningHub {
  url: string;
  port: number;
  adminToken: string;
  child: ChildProcess;
  stderr(): string;
  /** A JSON request with `token` (or none); the status and the parsed body. */
  // biome-ignore lint/suspicious/noExplicitAny: a test reads whatever JSON the hub answers
  api(method: string, path: string, token?: string, body?: unknown): Promise<{ status: number; body: any }>;
  /** `keel hub ARGS` against this hub, as `agent` with the project token `token` when given. */
  cli(
    args: string[],
    opts?: { agent?: string; token?: string; env?: Record<string, string> },
  ): Promise<KeelRun>;
  stop(): Promise<void>;
  /** kill -9: no goodbye, no flush. */
  kill(): Promise<void>;
}

const running: RunningHub[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((h) => h.stop()));
});

export async function startHub(opts: {
  home: string;
  cwd: string;
  listen?: string;
  env?: Record<string, string>;
  /** More `keel hub start` options (--workflow-project NAME). */
  args?: string[];
}): Promise<RunningHub> {
  const env = { ...baseEnv(opts.home), ...opts.env };
  const child = spawn(
    process.execPath,
    [KEEL_BIN, 'hub', 'start', '--listen', opts.listen ?? '127.0.0.1:0', '--json', ...(opts.args ?? [])],
    {
      cwd: opts.cwd,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stdout = '';
  let stderr = '';
  child.stderr?.on('data', (d) => {
    stderr += d;
  });
  const first = await new Promise<{ url: string; port: number; token_file: string | null }>(
    (resolve, reject) => {
      child.stdout?.on('data', (d) => {
        stdout += d;
        const line = stdout.split('\n')[0];
        if (stdout.includes('\n') && line) resolve(JSON.parse(line));
      });
      child.once('exit', (code) => reject(new Error(`keel hub start exited ${code}: ${stderr}`)));
      setTimeout(() => reject(new Error(`keel hub did not start: ${stderr}`)), 20_000);
    },
  );
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const adminToken = env.KEEL_HUB_ADMIN_TOKEN ?? readFileSync(first.token_file as string, 'utf8').trim();
  const hub: RunningHub = {
    url: first.url,
    port: first.port,
    adminToken,
    child,
    stderr: () => stderr,
    async api(method, path, token, body) {
      const headers: Record<string, string> = {};
      if (token) headers.authorization = `Bearer ${token}`;
      if (body !== undefined) headers['content-type'] = 'application/json';
      const res = await fetch(`${first.url}${path}`, {
        method,
        headers,
        ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
      });
      const text = await res.text();
      let parsed: unknown = text;
      try {
        parsed = JSON.parse(text);
      } catch {
        // not JSON (metrics)
      }
      return { status: res.status, body: parsed };
    },
    cli(args, o = {}) {
      return keel(['hub', ...args], {
        cwd: opts.cwd,
        home: opts.home,
        env: {
          KEEL_HUB_URL: first.url,
          ...(o.token ? { KEEL_HUB_TOKEN: o.token } : {}),
          ...(o.agent ? { KEEL_AGENT_NAME: o.agent } : {}),
          ...opts.env,
          ...o.env,
        },
      });
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
    async kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
  running.push(hub);
  return hub;
}

/** Read SSE events off `/v1/events` until `enough` says stop (or the stream ends); the connection is closed after. */
export async function readEvents(
  url: string,
  key: string,
  enough: (events: Array<{ id: string; data: Record<string, unknown> }>) => boolean,
  lastEventId?: string,
): Promise<Array<{ id: string; data: Record<string, unknown> }>> {
  const abort = new AbortController();
  const res = await fetch(`${url}/v1/events`, {
    headers: { authorization: `Bearer ${key}`, ...(lastEventId ? { 'last-event-id': lastEventId } : {}) },
    signal: abort.signal,
  });
  if (res.status !== 200 || !res.body) throw new Error(`events: HTTP ${res.status}`);
  const events: Array<{ id: string; data: Record<string, unknown> }> = [];
  const decoder = new TextDecoder();
  let buffer = '';
  try {
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      buffer += decoder.decode(chunk, { stream: true });
      let end = buffer.indexOf('\n\n');
      while (end !== -1) {
        const frame = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const id = /^id: ?(.*)$/m.exec(frame)?.[1];
        const data = /^data: ?(.*)$/m.exec(frame)?.[1];
        if (id !== undefined && data !== undefined) events.push({ id, data: JSON.parse(data) });
        end = buffer.indexOf('\n\n');
      }
      if (enough(events)) break;
    }
  } finally {
    abort.abort();
  }
  return events;
}

/** A project token and agents registered under it, through the API. */
export async function projectWithAgents(
  hub: RunningHub,
  project: string,
  ...names: string[]
): Promise<{ token: string; tokenId: string; keys: Record<string, string> }> {
  const created = await hub.api('POST', `/v1/projects/${project}/tokens`, hub.adminToken);
  if (created.status !== 201) throw new Error(`token create: ${JSON.stringify(created.body)}`);
  const keys: Record<string, string> = {};
  for (const name of names) {
    const reg = await hub.api('POST', '/v1/agents', created.body.token, { name });
    if (reg.status !== 201) throw new Error(`register ${name}: ${JSON.stringify(reg.body)}`);
    keys[name] = reg.body.agent_key;
  }
  return { token: created.body.token, tokenId: created.body.token_id, keys };
}

// ---- workflows served by keel hub start --workflow-project ----

const SECRET = 'gh-shared-secret';

export const QUORUM = `version: 1
trigger: {source: github, event: pull_request, secret_env: KEEL_WH_GITHUB}
stages:
  - {id: review, kind: quorum, eligible: [rev-a, rev-b, rev-c], min_producers: 2, prompt: "Review PR {{pull_request.number}}"}
  - {id: sign-off, kind: approval}
`;

/** A project folder with `workflows` (name → text) trusted in `home`'s trust file. */
export function workflowProject(home: string, workflows: Record<string, string>): string {
  const cwd = tempDir('keel-hub-wf-');
  writeFiles(
    cwd,
    Object.fromEntries(Object.entries(workflows).map(([n, t]) => [`.keel/workflows/${n}.yaml`, t])),
  );
  for (const name of Object.keys(workflows))
    trustFile(`${cwd}/.keel/workflows/${name}.yaml`, `${home}/trust.json`);
  return cwd;
}

/** POST a GitHub-signed delivery of `payload` to workflow `name`. */
export function githubWebhook(hub: RunningHub, name: string, payload: unknown, secret = SECRET) {
  const body = JSON.stringify(payload);
  return fetch(`${hub.url}/v1/webhooks/${name}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-github-event': 'pull_request',
      'x-github-delivery': randomUUID(),
      'x-hub-signature-256': `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`,
    },
    body,
  });
}

export const HUB_ENV = { KEEL_WH_GITHUB: SECRET };
