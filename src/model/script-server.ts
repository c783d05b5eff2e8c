/** A scripted model server on 127.0.0.1 speaking the real OpenAI Chat Completions and Ollama wire formats. */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  checkExpectation,
  type RequestView,
  type Script,
  ScriptCursor,
  type ScriptTurn,
  scriptArguments,
  scriptFinish,
  turnChunks,
} from './script.js';

/** One request the server received, for tests to assert on. */
export interface RecordedRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  /** The parsed JSON body; undefined for bodiless requests, the raw text when it was not JSON. */
  body: unknown;
}

export interface ScriptServerOptions {
  /** 0 (the default) picks a free port. */
  port?: number;
  /** What /api/show reports as `<arch>.context_length` (default 8192). */
  contextLength?: number;
  /** The `parameters` text /api/show returns, e.g. "num_ctx 4096". */
  showParameters?: string;
  /** Models listed by /v1/models and /api/tags (default: models named in the script, else "scripted"). */
  models?: string[];
  /** Speak llama-server's own endpoints too: GET /props with this n_ctx, POST /tokenize (a token per `charsPerToken` characters, default 3). */
  llamaServer?: { nCtx: number; charsPerToken?: number };
  /**
   * Whether the model reads images, said the way servers say it: Ollama's /api/show `capabilities`
   * (with "vision" or without) and llama-server's GET /props `modalities.vision`; a list names the
   * models that do (Ollama's answer is per model; /props says true when the list has any). Unset: neither says.
   */
  vision?: boolean | string[];
  /** Ollama's GET /api/ps lists every model as loaded with this context_length. */
  ollamaLoaded?: number;
  /** LM Studio's GET /api/v0/models lists every model with these lengths. */
  lmStudio?: { maxContextLength: number; loadedContextLength?: number };
  /**
   * Hold the answer to each of these routes ("GET /props") until every one of them has arrived, or
   * `ms` passed: `gathered()` then says whether they were all in flight at once (a client that asks
   * them one after another is answered after each wait, and never gathers them).
   */
  gather?: { routes: string[]; ms?: number };
}

export interface ScriptServer {
  /** The OpenAI-compatible base URL, http://127.0.0.1:PORT/v1. */
  url: string;
  /** The Ollama-native base URL, http://127.0.0.1:PORT. */
  ollamaUrl: string;
  requests: RecordedRequest[];
  /** With `gather`: whether every gathered route was in flight at the same time. */
  gathered(): boolean;
  close(): Promise<void>;
}

type Json = Record<string, unknown>;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Start a scripted OpenAI- and Ollama-compatible server on 127.0.0.1. */
export async function startScriptServer(
  script: Script,
  opts: ScriptServerOptions = {},
): Promise<ScriptServer> {
  const cursor = new ScriptCursor(script);
  const requests: RecordedRequest[] = [];
  const named = [...new Set(script.turns.flatMap((t) => (t.model ? [t.model] : [])))];
  const models = opts.models ?? (named.length > 0 ? named : ['scripted']);
  const ctx: Ctx = { cursor, models, opts, gate: gatherGate(opts.gather) };

  const server = createServer((req, res) => {
    handle(req, res, requests, ctx).catch((err: unknown) => {
      // a client that went away mid-stream is normal (timeouts, aborts); anything else is a bug to surface
      if (!res.headersSent) sendJson(res, 500, { error: { message: `script server bug: ${String(err)}` } });
      else res.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    ollamaUrl: `http://127.0.0.1:${port}`,
    requests,
    gathered: () => ctx.gate.gathered,
    close: () =>
      new Promise<void>((resolve) => {
        // hanging turns keep sockets open forever; cut them so close() returns
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

interface Ctx {
  cursor: ScriptCursor;
  models: string[];
  opts: ScriptServerOptions;
  gate: GatherGate;
}

interface GatherGate {
  gathered: boolean;
  /** Resolves when this route may be answered. */
  wait(route: string): Promise<void>;
}

function gatherGate(gather: ScriptServerOptions['gather']): GatherGate {
  const routes = new Set(gather?.routes ?? []);
  const waiting = new Set<string>();
  const release: Array<() => void> = [];
  const gate: GatherGate = {
    gathered: false,
    wait(route) {
      if (!routes.has(route) || gate.gathered) return Promise.resolve();
      waiting.add(route);
      if (waiting.size === routes.size) {
        gate.gathered = true;
        for (const go of release.splice(0)) go();
        return Promise.resolve();
      }
      return new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          waiting.delete(route);
          resolve();
        }, gather?.ms ?? 2000);
        release.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    },
  };
  return gate;
}

async function handle(req: IncomingMessage, res: ServerResponse, requests: RecordedRequest[], ctx: Ctx) {
  const path = (req.url ?? '/').split('?')[0] ?? '/';
  const method = req.method ?? 'GET';
  const text = await readBody(req);
  let body: unknown;
  if (text.length > 0) {
    try {
      body = JSON.parse(text);
    } catch {
      body = text;
    }
  }
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers)) if (v !== undefined) headers[k] = String(v);
  requests.push({ method, path, headers, body });

  const route = `${method} ${path}`;
  await ctx.gate.wait(route);
  if (route === 'GET /v1/models') {
    const data = ctx.models.map((id) => ({ id, object: 'model', created: 0, owned_by: 'keel' }));
    return sendJson(res, 200, { object: 'list', data });
  }
  if (route === 'GET /api/tags') {
    return sendJson(res, 200, {
      models: ctx.models.map((name) => ({ name, model: name, size: 0, details: {} })),
    });
  }
  const llama = ctx.opts.llamaServer;
  const vision = ctx.opts.vision;
  if (route === 'GET /props' && (llama || vision !== undefined)) {
    return sendJson(res, 200, {
      default_generation_settings: llama ? { n_ctx: llama.nCtx } : {},
      total_slots: 1,
      ...(vision !== undefined
        ? { modalities: { vision: Array.isArray(vision) ? vision.length > 0 : vision, audio: false } }
        : {}),
    });
  }
  if (route === 'POST /tokenize' && llama) {
    const content = isObject(body) && typeof body.content === 'string' ? body.content : '';
    const n = Math.ceil(content.length / (llama.charsPerToken ?? 3));
    return sendJson(res, 200, { tokens: Array.from({ length: n }, (_, i) => i) });
  }
  if (route === 'GET /api/ps' && ctx.opts.ollamaLoaded !== undefined) {
    const loaded = ctx.opts.ollamaLoaded;
    return sendJson(res, 200, {
      models: ctx.models.map((name) => ({ name, model: name, size: 0, context_length: loaded })),
    });
  }
  const studio = ctx.opts.lmStudio;
  if (route === 'GET /api/v0/models' && studio) {
    const data = ctx.models.map((id) => ({
      id,
      object: 'model',
      state: studio.loadedContextLength ? 'loaded' : 'not-loaded',
      max_context_length: studio.maxContextLength,
      ...(studio.loadedContextLength ? { loaded_context_length: studio.loadedContextLength } : {}),
    }));
    return sendJson(res, 200, { object: 'list', data });
  }
  if (route === 'POST /api/show') {
    const info = { 'general.architecture': 'llama', 'llama.context_length': ctx.opts.contextLength ?? 8192 };
    return sendJson(res, 200, {
      model_info: info,
      parameters: ctx.opts.showParameters ?? '',
      ...(vision !== undefined
        ? { capabilities: ['completion', 'tools', ...(readsImages(vision, body) ? ['vision'] : [])] }
        : {}),
    });
  }
  if (route === 'POST /v1/chat/completions' || route === 'POST /api/chat') {
    if (!isObject(body)) {
      return sendJson(res, 400, { error: { message: 'request body must be a JSON object' } });
    }
    const ollama = path === '/api/chat';
    const model = typeof body.model === 'string' ? body.model : '';
    const list = Array.isArray(body.messages) ? body.messages.filter(isObject) : [];
    const first = list.find((m) => m.role === 'user');
    const turn = ctx.cursor.next(model, first ? contentOf(first) : '');
    if (!turn) return sendError(res, ollama, 500, `script exhausted: no turn left for model "${model}"`);
    if (turn.delay_ms && (turn.error || body.stream === false)) await sleep(turn.delay_ms);
    if (turn.error) {
      if (turn.error.retry_after !== undefined) res.setHeader('Retry-After', String(turn.error.retry_after));
      if (turn.error.body !== undefined) {
        res.writeHead(turn.error.status, { 'content-type': 'application/json' });
        return void res.end(turn.error.body);
      }
      return sendError(res, ollama, turn.error.status, `scripted error ${turn.error.status}`);
    }
    const failed = checkExpectation(turn.expect, ollama ? ollamaView(body, model) : openaiView(body, model));
    if (failed) return sendError(res, ollama, 400, failed);
    if (ollama) return answerOllama(res, turn, model, body.stream !== false);
    return answerOpenai(res, turn, model, body);
  }
  if (route === 'POST /v1/embeddings' || route === 'POST /api/embed') {
    const input = isObject(body) ? body.input : undefined;
    const texts = typeof input === 'string' ? [input] : Array.isArray(input) ? input.map(String) : [];
    if (!texts.length)
      return sendJson(res, 400, { error: { message: 'input must be a string or a list of them' } });
    const vectors = texts.map(wordVector);
    const model = isObject(body) && typeof body.model === 'string' ? body.model : '';
    if (path === '/api/embed') return sendJson(res, 200, { model, embeddings: vectors });
    const data = vectors.map((embedding, index) => ({ object: 'embedding', index, embedding }));
    return sendJson(res, 200, { object: 'list', model, data });
  }
  sendJson(res, 404, { error: { message: `no route ${route}` } });
}

function readsImages(vision: boolean | string[], body: unknown): boolean {
  if (!Array.isArray(vision)) return vision;
  const name = isObject(body) ? (body.model ?? body.name) : undefined;
  return typeof name === 'string' && vision.includes(name);
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    req.on('data', (b: Buffer) => parts.push(b));
    req.on('end', () => resolve(Buffer.concat(parts).toString('utf8')));
    req.on('error', reject);
  });
}

/** A deterministic stand-in embedding: each word counted into one of 32 buckets by its characters. */
function wordVector(text: string): number[] {
  const v = new Array<number>(32).fill(0);
  for (const word of text.toLowerCase().match(/[a-z0-9]+/g) ?? []) {
    let h = 0;
    for (const ch of word) h = (h * 31 + ch.charCodeAt(0)) % 32;
    v[h] = (v[h] ?? 0) + 1;
  }
  return v;
}

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function sendJson(res: ServerResponse, status: number, value: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(value));
}

function sendError(res: ServerResponse, ollama: boolean, status: number, message: string): void {
  sendJson(
    res,
    status,
    ollama ? { error: message } : { error: { message, type: 'scripted_error', code: null } },
  );
}

function contentOf(m: Json): string {
  return typeof m.content === 'string' ? m.content : JSON.stringify(m.content ?? '');
}

function viewFrom(messages: unknown, tools: string[], model: string): RequestView {
  const list = Array.isArray(messages) ? messages.filter(isObject) : [];
  const lastUser = list.findLast((m) => m.role === 'user');
  const lastTool = list.findLast((m) => m.role === 'tool');
  return {
    model,
    tools,
    lastUser: lastUser ? contentOf(lastUser) : undefined,
    lastToolResult: lastTool ? contentOf(lastTool) : undefined,
  };
}

function toolNames(tools: unknown): string[] {
  if (!Array.isArray(tools)) return [];
  return tools.flatMap((t) =>
    isObject(t) && isObject(t.function) && typeof t.function.name === 'string' ? [t.function.name] : [],
  );
}

const openaiView = (body: Json, model: string) => viewFrom(body.messages, toolNames(body.tools), model);
const ollamaView = openaiView;

/** Write one SSE event or NDJSON line, waiting `gap` ms first; false when the client has gone. */
async function emit(res: ServerResponse, line: string, gap: number): Promise<boolean> {
  if (gap > 0) await sleep(gap);
  if (res.destroyed || res.writableEnded) return false;
  res.write(line);
  return true;
}

/** Write `line()` again and again, as fast as the client reads, until it disconnects. */
async function streamForever(res: ServerResponse, line: () => string): Promise<void> {
  while (!res.destroyed && !res.writableEnded) {
    if (!res.write(line()))
      await new Promise<void>((resolve) => {
        const go = () => {
          res.off('drain', go);
          res.off('close', go);
          resolve();
        };
        res.on('drain', go);
        res.on('close', go);
      });
  }
}

/** Keep a hanging turn open until the client disconnects. */
function hangUntilClosed(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => res.on('close', () => resolve()));
}

async function answerOpenai(res: ServerResponse, turn: ScriptTurn, model: string, body: Json): Promise<void> {
  const id = `chatcmpl-${Math.random().toString(36).slice(2, 10)}`;
  const created = Math.floor(Date.now() / 1000);
  const calls = (turn.tool_calls ?? []).map((c, i) => ({
    id: c.id ?? `call_${i}`,
    type: 'function' as const,
    function: { name: c.name, arguments: scriptArguments(c) },
  }));
  const finishReason = scriptFinish(turn);
  const reasoningField = turn.reasoning_field ?? 'reasoning_content';
  const usage = turn.usage && {
    prompt_tokens: turn.usage.prompt_tokens,
    completion_tokens: turn.usage.completion_tokens,
    total_tokens: turn.usage.prompt_tokens + turn.usage.completion_tokens,
    ...(turn.usage.cached_tokens !== undefined
      ? { prompt_tokens_details: { cached_tokens: turn.usage.cached_tokens } }
      : {}),
    ...(turn.usage.cost !== undefined ? { cost: turn.usage.cost } : {}),
  };

  if (body.stream !== true) {
    if (turn.hang) return hangUntilClosed(res);
    const message = {
      role: 'assistant',
      content: turn.text ?? null,
      ...(turn.reasoning !== undefined ? { [reasoningField]: turn.reasoning } : {}),
      ...(calls.length > 0 ? { tool_calls: calls } : {}),
    };
    const choice = { index: 0, message, finish_reason: finishReason };
    return sendJson(res, 200, {
      id,
      object: 'chat.completion',
      created,
      model,
      choices: [choice],
      ...(usage ? { usage } : {}),
    });
  }

  res.writeHead(200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
  });
  res.flushHeaders();
  if (turn.hang) return hangUntilClosed(res);
  const chunk = (delta: Json, finish: string | null = null) =>
    `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
  if (turn.endless === 'arguments') {
    const open = { index: 0, id: 'call_0', type: 'function', function: { name: 'read_file', arguments: '' } };
    res.write(chunk({ tool_calls: [open] }));
    const more = chunk({ tool_calls: [{ index: 0, function: { arguments: 'a'.repeat(512) } }] });
    return streamForever(res, () => more);
  }
  if (turn.endless === 'line') {
    res.write(
      `data: {"id":"${id}","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"`,
    );
    const more = 'a'.repeat(16 * 1024);
    return streamForever(res, () => more);
  }
  if (turn.endless === 'text') {
    const more = chunk({ content: 'and again '.repeat(50) });
    return streamForever(res, () => more);
  }
  const lines: string[] = [chunk({ role: 'assistant', content: '' })];
  for (const part of turnChunks(turn, turn.reasoning ?? '')) lines.push(chunk({ [reasoningField]: part }));
  for (const part of turnChunks(turn, turn.text ?? '')) lines.push(chunk({ content: part }));
  calls.forEach((call, index) => {
    // real servers send id and name first, then the arguments in fragments
    lines.push(
      chunk({
        tool_calls: [
          { index, id: call.id, type: 'function', function: { name: call.function.name, arguments: '' } },
        ],
      }),
    );
    for (const part of turnChunks(turn, call.function.arguments)) {
      lines.push(chunk({ tool_calls: [{ index, function: { arguments: part } }] }));
    }
  });
  lines.push(chunk({}, finishReason));
  const streamOptions = isObject(body.stream_options) ? body.stream_options : {};
  if (usage && streamOptions.include_usage === true) {
    lines.push(
      `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices: [], usage })}\n\n`,
    );
  }
  lines.push('data: [DONE]\n\n');
  await writeAll(res, lines, turn);
}

async function answerOllama(
  res: ServerResponse,
  turn: ScriptTurn,
  model: string,
  stream: boolean,
): Promise<void> {
  const createdAt = new Date().toISOString();
  const toolCalls = (turn.tool_calls ?? []).map((c) => ({
    function: { name: c.name, arguments: ollamaArguments(c.arguments) },
  }));
  const counts = turn.usage
    ? { prompt_eval_count: turn.usage.prompt_tokens, eval_count: turn.usage.completion_tokens }
    : {};
  // Ollama's done_reason knows stop and length (and load/unload), not tool_calls
  const doneReason = scriptFinish(turn) === 'length' ? 'length' : 'stop';
  const final = { model, created_at: createdAt, done: true, done_reason: doneReason, ...counts };
  if (!stream) {
    if (turn.hang) return hangUntilClosed(res);
    const message = {
      role: 'assistant',
      content: turn.text ?? '',
      ...(turn.reasoning !== undefined ? { thinking: turn.reasoning } : {}),
      ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
    };
    return sendJson(res, 200, { ...final, message });
  }
  res.writeHead(200, { 'content-type': 'application/x-ndjson' });
  res.flushHeaders();
  if (turn.hang) return hangUntilClosed(res);
  const line = (message: Json, done = false) =>
    `${JSON.stringify({ model, created_at: createdAt, message: { role: 'assistant', ...message }, done })}\n`;
  // Ollama sends tool calls whole, so only text can stream without end
  if (turn.endless) {
    const more = line({ content: 'and again '.repeat(50) });
    return streamForever(res, () => more);
  }
  const lines = [
    ...turnChunks(turn, turn.reasoning ?? '').map((part) => line({ content: '', thinking: part })),
    ...turnChunks(turn, turn.text ?? '').map((part) => line({ content: part })),
  ];
  // Ollama sends tool calls whole, in one message, with arguments as an object
  if (toolCalls.length > 0) lines.push(line({ content: '', tool_calls: toolCalls }));
  lines.push(`${JSON.stringify({ ...final, message: { role: 'assistant', content: '' } })}\n`);
  await writeAll(res, lines, turn);
}

function ollamaArguments(args: Record<string, unknown> | string): unknown {
  if (typeof args !== 'string') return args;
  try {
    return JSON.parse(args);
  } catch {
    return args; // broken on purpose: pass it through so the client sees it
  }
}

async function writeAll(res: ServerResponse, lines: string[], turn: ScriptTurn): Promise<void> {
  let gap = turn.delay_ms ?? 0;
  for (const line of lines) {
    if (!(await emit(res, line, gap))) return;
    gap = turn.chunk_delay_ms ?? 0;
  }
  res.end();
}
