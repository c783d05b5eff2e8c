/** The `ollama` provider: Ollama's native /api/chat, so num_ctx takes effect (its /v1 endpoint ignores it). */

import { AnswerMeter } from './answer-limit.js';
import { errorDetail, httpError, parseRetryAfter, unreachableError } from './errors.js';
import { normalizeFinishReason } from './finish-reason.js';
import { httpFetch } from './http-fetch.js';
import { explainImageRefusal } from './openai.js';
import { ThinkTagSplitter } from './think-tags.js';
import { type ChatMessage, type Delta, ModelError, type ModelRequest, type Provider } from './types.js';

export interface OllamaProviderOptions {
  /** http://host:11434; a trailing /v1 (the OpenAI-compatible path) is dropped. */
  baseUrl: string;
  /** Timeout for the small metadata calls (/api/show, /api/tags). */
  metadataTimeoutMs?: number;
}

type Json = Record<string, unknown>;

/** The native Ollama base URL for what a user may have typed (with or without /v1 or a trailing slash). */
export function ollamaBaseUrl(url: string): string {
  return url.replace(/\/+$/, '').replace(/\/v1$/, '');
}

/** Map keel messages to Ollama's chat messages (tool arguments as objects, tool results named). */
export function toOllamaMessages(messages: ChatMessage[]): Json[] {
  return messages.map((m): Json => {
    if (m.role === 'tool') return { role: 'tool', content: m.content, tool_name: m.name };
    if (m.role === 'user' && m.images?.some((i) => i.data !== undefined))
      // Ollama's native form: the message's pictures as base64, beside its text
      return {
        role: 'user',
        content: m.content,
        images: m.images.flatMap((i) => (i.data === undefined ? [] : [i.data])),
      };
    if (m.role !== 'assistant' || !m.toolCalls?.length) return { role: m.role, content: m.content };
    return {
      role: 'assistant',
      content: m.content,
      tool_calls: m.toolCalls.map((c) => ({
        function: { name: c.name, arguments: parseArguments(c.arguments) },
      })),
    };
  });
}

function parseArguments(text: string): unknown {
  try {
    const value: unknown = JSON.parse(text);
    if (typeof value === 'object' && value !== null) return value;
  } catch {
    // the model sent broken JSON; Ollama needs an object, and the tool error already told the model
  }
  return {};
}

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function positive(v: unknown): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v > 0;
}

/** `qwen3` and `qwen3:latest` name one model. */
function sameModel(name: unknown, model: string): boolean {
  return typeof name === 'string' && name.replace(/:latest$/, '') === model.replace(/:latest$/, '');
}

/** Create the Ollama-native provider. */
export function createOllamaProvider(opts: OllamaProviderOptions): Provider {
  const baseUrl = ollamaBaseUrl(opts.baseUrl);
  const metadataTimeoutMs = opts.metadataTimeoutMs ?? 10_000;

  async function post(path: string, body: unknown, signal: AbortSignal): Promise<Response> {
    let res: Response;
    try {
      res = await httpFetch(`${baseUrl}${path}`, {
        method: body === undefined ? 'GET' : 'POST',
        headers: { 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal,
      });
    } catch (err) {
      if (signal.aborted) throw signal.reason;
      throw unreachableError(baseUrl, err);
    }
    if (!res.ok) {
      const text = await res.text().catch(() => '');
      throw httpError(
        baseUrl,
        res.status,
        errorDetail(text),
        parseRetryAfter((n) => res.headers.get(n)),
      );
    }
    return res;
  }

  async function metadata(path: string, body: unknown, signal?: AbortSignal): Promise<Json> {
    const timeout = AbortSignal.timeout(metadataTimeoutMs);
    const res = await post(path, body, signal ? AbortSignal.any([signal, timeout]) : timeout).catch(
      (err: unknown) => {
        if (timeout.aborted)
          throw new ModelError('timeout', `${baseUrl}${path}: no answer in ${metadataTimeoutMs} ms`, baseUrl);
        throw err;
      },
    );
    const value: unknown = await res.json().catch(() => undefined);
    if (!isObject(value))
      throw new ModelError('protocol', `${baseUrl}${path}: answer is not a JSON object`, baseUrl);
    return value;
  }

  async function* stream(request: ModelRequest, signal: AbortSignal): AsyncGenerator<Delta> {
    const options: Json = {};
    if (request.contextWindow !== undefined) options.num_ctx = request.contextWindow;
    if (request.maxOutputTokens !== undefined) options.num_predict = request.maxOutputTokens;
    if (request.temperature !== undefined) options.temperature = request.temperature;
    const body = {
      model: request.model,
      messages: toOllamaMessages(request.messages),
      ...(request.tools.length > 0
        ? {
            tools: request.tools.map((t) => ({
              type: 'function',
              function: { name: t.name, description: t.description, parameters: t.parameters },
            })),
          }
        : {}),
      stream: true,
      options,
    };
    const res = await post('/api/chat', body, signal).catch((err: unknown) => {
      throw err instanceof ModelError ? explainImageRefusal(err, request) : err;
    });
    if (!res.body) throw new ModelError('protocol', `${baseUrl}/api/chat: empty answer`, baseUrl);
    let callCount = 0;
    let finished = false;
    const think = new ThinkTagSplitter();
    // num_predict may be ignored (or -1 in a Modelfile): keel stops an answer that runs past it
    const meter = new AnswerMeter(request, baseUrl);
    try {
      for await (const line of ndjsonLines(res.body, meter)) {
        let msg: unknown;
        try {
          msg = JSON.parse(line);
        } catch {
          throw new ModelError('protocol', `${baseUrl}/api/chat: not NDJSON: ${line.slice(0, 200)}`, baseUrl);
        }
        if (!isObject(msg)) continue;
        if (typeof msg.error === 'string') {
          throw new ModelError('server', `${baseUrl}/api/chat: ${msg.error}`, baseUrl);
        }
        const message = isObject(msg.message) ? msg.message : {};
        // Ollama parses reasoning into `thinking` when it knows the model thinks; otherwise it is inline <think>
        if (typeof message.thinking === 'string' && message.thinking.length > 0) {
          meter.add(message.thinking);
          yield { type: 'reasoning', text: message.thinking };
        }
        if (typeof message.content === 'string' && message.content.length > 0) {
          meter.add(message.content);
          yield* think.push(message.content);
        }
        for (const tc of Array.isArray(message.tool_calls) ? message.tool_calls : []) {
          const fn = isObject(tc) && isObject(tc.function) ? tc.function : undefined;
          if (!fn || typeof fn.name !== 'string') continue;
          const args = typeof fn.arguments === 'string' ? fn.arguments : JSON.stringify(fn.arguments ?? {});
          meter.add(args);
          // Ollama gives no ids; the loop needs them to pair results with calls
          yield { type: 'tool_call', call: { id: `call_${callCount++}`, name: fn.name, arguments: args } };
        }
        if (msg.done === true) {
          finished = true;
          yield* think.end();
          if (typeof msg.prompt_eval_count === 'number' || typeof msg.eval_count === 'number') {
            const inputTokens = typeof msg.prompt_eval_count === 'number' ? msg.prompt_eval_count : 0;
            const outputTokens = typeof msg.eval_count === 'number' ? msg.eval_count : 0;
            yield { type: 'usage', usage: { inputTokens, outputTokens, reported: true } };
          }
          yield { type: 'done', finishReason: normalizeFinishReason(msg.done_reason, callCount > 0) };
        }
      }
    } catch (err) {
      if (signal.aborted) throw signal.reason;
      if (err instanceof ModelError) throw err;
      throw unreachableError(baseUrl, err);
    }
    if (!finished) throw new ModelError('protocol', `${baseUrl}/api/chat: stream ended before done`, baseUrl);
  }

  return {
    name: 'ollama',
    baseUrl,
    stream,
    async contextWindow(model, signal) {
      // a loaded model runs with the window it was loaded with: keel asks for that one, so Ollama never reloads it
      const ps = await metadata('/api/ps', undefined, signal).catch(() => undefined);
      const loaded = (Array.isArray(ps?.models) ? ps.models : []).find(
        (m): m is Json => isObject(m) && sameModel(m.name ?? m.model, model),
      );
      if (positive(loaded?.context_length))
        return { tokens: loaded.context_length, source: 'Ollama /api/ps context_length (loaded)' };
      const show = await metadata('/api/show', { model }, signal);
      // a Modelfile's num_ctx is what the model runs with; context_length is what it was trained for
      if (typeof show.parameters === 'string') {
        const m = /^\s*num_ctx\s+(\d+)/m.exec(show.parameters);
        if (m?.[1]) return { tokens: Number(m[1]), source: 'Ollama Modelfile num_ctx' };
      }
      if (isObject(show.model_info)) {
        for (const [key, value] of Object.entries(show.model_info)) {
          // keel sends it as num_ctx, so it is also the window Ollama runs with
          if (key.endsWith('.context_length') && positive(value))
            return { tokens: value, source: 'Ollama /api/show context_length, sent as num_ctx' };
        }
      }
      return undefined;
    },
    async vision(model, signal) {
      // Ollama 0.6+ lists what a model can do; an older one says nothing
      const show = await metadata('/api/show', { model }, signal);
      if (!Array.isArray(show.capabilities)) return undefined;
      const said = show.capabilities.filter((c): c is string => typeof c === 'string');
      return {
        accepts: said.includes('vision'),
        source: `Ollama /api/show capabilities: ${said.join(', ') || 'none'}`,
      };
    },
    async listModels(signal) {
      const tags = await metadata('/api/tags', undefined, signal);
      const models = Array.isArray(tags.models) ? tags.models : [];
      return models.flatMap((m) => (isObject(m) && typeof m.name === 'string' ? [m.name] : []));
    },
  };
}

/** Split a byte stream into non-empty lines; a line that never ends is stopped at the answer's cap. */
async function* ndjsonLines(body: ReadableStream<Uint8Array>, meter: AnswerMeter): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const bytes of body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(bytes, { stream: true });
    let newline = buffer.indexOf('\n');
    while (newline >= 0) {
      const line = buffer.slice(0, newline).trim();
      buffer = buffer.slice(newline + 1);
      if (line) yield line;
      newline = buffer.indexOf('\n');
    }
    meter.holding(buffer.length);
  }
  const rest = (buffer + decoder.decode()).trim();
  if (rest) yield rest;
}
