/**
 * `keel hub …`: start the hub (src/hub/), keep its project tokens (the admin's), and talk through it
 * as an agent (send, inbox, reply, ack, peers). The caller is configured by KEEL_HUB_URL, and either
 * KEEL_HUB_ADMIN_TOKEN (or the token file the hub wrote in KEEL_HOME) or KEEL_HUB_TOKEN with
 * KEEL_AGENT_NAME.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve as resolvePath } from 'node:path';
import { keelPaths } from '../config/paths.js';
import type { MessageView } from '../hub/hub-store.js';
import { type HubWorkflows, isLoopback, startHub } from '../hub/server.js';
import { EXIT } from '../term/exit-codes.js';
import { inert, inertLine } from '../term/inert.js';
import { load } from '../term/options.js';
import { agentKey, DEFAULT_HUB_URL, HubCallError, hubFetch, sseEvents } from '../tools/hub-client.js';
import { reportError } from './errors.js';
import { hubSealingKey } from './hub-audit-key.js';
import { parseListen } from './serve-command.js';
import { openConfiguredStore } from './team-store.js';

interface Json {
  json?: boolean;
}

function out(json: boolean | undefined, doc: unknown, text: string): number {
  if (json) process.stdout.write(`${JSON.stringify(doc)}\n`);
  else if (text) process.stdout.write(`${text}\n`);
  return EXIT.ok;
}

/** A hub refusal (its code, exit 1), an unreachable hub (exit 3), or a missing setting (exit 2). */
export function failed(json: boolean | undefined, err: unknown): number {
  if (err instanceof HubCallError) {
    if (err.code === 'UNREACHABLE') return reportError(json, 'ENVIRONMENT_ERROR', err.message);
    if (json)
      process.stdout.write(
        `${JSON.stringify({ code: err.code, exit_code: EXIT.failed, error: err.message, status: err.status, ...(typeof err.body === 'object' ? err.body : {}) })}\n`,
      );
    else process.stderr.write(`keel: hub refused (${err.code}): ${inertLine(err.message)}\n`);
    return EXIT.failed;
  }
  if (err instanceof SettingError) return reportError(json, 'CONFIG_ERROR', err.message);
  throw err;
}

export class SettingError extends Error {}

export function hubUrl(): string {
  return (process.env.KEEL_HUB_URL?.trim() || DEFAULT_HUB_URL).replace(/\/+$/, '');
}

function adminTokenFile(): string {
  return join(keelPaths().stateDir, 'hub', 'admin-token');
}

export function adminToken(): string {
  const configured = process.env.KEEL_HUB_ADMIN_TOKEN?.trim();
  if (configured) return configured;
  const file = adminTokenFile();
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  throw new SettingError(
    `no admin token: set KEEL_HUB_ADMIN_TOKEN, or run this where keel hub start wrote ${file}`,
  );
}

async function callerKey(): Promise<string> {
  const projectToken = process.env.KEEL_HUB_TOKEN?.trim();
  const name = process.env.KEEL_AGENT_NAME?.trim();
  if (!projectToken || !name)
    throw new SettingError(
      'set KEEL_HUB_TOKEN (a project token from keel hub token create) and KEEL_AGENT_NAME (who you are in the project)',
    );
  return agentKey({ url: hubUrl(), projectToken, name, stateDir: keelPaths().stateDir });
}

async function asAgent(method: string, path: string, body?: unknown) {
  return hubFetch(hubUrl(), await callerKey(), method, path, body);
}

// ---- keel hub start ----

export async function runHubStart(
  flags: Json & { listen?: string; rate?: number; workflows?: string; workflowProject?: string },
  version: string,
): Promise<number> {
  const listen = parseListen(flags.listen ?? '127.0.0.1:7431');
  if (typeof listen === 'string') return reportError(flags.json, 'CONFIG_ERROR', listen);
  const configured = process.env.KEEL_HUB_ADMIN_TOKEN?.trim();
  if (!isLoopback(listen.host) && !configured)
    return reportError(
      flags.json,
      'CONFIG_ERROR',
      `--listen ${listen.host} is not a loopback address: set KEEL_HUB_ADMIN_TOKEN first (off loopback the admin token must be one you chose, not one written to a local file)`,
    );
  let token = configured ?? '';
  let tokenFile: string | null = null;
  if (!token) {
    // one admin token per KEEL_HOME, kept 0600 beside keel's other state, so the CLI here finds it
    tokenFile = adminTokenFile();
    if (existsSync(tokenFile)) token = readFileSync(tokenFile, 'utf8').trim();
    if (!token) {
      mkdirSync(join(keelPaths().stateDir, 'hub'), { recursive: true, mode: 0o700 });
      token = randomBytes(32).toString('base64url');
      writeFileSync(tokenFile, `${token}\n`, { mode: 0o600 });
    }
    chmodSync(tokenFile, 0o600);
  }
  let opened: Awaited<ReturnType<typeof openConfiguredStore>>;
  try {
    opened = await openConfiguredStore({}, { create: true });
  } catch (err) {
    return reportError(flags.json, 'ENVIRONMENT_ERROR', (err as Error).message);
  }
  const store = opened.store;
  if (!store) return reportError(flags.json, 'ENVIRONMENT_ERROR', `cannot open the store at ${opened.where}`);
  const rate = flags.rate ?? Number(process.env.KEEL_HUB_RATE_PER_S ?? 1000);
  let workflows: HubWorkflows | undefined;
  if (flags.workflowProject) {
    let key: Buffer;
    try {
      // the user's config was read to open the store just above: it stands
      key = hubSealingKey(process.env, load({}).loaded.config.hub_audit_key_file);
    } catch (err) {
      await store.close();
      return reportError(flags.json, 'ENVIRONMENT_ERROR', (err as Error).message);
    }
    workflows = {
      root: resolvePath(flags.workflows ?? process.cwd()),
      trustFile: keelPaths().trustFile,
      project: flags.workflowProject,
      key,
      env: process.env,
    };
  } else if (flags.workflows) {
    await store.close();
    return reportError(
      flags.json,
      'CONFIG_ERROR',
      '--workflows needs --workflow-project NAME (the hub project whose agents the runs ask)',
    );
  }
  const hub = await startHub({
    ...(workflows ? { workflows } : {}),
    store,
    host: listen.host,
    port: listen.port,
    adminToken: token,
    version,
    ratePerS: rate,
  });
  if (typeof hub === 'string') {
    await store.close();
    return reportError(flags.json, 'ENVIRONMENT_ERROR', hub);
  }
  if (flags.json)
    process.stdout.write(
      `${JSON.stringify({ url: hub.url, port: hub.port, token_file: tokenFile, store: opened.engine })}\n`,
    );
  process.stderr.write(
    `keel hub: listening on ${hub.url} (store: ${opened.engine}); admin token ${tokenFile ? `in ${tokenFile}` : 'from KEEL_HUB_ADMIN_TOKEN'}\n`,
  );
  await new Promise<void>((resolve) => {
    process.once('SIGINT', () => resolve());
    process.once('SIGTERM', () => resolve());
  });
  process.stderr.write('keel hub: stopping\n');
  await hub.close();
  await store.close();
  return EXIT.ok;
}

// ---- the admin's tokens ----

export async function hubTokenCreate(flags: Json & { project: string }): Promise<number> {
  try {
    const { json } = await hubFetch(
      hubUrl(),
      adminToken(),
      'POST',
      `/v1/projects/${encodeURIComponent(flags.project)}/tokens`,
    );
    return out(
      flags.json,
      json,
      `token ${json.token_id} for project ${inert(json.project)} (shown once; only its hash is kept):\n${json.token}`,
    );
  } catch (err) {
    return failed(flags.json, err);
  }
}

export async function hubTokenList(flags: Json): Promise<number> {
  try {
    const { json } = await hubFetch(hubUrl(), adminToken(), 'GET', '/v1/tokens');
    const rows = (json.tokens as Array<Record<string, unknown>>).map(
      (t) =>
        `${t.token_id}  ${t.kind}  ${inert(String(t.project))}${t.agent ? `  ${inert(String(t.agent))}` : ''}${t.revoked_at ? '  revoked' : ''}`,
    );
    return out(flags.json, json, rows.join('\n') || 'no tokens');
  } catch (err) {
    return failed(flags.json, err);
  }
}

export async function hubTokenRevoke(tokenId: string, flags: Json): Promise<number> {
  try {
    const { json } = await hubFetch(
      hubUrl(),
      adminToken(),
      'POST',
      `/v1/tokens/${encodeURIComponent(tokenId)}/revoke`,
    );
    return out(
      flags.json,
      json,
      `revoked ${json.token_id} (and ${json.agent_keys_revoked} agent key(s) registered with it)`,
    );
  } catch (err) {
    return failed(flags.json, err);
  }
}

// ---- an agent's ----

function line(m: MessageView): string {
  return `${m.id}  from ${inert(m.from)}  [${m.state}]${m.reply_to ? `  re ${m.reply_to}` : ''}\n${inert(m.body)}`;
}

export async function hubSend(
  words: string[],
  flags: Json & { to: string; idempotencyKey?: string; wait?: number; ttl?: number },
): Promise<number> {
  try {
    const { json } = await asAgent('POST', '/v1/messages', {
      to: flags.to,
      body: words.join(' '),
      idempotency_key: flags.idempotencyKey ?? randomUUID(),
      ...(flags.ttl !== undefined ? { ttl_s: flags.ttl } : {}),
    });
    const message = json.message as MessageView;
    if (flags.wait === undefined) return out(flags.json, json, message.id);
    return await waitForReply(message.id, flags.wait, flags, { created: json.created });
  } catch (err) {
    return failed(flags.json, err);
  }
}

/** `keel hub await ID [--timeout S]`: the reply to a message you sent, within S seconds (default 60). */
export async function hubAwait(id: string, flags: Json & { timeout?: number }): Promise<number> {
  try {
    return await waitForReply(id, flags.timeout ?? 60, flags, {});
  } catch (err) {
    return failed(flags.json, err);
  }
}

/** Print the reply to `id` (acked: it is in hand), or exit 1 when it ends without one or time runs out. */
async function waitForReply(
  id: string,
  wait: number,
  flags: Json,
  extra: Record<string, unknown>,
): Promise<number> {
  const message = { id };
  const until = Date.now() + wait * 1000;
  for (;;) {
    const left = Math.ceil((until - Date.now()) / 1000);
    const { json: found } = await asAgent(
      'GET',
      `/v1/messages/${encodeURIComponent(id)}?wait=${Math.max(0, Math.min(60, left))}`,
    );
    if (found.reply) {
      // the reply is in hand: it is not delivered again
      await asAgent('POST', `/v1/messages/${found.reply.id}/ack`);
      return out(
        flags.json,
        { message: found.message, reply: found.reply, ...extra },
        inert(found.reply.body),
      );
    }
    if (
      found.message.state !== 'queued' &&
      found.message.state !== 'delivered' &&
      found.message.state !== 'acked'
    ) {
      out(flags.json, { message: found.message, reply: null }, '');
      process.stderr.write(`keel: message ${message.id} is ${found.message.state}, no reply\n`);
      return EXIT.failed;
    }
    if (Date.now() >= until) {
      out(flags.json, { message: found.message, reply: null, timed_out: true }, '');
      process.stderr.write(`keel: no reply to ${message.id} within ${wait} s\n`);
      return EXIT.failed;
    }
  }
}

export async function hubInbox(flags: Json & { follow?: boolean }): Promise<number> {
  try {
    if (!flags.follow) {
      const { json } = await asAgent('GET', '/v1/inbox');
      const messages = json.messages as MessageView[];
      return out(flags.json, json, messages.map(line).join('\n\n') || 'no open messages');
    }
    const key = await callerKey();
    const seen = new Set<string>();
    let last = '';
    for (;;) {
      let res: Response;
      try {
        res = await fetch(new URL('/v1/events', hubUrl()), {
          headers: { authorization: `Bearer ${key}`, ...(last ? { 'last-event-id': last } : {}) },
        });
      } catch (err) {
        throw new HubCallError(
          0,
          'UNREACHABLE',
          `the hub at ${hubUrl()} does not answer: ${(err as Error).message}`,
        );
      }
      if (res.status >= 400 || !res.body) {
        const body = (await res.json().catch(() => ({}))) as { code?: string; error?: string };
        throw new HubCallError(res.status, body.code ?? `HTTP_${res.status}`, body.error ?? 'no stream');
      }
      try {
        for await (const event of sseEvents(res.body)) {
          if (event.id) last = event.id;
          const m = JSON.parse(event.data) as MessageView;
          // at least once on the wire; once on this screen
          if (seen.has(m.id)) continue;
          seen.add(m.id);
          out(flags.json, m, `${line(m)}\n`);
        }
      } catch {
        // the connection dropped: reconnect after the last id
      }
      await new Promise((r) => setTimeout(r, 500));
    }
  } catch (err) {
    return failed(flags.json, err);
  }
}

export async function hubReply(
  id: string,
  words: string[],
  flags: Json & { idempotencyKey?: string },
): Promise<number> {
  try {
    const { json } = await asAgent('POST', `/v1/messages/${encodeURIComponent(id)}/reply`, {
      body: words.join(' '),
      ...(flags.idempotencyKey ? { idempotency_key: flags.idempotencyKey } : {}),
    });
    return out(flags.json, json, json.message.id);
  } catch (err) {
    return failed(flags.json, err);
  }
}

export async function hubAck(id: string, flags: Json): Promise<number> {
  try {
    const { json } = await asAgent('POST', `/v1/messages/${encodeURIComponent(id)}/ack`);
    return out(flags.json, json, `${json.message.id} ${json.message.state}`);
  } catch (err) {
    return failed(flags.json, err);
  }
}

export async function hubPeers(flags: Json): Promise<number> {
  try {
    const { json } = await asAgent('GET', '/v1/agents');
    const rows = (json.agents as Array<{ name: string; role: string | null; online: boolean }>).map(
      (a) => `${inert(a.name)}${a.role ? ` (${inert(a.role)})` : ''}  ${a.online ? 'online' : 'offline'}`,
    );
    return out(flags.json, json, rows.join('\n'));
  } catch (err) {
    return failed(flags.json, err);
  }
}
