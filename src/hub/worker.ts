/**
 * `keel worker`: an agent of the hub that answers the requests in its inbox by running one keel
 * session each in its own workspace, in the mode the request asks for narrowed by the worker's own
 * maximum (never widened), and replies with the answer.
 *
 * A request's body is either plain text (a question: mode `ask`) or the JSON envelope
 * `{"text": "...", "mode": "ask"|"plan"|"edit"|"auto"}` (no other keys; anything else is plain text).
 * Words in the text never change the mode: only the envelope's `mode`, and only downwards.
 *
 * Crash safety: the message is acked only after its reply is committed (a reply marks it answered),
 * and the reply carries the idempotency key `keel-worker:<message id>`, so a worker killed mid-request
 * gets the message again on reconnect, and answering it again cannot make a second reply: the hub
 * returns the original (or refuses a second one) and the worker just acks.
 */
import * as z from 'zod';
import { sessionTools } from '../agent/session-tools.js';
import type { LoadedConfig } from '../config/load.js';
import type { Mode } from '../config/schema.js';
import { HubCallError, hubFetch, sseEvents } from '../tools/hub-client.js';
import type { MessageView } from './hub-store.js';

/** Read-only < edit < auto, as the policy ranks them for subagents. */
const RANK: Record<Mode, number> = { ask: 0, plan: 0, edit: 1, auto: 2 };

const Envelope = z.strictObject({
  text: z.string().min(1),
  mode: z.enum(['ask', 'plan', 'edit', 'auto']).optional(),
});

/** What a request asks: its text and mode (plain text, or a body that is not the envelope, is an `ask`). */
export function parseRequest(body: string): { text: string; asked: Mode } {
  if (body.trimStart().startsWith('{')) {
    try {
      const parsed = Envelope.safeParse(JSON.parse(body));
      if (parsed.success) return { text: parsed.data.text, asked: parsed.data.mode ?? 'ask' };
    } catch {
      // not JSON: plain text
    }
  }
  return { text: body, asked: 'ask' };
}

/** The mode a request runs in: the one asked, or the worker's maximum when it asks for more. */
export function narrowMode(asked: Mode, max: Mode): Mode {
  return RANK[asked] <= RANK[max] ? asked : max;
}

/** The idempotency key of the worker's reply to a message: one per message, whoever answers it again. */
export function replyKey(messageId: string): string {
  return `keel-worker:${messageId}`;
}

export interface WorkerEvent {
  event: 'ready' | 'request' | 'done' | 'failed' | 'stopping';
  id?: string;
  from?: string;
  asked?: Mode;
  mode?: Mode;
  seconds?: number;
  code?: string;
  reply_id?: string;
  error?: string;
  /** With `failed`: the message was acked anyway (the hub refuses its reply for good). */
  acked?: boolean;
  agent?: string;
}

export interface WorkerOptions {
  url: string;
  key: string;
  name: string;
  cwd: string;
  loaded: LoadedConfig;
  max: Mode;
  /** Aborted on SIGINT/SIGTERM: the request in hand is left unacked and comes back later. */
  signal: AbortSignal;
  report(event: WorkerEvent): void;
  warn(line: string): void;
}

/** Follow the inbox until the signal aborts; each request is answered once. */
export async function runWorker(opts: WorkerOptions): Promise<void> {
  let last = '';
  let announced = false;
  while (!opts.signal.aborted) {
    let res: Response;
    try {
      res = await fetch(new URL('/v1/events', opts.url), {
        headers: { authorization: `Bearer ${opts.key}`, ...(last ? { 'last-event-id': last } : {}) },
        signal: opts.signal,
      });
    } catch (err) {
      if (opts.signal.aborted) return;
      opts.warn(`the hub at ${opts.url} does not answer (${(err as Error).message}); trying again`);
      await pause(1000, opts.signal);
      continue;
    }
    if (res.status >= 400 || !res.body) {
      const body = (await res.json().catch(() => ({}))) as { code?: string; error?: string };
      throw new HubCallError(res.status, body.code ?? `HTTP_${res.status}`, body.error ?? 'no event stream');
    }
    if (!announced) {
      announced = true;
      opts.report({ event: 'ready', agent: opts.name });
    }
    try {
      for await (const event of sseEvents(res.body)) {
        if (event.id) last = event.id;
        await answer(opts, JSON.parse(event.data) as MessageView);
        if (opts.signal.aborted) return;
      }
    } catch (err) {
      if (opts.signal.aborted) return;
      // a key the hub no longer takes stops the worker; anything else (a dropped connection, a busy or
      // restarted hub) is a reconnect after the last id, and every unacked message comes again
      if (err instanceof HubCallError && (err.status === 401 || err.status === 403)) throw err;
      opts.warn(`${(err as Error).message}; reconnecting`);
    }
    await pause(500, opts.signal);
  }
}

/** One request: skipped when it has its answer already, else a session, the reply, then the ack. */
async function answer(opts: WorkerOptions, m: MessageView): Promise<void> {
  const call = (method: string, path: string, body?: unknown) =>
    hubFetch(opts.url, opts.key, method, path, body);
  // a reply to one of the worker's own replies, or a message answered before a crash: nothing to run
  const { json: now } = await call('GET', `/v1/messages/${encodeURIComponent(m.id)}`);
  if (now.message.state !== 'queued' && now.message.state !== 'delivered') {
    if (now.message.state === 'acked' || now.message.state === 'replied')
      await call('POST', `/v1/messages/${encodeURIComponent(m.id)}/ack`).catch(() => undefined);
    return;
  }
  const { text, asked } = parseRequest(m.body);
  const mode = narrowMode(asked, opts.max);
  opts.report({ event: 'request', id: m.id, from: m.from, asked, mode });
  const started = Date.now();
  let body: string;
  let code: string;
  try {
    const outcome = await session(opts, mode, text);
    if (opts.signal.aborted) return;
    code = outcome.code;
    body = outcome.summary || `(no answer: ${outcome.code}: ${outcome.reason})`;
    if (outcome.code !== 'COMPLETED' && outcome.summary) body += `\n\n(${outcome.code}: ${outcome.reason})`;
  } catch (err) {
    if (opts.signal.aborted) return;
    code = 'FAILED';
    body = `keel worker ${opts.name} could not run this request: ${(err as Error).message}`;
  }
  if (mode !== asked)
    body = `[keel worker ${opts.name}: the request asked for ${asked}; this worker runs at most ${opts.max}, so it ran ${mode === 'ask' || mode === 'plan' ? 'read-only' : 'narrowed'} in ${mode} mode]\n\n${body}`;
  const seconds = Math.round((Date.now() - started) / 100) / 10;
  let replyId: string | undefined;
  try {
    const { json } = await call('POST', `/v1/messages/${encodeURIComponent(m.id)}/reply`, {
      body,
      idempotency_key: replyKey(m.id),
    });
    replyId = json.message.id;
  } catch (err) {
    // answered already (a run before a crash, with another answer): the first reply stands
    const answered = err instanceof HubCallError && /^(ALREADY_REPLIED|IDEMPOTENCY_CONFLICT)$/.test(err.code);
    if (!answered) {
      const refused =
        err instanceof HubCallError && err.status >= 400 && err.status < 500 && err.status !== 429;
      opts.report({
        event: 'failed',
        id: m.id,
        error: (err as Error).message,
        ...(refused ? { acked: true } : {}),
      });
      // a reply the hub refuses for good (the hop limit, a cancelled or expired message) would be refused
      // again after every session: acked, so it is not run again; anything else comes back later
      if (refused) await call('POST', `/v1/messages/${encodeURIComponent(m.id)}/ack`).catch(() => undefined);
      return;
    }
  }
  // acked only now: the reply is committed
  await call('POST', `/v1/messages/${encodeURIComponent(m.id)}/ack`);
  opts.report({
    event: 'done',
    id: m.id,
    from: m.from,
    mode,
    code,
    seconds,
    ...(replyId ? { reply_id: replyId } : {}),
  });
}

/** One keel session in the workspace, through the same runtime and tools as `keel ask`. */
async function session(opts: WorkerOptions, mode: Mode, prompt: string) {
  const setting = opts.loaded.config.approvals;
  if ((mode === 'edit' || mode === 'auto') && setting !== undefined && setting !== 'never')
    throw new Error(
      `approvals = "${setting}" asks a person first, and a worker has no one to ask; start the worker with --mode plan, or set approvals = "never" for it`,
    );
  const [{ withRuntime }, { openRunLedger, PER_SESSION }] = await Promise.all([
    import('../agent/runtime.js'),
    import('../model/open-ledger.js'),
  ]);
  const ledger = await openRunLedger(opts.loaded.config, PER_SESSION, { warn: opts.warn });
  try {
    const tools = await sessionTools(opts.warn);
    return await withRuntime(
      process.env,
      (runtime) =>
        runtime.start({ mode, prompt, tools, loaded: opts.loaded, cwd: opts.cwd, signal: opts.signal }),
      { calls: ledger.calls },
    );
  } finally {
    await ledger.close();
  }
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });
}
