/**
 * keel's A2A endpoint as an outside agent sees it: the SDK's own client reads the card, sends,
 * streams and cancels over real HTTP on 127.0.0.1, and each message runs a real keel session
 * (real SQLite, the scripted model). Until `keel serve` lands on this branch, the endpoint is
 * mounted here on a hono app of its own, the same call the serve app makes.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Message, type StreamResponse, TaskState } from '@a2a-js/sdk';
import { type ServerType, serve } from '@hono/node-server';
import { Hono } from 'hono';
import { afterEach, describe, expect, it } from 'vitest';
import { openRuntime, type Runtime } from '../../src/agent/runtime.js';
import { loadConfig } from '../../src/config/load.js';
import { startFixWith } from '../../src/server/a2a/fix-skill.js';
import { mountA2a } from '../../src/server/a2a/routes.js';
import { SqliteTaskStore } from '../../src/server/a2a/task-store.js';
import { FixRuns } from '../../src/server/fixes.js';
import { gitRepo } from '../helpers/tmp.js';
import { a2aClient, asTask, textOf } from './a2a-harness.js';
import { baseEnv, keelHome, model } from './harness.js';

const TOKEN = 'serve-token-for-tests';
const servers: ServerType[] = [];
const runtimes: Runtime[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise<void>((r) => s.close(() => r()))));
  for (const runtime of runtimes.splice(0)) runtime.close();
});

async function startA2a(modelUrl: string, repo: string, flags: Record<string, unknown> = {}) {
  const env = { ...baseEnv(keelHome()) };
  const loaded = loadConfig({
    cwd: repo,
    env,
    flags: { provider: 'openai', base_url: modelUrl, model: 'test-model', ...flags },
  });
  const app = new Hono();
  let origin = '';
  const runtime = openRuntime(env);
  runtimes.push(runtime);
  const fixes = new FixRuns({ project: repo, runtime, maxAttempts: 1 });
  mountA2a(app, {
    token: TOKEN,
    origin: () => origin,
    version: '0.1.0',
    start: (opts) => runtime.start({ ...opts, loaded, cwd: repo }),
    fix: startFixWith(fixes, () => loaded),
    store: new SqliteTaskStore(runtime.db, repo),
  });
  const server = await new Promise<ServerType>((resolve) => {
    const s = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }, () => resolve(s));
  });
  servers.push(server);
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return origin;
}

const clientFor = (origin: string, token = TOKEN) => a2aClient(origin, token);

const send = (text: string, extra: Record<string, unknown> = {}) => ({
  tenant: '',
  message: Message.fromJSON({ messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text }], ...extra }),
  configuration: undefined,
  metadata: undefined,
});

describe('keel over A2A, driven by the SDK client', () => {
  it('serves a card with the skills and bearer auth; a blocking send completes with the answer', async () => {
    const server = await model([{ text: 'The config is loaded in src/config/load.ts.' }]);
    const origin = await startA2a(server.url, gitRepo());
    const card = (await (await fetch(`${origin}/.well-known/agent-card.json`)).json()) as Record<
      string,
      unknown
    >;
    expect(card).toMatchObject({
      name: 'keel',
      supportedInterfaces: [{ url: `${origin}/a2a`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
      capabilities: { streaming: true },
      securitySchemes: { bearer: { httpAuthSecurityScheme: { scheme: 'Bearer' } } },
    });
    expect((card.skills as Array<{ id: string }>).map((s) => s.id)).toEqual(['ask', 'fix', 'edit', 'review']);

    const client = await clientFor(origin);
    const task = asTask(await client.sendMessage(send('Where is the config loaded?')));
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(textOf(task.artifacts[0]?.parts)).toBe('The config is loaded in src/config/load.ts.');
    const again = await client.getTask({ tenant: '', id: task.id });
    expect(again.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
  }, 60_000);

  it('refuses a call without the token', async () => {
    const server = await model([{ text: 'never sent' }]);
    const origin = await startA2a(server.url, gitRepo());
    const client = await clientFor(origin, '');
    await expect(client.sendMessage(send('hello'))).rejects.toThrow();
    const raw = await fetch(`${origin}/a2a`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: 'Bearer wrong' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: {} }),
    });
    expect(raw.status).toBe(401);
    expect(server.requests.length).toBe(0);
  }, 60_000);

  it('streams working then completed status updates', async () => {
    const server = await model([{ text: 'Streamed answer.', chunk_delay_ms: 50 }]);
    const origin = await startA2a(server.url, gitRepo());
    const client = await clientFor(origin);
    const states: number[] = [];
    for await (const event of client.sendMessageStream(send('stream please')))
      states.push(...statesOf(event));
    expect(states[0]).toBe(TaskState.TASK_STATE_SUBMITTED);
    expect(states).toContain(TaskState.TASK_STATE_WORKING);
    expect(states.at(-1)).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(states.indexOf(TaskState.TASK_STATE_WORKING)).toBeLessThan(states.length - 1);
  }, 60_000);

  it('cancels a task whose model hangs', async () => {
    const server = await model([{ hang: true }]);
    const origin = await startA2a(server.url, gitRepo());
    const client = await clientFor(origin);
    const stream = client.sendMessageStream(send('this will hang'));
    let taskId = '';
    const states: number[] = [];
    for await (const event of stream) {
      states.push(...statesOf(event));
      if (event.payload?.$case === 'task') taskId = event.payload.value.id;
      if (states.includes(TaskState.TASK_STATE_WORKING) && taskId) break;
    }
    // wait for the model request, so the cancel lands mid-run
    for (let i = 0; i < 100 && !server.requests.some((r) => r.path.endsWith('/chat/completions')); i++)
      await new Promise((r) => setTimeout(r, 100));
    const canceled = await client.cancelTask({ tenant: '', id: taskId, metadata: undefined });
    expect(canceled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    expect((await client.getTask({ tenant: '', id: taskId })).status?.state).toBe(
      TaskState.TASK_STATE_CANCELED,
    );
  }, 60_000);

  it('a gated write is input-required; "yes" lets it land and the task completes with the diff', async () => {
    const repo = gitRepo({ 'src/app.js': 'export const answer = 41;\n' });
    const server = await model([
      {
        tool_calls: [
          { name: 'edit_file', arguments: { path: 'src/app.js', old_string: '41', new_string: '42' } },
        ],
      },
      { text: 'Changed 41 to 42.' },
    ]);
    const origin = await startA2a(server.url, repo, { approvals: 'writes' });
    const client = await clientFor(origin);
    const asked = asTask(await client.sendMessage(send('make it 42', { metadata: { skill: 'edit' } })));
    expect(asked.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    expect(textOf(asked.status?.message?.parts)).toContain('edit_file src/app.js');
    expect(readFileSync(join(repo, 'src/app.js'), 'utf8')).toBe('export const answer = 41;\n');

    const done = asTask(
      await client.sendMessage(send('yes', { taskId: asked.id, contextId: asked.contextId })),
    );
    expect(done.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(readFileSync(join(repo, 'src/app.js'), 'utf8')).toBe('export const answer = 42;\n');
    const parts = done.artifacts.flatMap((a) => a.parts);
    expect(textOf(parts)).toContain('Changed 41 to 42.');
    expect(textOf(parts)).toContain('+export const answer = 42;');
  }, 60_000);
});

function chatRequests(server: { requests: Array<{ path: string }> }): number {
  return server.requests.filter((r) => r.path.endsWith('/chat/completions')).length;
}

function statesOf(event: StreamResponse): number[] {
  const p = event.payload;
  if (p?.$case === 'task') return [p.value.status?.state ?? 0];
  if (p?.$case === 'statusUpdate') return [p.value.status?.state ?? 0];
  return [];
}

async function startServe(home: string, repo: string) {
  const { spawn } = await import('node:child_process');
  const { KEEL_BIN } = await import('./harness.js');
  const child = spawn(process.execPath, [KEEL_BIN, 'serve', '--listen', '127.0.0.1:0', '--json'], {
    cwd: repo,
    env: { ...baseEnv(home), KEEL_SERVE_TOKEN: TOKEN },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const ready = await new Promise<{ port: number }>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('\n')) resolve(JSON.parse(out.split('\n')[0] ?? '') as { port: number });
    });
    child.on('exit', (code) => reject(new Error(`keel serve exited ${code}`)));
  });
  return { origin: `http://127.0.0.1:${ready.port}`, stop: () => child.kill('SIGTERM') };
}

describe('keel serve --json mounts the A2A endpoint', () => {
  it('through serve sessions: a gated write is input-required, answered with a data part, then completed; a hang is canceled', async () => {
    const repo = gitRepo({ 'src/app.js': 'export const answer = 41;\n' });
    const server = await model([
      {
        task: 'make it 42',
        tool_calls: [
          { name: 'edit_file', arguments: { path: 'src/app.js', old_string: '41', new_string: '42' } },
        ],
      },
      { task: 'make it 42', text: 'Changed it.' },
      { task: 'hang now', hang: true },
    ]);
    const home = keelHome(
      `provider = "openai"\nbase_url = "${server.url}"\nmodel = "test-model"\napprovals = "writes"\n`,
    );
    const serve = await startServe(home, repo);
    try {
      const client = await clientFor(serve.origin);
      const asked = asTask(await client.sendMessage(send('make it 42', { metadata: { skill: 'edit' } })));
      expect(asked.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
      expect(textOf(asked.status?.message?.parts)).toContain('edit_file');
      const answer = Message.fromJSON({
        messageId: randomUUID(),
        role: 'ROLE_USER',
        taskId: asked.id,
        contextId: asked.contextId,
        parts: [{ data: { decision: 'allow' } }],
      });
      const done = asTask(
        await client.sendMessage({
          tenant: '',
          message: answer,
          configuration: undefined,
          metadata: undefined,
        }),
      );
      expect(done.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
      expect(readFileSync(join(repo, 'src/app.js'), 'utf8')).toBe('export const answer = 42;\n');
      expect(textOf(done.artifacts.flatMap((a) => a.parts))).toContain('+export const answer = 42;');

      let taskId = '';
      for await (const event of client.sendMessageStream(send('hang now'))) {
        if (event.payload?.$case === 'task') taskId = event.payload.value.id;
        if (statesOf(event).includes(TaskState.TASK_STATE_WORKING) && taskId) break;
      }
      for (let i = 0; i < 100 && chatRequests(server) < 3; i++) await new Promise((r) => setTimeout(r, 100));
      const canceled = await client.cancelTask({ tenant: '', id: taskId, metadata: undefined });
      expect(canceled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    } finally {
      serve.stop();
    }
  }, 90_000);

  it('the real binary serves the card and completes a blocking send over its bearer token', async () => {
    const { spawn } = await import('node:child_process');
    const { KEEL_BIN } = await import('./harness.js');
    const server = await model([{ text: 'Answered by keel serve.' }]);
    const repo = gitRepo();
    const home = keelHome(`provider = "openai"\nbase_url = "${server.url}"\nmodel = "test-model"\n`);
    const child = spawn(process.execPath, [KEEL_BIN, 'serve', '--listen', '127.0.0.1:0', '--json'], {
      cwd: repo,
      env: { ...baseEnv(home), KEEL_SERVE_TOKEN: TOKEN },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      const ready = await new Promise<{ port: number }>((resolve, reject) => {
        let out = '';
        child.stdout.on('data', (d: Buffer) => {
          out += d.toString();
          if (out.includes('\n')) resolve(JSON.parse(out.split('\n')[0] ?? '') as { port: number });
        });
        child.on('exit', (code) => reject(new Error(`keel serve exited ${code}`)));
      });
      const origin = `http://127.0.0.1:${ready.port}`;
      const client = await clientFor(origin);
      const task = asTask(await client.sendMessage(send('hello over A2A')));
      expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
      expect(textOf(task.artifacts[0]?.parts)).toBe('Answered by keel serve.');
      // the task ran as a serve session, listed by the API
      const auth = { authorization: `Bearer ${TOKEN}` };
      const listed = (await (await fetch(`${origin}/v1/sessions`, { headers: auth })).json()) as {
        sessions: Array<{ prompt: string }>;
      };
      expect(listed.sessions.map((s) => s.prompt)).toContain('hello over A2A');
      const refused = await fetch(`${origin}/a2a`, { method: 'POST', body: '{}' });
      expect(refused.status).toBe(401);
    } finally {
      child.kill('SIGTERM');
    }
  }, 60_000);
});
