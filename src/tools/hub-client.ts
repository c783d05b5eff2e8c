/**
 * The hub as a caller meets it: KEEL_HUB_URL, the admin token, or a project token and an agent name.
 * An agent registers on first use and keeps its key in KEEL_HOME (a file of mode 0600, one per hub,
 * project token and name), so the project token is sent once and the key every time after.
 */
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const DEFAULT_HUB_URL = 'http://127.0.0.1:7431';

/** A refusal or failure from the hub, with its code. */
export class HubCallError extends Error {
  override name = 'HubCallError';
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly body: unknown = undefined,
  ) {
    super(message);
  }
}

export interface HubCall {
  // biome-ignore lint/suspicious/noExplicitAny: callers read the documented JSON shapes
  json: any;
  status: number;
}

/** One request with a bearer token; a 4xx/5xx becomes a HubCallError with the hub's code. */
export async function hubFetch(
  base: string,
  token: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<HubCall> {
  let res: Response;
  try {
    res = await fetch(new URL(path, base), {
      method,
      headers: {
        ...(token ? { authorization: `Bearer ${token}` } : {}),
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
  } catch (err) {
    throw new HubCallError(0, 'UNREACHABLE', `the hub at ${base} does not answer: ${(err as Error).message}`);
  }
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = { error: text };
  }
  if (res.status >= 400) {
    const j = json as { code?: string; error?: string };
    throw new HubCallError(res.status, j.code ?? `HTTP_${res.status}`, j.error ?? text, json);
  }
  return { json, status: res.status };
}

/** Where an agent's key for (hub, project token id, name) is kept. */
export function agentKeyFile(stateDir: string, url: string, projectToken: string, name: string): string {
  // the token's id names the project token without its secret
  const tokenId =
    /^khp_([0-9a-f]+)_/.exec(projectToken)?.[1] ?? createHash('sha256').update(projectToken).digest('hex');
  const digest = createHash('sha256').update(`${url}\0${tokenId}\0${name}`).digest('hex').slice(0, 24);
  return join(stateDir, 'hub', 'agents', `${digest}.json`);
}

/** The agent key for `name`: the kept one, or a new registration kept (0600) for next time. */
export async function agentKey(opts: {
  url: string;
  projectToken: string;
  name: string;
  role?: string;
  stateDir: string;
}): Promise<string> {
  const file = agentKeyFile(opts.stateDir, opts.url, opts.projectToken, opts.name);
  if (existsSync(file)) {
    const kept = JSON.parse(readFileSync(file, 'utf8')) as { agent_key?: string };
    if (kept.agent_key) return kept.agent_key;
  }
  const { json } = await hubFetch(opts.url, opts.projectToken, 'POST', '/v1/agents', {
    name: opts.name,
    ...(opts.role ? { role: opts.role } : {}),
  });
  const dir = join(opts.stateDir, 'hub', 'agents');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(join(opts.stateDir, 'hub'), 0o700);
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(
    tmp,
    `${JSON.stringify({ url: opts.url, name: opts.name, agent_id: json.agent_id, agent_key: json.agent_key })}\n`,
    {
      mode: 0o600,
      flag: 'wx',
    },
  );
  renameSync(tmp, file);
  return json.agent_key as string;
}

/** The lines of an SSE body as events: `{id, event, data}` each. */
export async function* sseEvents(
  body: ReadableStream<Uint8Array>,
): AsyncGenerator<{ id?: string; event?: string; data: string }> {
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true });
    for (;;) {
      const end = buffer.indexOf('\n\n');
      if (end === -1) break;
      const frame = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const event: { id?: string; event?: string; data: string } = { data: '' };
      const data: string[] = [];
      for (const line of frame.split('\n')) {
        if (line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon === -1 ? line : line.slice(0, colon);
        const value = colon === -1 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'id') event.id = value;
        else if (field === 'event') event.event = value;
        else if (field === 'data') data.push(value);
      }
      if (!data.length) continue;
      event.data = data.join('\n');
      yield event;
    }
  }
}
