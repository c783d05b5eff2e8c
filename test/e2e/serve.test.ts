/** `keel serve`: the real binary on 127.0.0.1:0, a scripted model, real fetch and SSE read from the body. */
import { type ChildProcess, spawn } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { gitRepo } from '../helpers/tmp.js';
import { baseEnv, KEEL_BIN, keel, keelHome, model, modelFlags } from './harness.js';

interface Served {
  url: string;
  port: number;
  token: string;
  child: ChildProcess;
}

const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) c.kill('SIGKILL');
});

async function serve(args: string[], cwd: string, home: string): Promise<Served> {
  const child = spawn(process.execPath, [KEEL_BIN, 'serve', '--listen', '127.0.0.1:0', '--json', ...args], {
    cwd,
    env: baseEnv(home) as NodeJS.ProcessEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let out = '';
  let err = '';
  child.stderr?.on('data', (d: Buffer) => {
    err += d.toString();
  });
  const line = await new Promise<string>((resolve, reject) => {
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      const nl = out.indexOf('\n');
      if (nl >= 0) resolve(out.slice(0, nl));
    });
    child.on('close', (code) => reject(new Error(`keel serve exited ${code}: ${err}`)));
  });
  const doc = JSON.parse(line) as { url: string; port: number; token: string };
  expect(err).toContain(`keel serve: listening on http://127.0.0.1:${doc.port}/#token=${doc.token}`);
  return { ...doc, child };
}

interface SseFrame {
  id?: string;
  event: string;
  data: Record<string, unknown>;
}

/** Read SSE frames from a fetch body until `until` says stop. */
async function readSse(
  res: Response,
  until: (frames: SseFrame[]) => boolean,
  timeoutMs = 15_000,
): Promise<SseFrame[]> {
  const frames: SseFrame[] = [];
  const reader = res.body?.getReader();
  if (!reader) throw new Error('no body');
  const decoder = new TextDecoder();
  let buf = '';
  const timer = setTimeout(() => void reader.cancel(), timeoutMs);
  try {
    while (!until(frames)) {
      const { done, value } = await reader.read();
      if (done) break;
      buf += decoder.decode(value, { stream: true });
      for (let i = buf.indexOf('\n\n'); i >= 0; i = buf.indexOf('\n\n')) {
        const block = buf.slice(0, i);
        buf = buf.slice(i + 2);
        const f: Partial<SseFrame> & { lines: string[] } = { lines: [] };
        for (const l of block.split('\n')) {
          if (l.startsWith('id: ')) f.id = l.slice(4);
          else if (l.startsWith('event: ')) f.event = l.slice(7);
          else if (l.startsWith('data: ')) f.lines.push(l.slice(6));
        }
        if (f.event) frames.push({ id: f.id, event: f.event, data: JSON.parse(f.lines.join('\n')) });
      }
    }
  } finally {
    clearTimeout(timer);
    await reader.cancel().catch(() => {});
  }
  return frames;
}

const post = (s: Served, path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${s.url}${path.replace(/^\//, '')}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${s.token}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });

describe('keel serve', () => {
  it('creates a session and streams its events from the start; a reconnect gets exactly the later ones', async () => {
    const server = await model([{ text: 'Hello from the model.' }]);
    const s = await serve(modelFlags(server), gitRepo(), keelHome());
    const res = await post(s, '/v1/sessions', { prompt: 'say hello' });
    expect(res.status).toBe(201);
    const created = (await res.json()) as { session_id: string; mode: string; state: string };
    expect(created.mode).toBe('ask');
    const stream = await fetch(`${s.url}v1/sessions/${created.session_id}/events`);
    expect(stream.headers.get('content-type')).toContain('text/event-stream');
    const frames = await readSse(stream, (f) => f.some((x) => x.event === 'end'));
    const logged = frames.filter((f) => f.id !== undefined);
    expect(logged[0]?.event).toBe('session_start');
    expect(logged.map((f) => Number(f.id))).toEqual(logged.map((_, i) => i + 1));
    expect(frames.find((f) => f.event === 'session_end')?.data.code).toBe('COMPLETED');
    expect(frames.find((f) => f.event === 'end')?.data).toEqual({ code: 'COMPLETED', state: 'completed' });
    expect(
      frames
        .filter((f) => f.event === 'delta')
        .map((f) => f.data.text)
        .join('').trim(),
    ).toBe('Hello from the model.');

    const cut = 2;
    const later = logged.filter((f) => Number(f.id) > cut).map((f) => f.id);
    for (const how of ['header', 'query'] as const) {
      const again = await fetch(
        `${s.url}v1/sessions/${created.session_id}/events${how === 'query' ? `?after=${cut}` : ''}`,
        how === 'header' ? { headers: { 'last-event-id': String(cut) } } : {},
      );
      const replay = await readSse(again, (f) => f.filter((x) => x.id).length >= later.length, 3000);
      expect(replay.filter((f) => f.id).map((f) => f.id)).toEqual(later);
    }

    const got = (await (await fetch(`${s.url}v1/sessions/${created.session_id}`)).json()) as Record<
      string,
      unknown
    >;
    expect(got).toMatchObject({ session_id: created.session_id, state: 'completed', code: 'COMPLETED' });
    const list = (await (await fetch(`${s.url}v1/sessions`)).json()) as {
      sessions: Array<{ session_id: string }>;
    };
    expect(list.sessions.map((x) => x.session_id)).toEqual([created.session_id]);
  });

  it('refuses a POST without or with a wrong token (401), a forged Origin (403), a bad Host (421), a huge body (413)', async () => {
    const server = await model([]);
    const s = await serve(modelFlags(server), gitRepo(), keelHome());
    const plain = await fetch(`${s.url}v1/sessions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"prompt":"x"}',
    });
    expect(plain.status).toBe(401);
    expect(await plain.json()).toMatchObject({ code: 'UNAUTHORIZED' });
    expect((await post(s, '/v1/sessions', { prompt: 'x' }, { authorization: 'Bearer nope' })).status).toBe(
      401,
    );
    expect((await post(s, '/v1/sessions', { prompt: 'x' }, { origin: 'http://evil.example' })).status).toBe(
      403,
    );
    // fetch sets Host itself; a raw request can forge it
    const { request } = await import('node:http');
    const status = await new Promise<number>((resolve, reject) => {
      const r = request(
        { host: '127.0.0.1', port: s.port, path: '/v1/sessions', headers: { host: 'evil.example' } },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      r.on('error', reject);
      r.end();
    });
    expect(status).toBe(421);
    const huge = await post(s, '/v1/sessions', { prompt: 'x'.repeat(1024 * 1024 + 10) });
    expect(huge.status).toBe(413);
    expect((await post(s, '/v1/sessions', { mode: 'ask' })).status).toBe(400);
  });

  it('will not listen off loopback without KEEL_SERVE_TOKEN (exit 2)', async () => {
    const run = await keel(['serve', '--listen', '0.0.0.0:0'], { cwd: gitRepo(), home: keelHome() });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('KEEL_SERVE_TOKEN');
  });

  it('a gated write waits for POST approvals: allow lets it land, deny sends the reason to the model', async () => {
    const server = await model([
      {
        tool_calls: [{ id: 'w1', name: 'write_file', arguments: { path: 'yes.txt', content: 'allowed\n' } }],
      },
      {
        tool_calls: [{ id: 'w2', name: 'write_file', arguments: { path: 'no.txt', content: 'refused\n' } }],
        expect: { last_tool_result_contains: 'yes.txt' },
      },
      { text: 'understood', expect: { last_tool_result_contains: 'use the notes folder instead' } },
    ]);
    const repo = gitRepo();
    const s = await serve(modelFlags(server), repo, keelHome('approvals = "writes"\n'));
    const { session_id: id } = (await (
      await post(s, '/v1/sessions', { prompt: 'write', mode: 'edit' })
    ).json()) as {
      session_id: string;
    };
    const stream = await fetch(`${s.url}v1/sessions/${id}/events`);
    const first = await readSse(stream, (f) => f.some((x) => x.event === 'approval'));
    expect(first.find((f) => f.event === 'approval')?.data).toMatchObject({
      call_id: 'w1',
      tool: 'write_file',
    });
    const waiting = (await (await fetch(`${s.url}v1/sessions/${id}`)).json()) as {
      state: string;
      pending_approvals: Array<{ call_id: string; diff: string | null }>;
    };
    expect(waiting.state).toBe('waiting');
    expect(waiting.pending_approvals[0]?.call_id).toBe('w1');
    expect(waiting.pending_approvals[0]?.diff).toContain('+allowed');
    expect((await post(s, `/v1/sessions/${id}/approvals/w1`, { decision: 'allow' })).status).toBe(200);
    const live = await fetch(`${s.url}v1/sessions/${id}/events`);
    await readSse(live, (f) => f.some((x) => x.event === 'approval' && x.data.call_id === 'w2'));
    const denied = await post(s, `/v1/sessions/${id}/approvals/w2`, {
      decision: 'deny',
      reason: 'use the notes folder instead',
    });
    expect(denied.status).toBe(200);
    const end = await readSse(await fetch(`${s.url}v1/sessions/${id}/events`), (f) =>
      f.some((x) => x.event === 'end'),
    );
    expect(end.find((f) => f.event === 'end')?.data).toEqual({ code: 'COMPLETED', state: 'completed' });
    const { existsSync } = await import('node:fs');
    expect(existsSync(`${repo}/yes.txt`)).toBe(true);
    expect(existsSync(`${repo}/no.txt`)).toBe(false);
    expect((await post(s, `/v1/sessions/${id}/approvals/w9`, { decision: 'allow' })).status).toBe(404);
  });

  it('an unanswered question is denied after --approval-timeout', async () => {
    const server = await model([
      { tool_calls: [{ id: 'w1', name: 'write_file', arguments: { path: 'late.txt', content: 'x\n' } }] },
      { text: 'ok', expect: { last_tool_result_contains: 'no answer within 1s' } },
    ]);
    const repo = gitRepo();
    const s = await serve(
      [...modelFlags(server), '--approval-timeout', '1'],
      repo,
      keelHome('approvals = "writes"\n'),
    );
    const { session_id: id } = (await (
      await post(s, '/v1/sessions', { prompt: 'write', mode: 'edit' })
    ).json()) as {
      session_id: string;
    };
    const frames = await readSse(await fetch(`${s.url}v1/sessions/${id}/events`), (f) =>
      f.some((x) => x.event === 'end'),
    );
    expect(frames.find((f) => f.event === 'approval_settled')?.data).toEqual({
      call_id: 'w1',
      decision: 'deny',
    });
    expect(frames.find((f) => f.event === 'end')?.data.code).toBe('COMPLETED');
  });

  it('cancel ends a hanging turn CANCELLED; a message when idle starts a new turn; fork branches it', async () => {
    const server = await model([{ hang: true }, { text: 'second turn' }, { text: 'in the fork' }]);
    const s = await serve(modelFlags(server), gitRepo(), keelHome());
    const { session_id: id } = (await (await post(s, '/v1/sessions', { prompt: 'wait' })).json()) as {
      session_id: string;
    };
    await readSse(await fetch(`${s.url}v1/sessions/${id}/events`), (f) =>
      f.some((x) => x.event === 'model_request'),
    );
    expect((await post(s, `/v1/sessions/${id}/cancel`, {})).status).toBe(202);
    const ended = await readSse(await fetch(`${s.url}v1/sessions/${id}/events`), (f) =>
      f.some((x) => x.event === 'end'),
    );
    expect(ended.find((f) => f.event === 'end')?.data).toEqual({ code: 'CANCELLED', state: 'cancelled' });

    const turn = await post(s, `/v1/sessions/${id}/messages`, { text: 'go on' });
    expect(turn.status).toBe(202);
    expect(await turn.json()).toEqual({ delivered: 'turn' });
    const after = Number(ended.filter((f) => f.id).at(-1)?.id);
    const second = await readSse(await fetch(`${s.url}v1/sessions/${id}/events?after=${after}`), (f) =>
      f.some((x) => x.event === 'end'),
    );
    expect(second.find((f) => f.event === 'end')?.data.code).toBe('COMPLETED');
    expect(second.find((f) => f.event === 'user_message')?.data.text).toBe('go on');

    const forked = await post(s, `/v1/sessions/${id}/fork`, { prompt: 'branch off' });
    expect(forked.status).toBe(201);
    const { session_id: fid } = (await forked.json()) as { session_id: string };
    expect(fid).not.toBe(id);
    await readSse(await fetch(`${s.url}v1/sessions/${fid}/events`), (f) => f.some((x) => x.event === 'end'));
    const fork = (await (await fetch(`${s.url}v1/sessions/${fid}`)).json()) as Record<string, unknown>;
    expect(fork).toMatchObject({ parent_id: id, state: 'completed' });
    const parent = (await (await fetch(`${s.url}v1/sessions/${id}`)).json()) as { children: string[] };
    expect(parent.children).toEqual([fid]);
  });

  it('documents every route in /v1/openapi.json, counts in /metrics, and says when the web workspace is not built', async () => {
    const server = await model([{ text: 'hi' }]);
    const s = await serve(modelFlags(server), gitRepo(), keelHome());
    const doc = (await (await fetch(`${s.url}v1/openapi.json`)).json()) as {
      openapi: string;
      info: { title: string };
      paths: Record<string, Record<string, { responses: unknown; requestBody?: unknown }>>;
    };
    expect(doc.openapi).toMatch(/^3\.1/);
    expect(doc.info.title).toBeTruthy();
    const { createApp } = await import('../../src/server/app.js');
    const { SessionManager } = await import('../../src/server/sessions.js');
    const app = createApp({
      manager: {} as InstanceType<typeof SessionManager>,
      token: 't',
      port: () => 1,
      tokenForAll: false,
    });
    const routes = new Set(
      app.routes
        .filter((r) => r.method !== 'ALL' && !r.path.includes('*'))
        .map((r) => `${r.method.toLowerCase()} ${r.path.replace(/:([A-Za-z_]+)/g, '{$1}')}`),
    );
    const documented = new Set(
      Object.entries(doc.paths).flatMap(([p, ops]) => Object.keys(ops).map((m) => `${m} ${p}`)),
    );
    expect([...documented].sort()).toEqual([...routes].sort());
    for (const ops of Object.values(doc.paths))
      for (const op of Object.values(ops)) expect(op.responses).toBeTruthy();
    expect(doc.paths['/v1/sessions']?.post?.requestBody).toBeTruthy();
    expect(routes.has('post /v1/sessions/{id}/approvals/{call}')).toBe(true);

    await post(s, '/v1/sessions', { prompt: 'hi' });
    await new Promise((r) => setTimeout(r, 1500));
    const metrics = await (await fetch(`${s.url}metrics`)).text();
    expect(metrics).toMatch(/keel_sessions\{state="(completed|running)"\} 1/);
    expect(metrics).toContain('keel_http_request_duration_seconds_count');
    expect((await fetch(`${s.url}health`)).status).toBe(200);
    const { existsSync } = await import('node:fs');
    const page = await fetch(s.url);
    if (!existsSync(new URL('../../dist/web/index.html', import.meta.url))) {
      expect(page.status).toBe(404);
      expect(await page.text()).toContain('web workspace not built');
    } else expect(page.headers.get('content-type')).toContain('text/html');
    expect(page.headers.get('content-security-policy')).toBe("default-src 'self'");
    expect(page.headers.get('x-content-type-options')).toBe('nosniff');
    expect((await fetch(`${s.url}..%2F..%2Fpackage.json`)).status).toBe(404);
  });
});
