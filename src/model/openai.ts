/** The `openai` provider: Chat Completions over the openai SDK, the wire format most local servers speak. */
import type OpenAI from 'openai';
import { AnswerMeter, lineTooLong, MAX_LINE_BYTES } from './answer-limit.js';
import { describeNetworkError, errorDetail, httpError, parseRetryAfter, unreachableError } from './errors.js';
import { normalizeFinishReason } from './finish-reason.js';
import { httpFetch } from './http-fetch.js';
import { readText, send, serverEvents, type WireAnswer } from './http-wire.js';
import { ThinkTagSplitter } from './think-tags.js';
import {
  type ChatMessage,
  type Delta,
  ModelError,
  type ModelRequest,
  type Provider,
  type ToolCall,
  type ToolSpec,
} from './types.js';

type Sdk = typeof import('openai');
type MessageParam = OpenAI.Chat.Completions.ChatCompletionMessageParam;
type ToolParam = OpenAI.Chat.Completions.ChatCompletionTool;

export interface OpenAiProviderOptions {
  /** e.g. http://127.0.0.1:8000/v1 */
  baseUrl: string;
  apiKey?: string;
  /** Backstop for the SDK's own request timeout; first-token and idle timeouts are enforced around the stream. */
  timeoutMs?: number;
}

/** Map keel messages to Chat Completions messages. */
export function toOpenAiMessages(messages: ChatMessage[]): MessageParam[] {
  return messages.map((m): MessageParam => {
    if (m.role === 'tool') return { role: 'tool', tool_call_id: m.toolCallId, content: m.content };
    if (m.role === 'user' && m.images?.some((i) => i.data !== undefined))
      return {
        role: 'user',
        content: [
          { type: 'text', text: m.content },
          ...m.images.flatMap((i) =>
            i.data === undefined
              ? []
              : [{ type: 'image_url' as const, image_url: { url: `data:${i.mime};base64,${i.data}` } }],
          ),
        ],
      };
    if (m.role !== 'assistant') return { role: m.role, content: m.content };
    if (!m.toolCalls || m.toolCalls.length === 0) return { role: 'assistant', content: m.content };
    return {
      role: 'assistant',
      // servers disagree on '' with tool calls; null is what the spec says
      content: m.content.length > 0 ? m.content : null,
      tool_calls: m.toolCalls.map((c) => ({
        id: c.id,
        type: 'function' as const,
        function: { name: c.name, arguments: c.arguments },
      })),
    };
  });
}

/** Map keel tool specs to Chat Completions function tools. */
export function toOpenAiTools(tools: ToolSpec[]): ToolParam[] {
  return tools.map((t) => ({
    type: 'function' as const,
    function: { name: t.name, description: t.description, parameters: t.parameters },
  }));
}

/**
 * The field the output limit goes in: OpenAI's own API (and Azure's) refuses `max_tokens` for its reasoning
 * models and takes `max_completion_tokens` for all; the servers people run themselves know `max_tokens`.
 */
export function outputLimitField(baseUrl: string): 'max_tokens' | 'max_completion_tokens' {
  const host = URL.canParse(baseUrl) ? new URL(baseUrl).hostname : '';
  return host === 'api.openai.com' || host.endsWith('.openai.azure.com')
    ? 'max_completion_tokens'
    : 'max_tokens';
}

/** Create the Chat Completions provider; the SDK is loaded on first use so startup stays fast. */
export function createOpenAiProvider(opts: OpenAiProviderOptions): Provider {
  const baseUrl = opts.baseUrl.replace(/\/+$/, '');
  const limitField = outputLimitField(baseUrl);
  // llama-server's and LM Studio's own endpoints sit beside /v1, not under it
  const root = baseUrl.replace(/\/v1$/, '');
  let tokenizeMissing = false;
  let loaded: Promise<{ sdk: Sdk; client: OpenAI }> | undefined;
  const load = () => {
    loaded ??= import('openai').then((sdk) => ({
      sdk,
      client: new sdk.OpenAI({
        baseURL: baseUrl,
        apiKey: opts.apiKey ?? 'not-needed', // local servers ignore it, the SDK insists on one
        maxRetries: 0, // keel retries itself, with events the user can see
        timeout: opts.timeoutMs ?? 600_000,
        // a line that never ends grows inside the SDK's parser, unseen: the wire's lines are capped
        fetch: (url: string | URL | Request, init?: RequestInit) =>
          httpFetch(url, init, { maxLineBytes: MAX_LINE_BYTES, error: () => lineTooLong(baseUrl) }),
      }),
    }));
    return loaded;
  };

  // the Chat Completions stream goes over node:http (model/http-wire.ts): the SDK and fetch's undici are
  // not loaded before the first request; the SDK serves only listModels (doctor, init)
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'text/event-stream',
    authorization: `Bearer ${opts.apiKey ?? 'not-needed'}`, // local servers ignore it
  };

  /** POST the request; the answer once its headers arrive, or the ModelError it is. */
  async function post(body: string, signal: AbortSignal): Promise<WireAnswer> {
    const timeoutMs = opts.timeoutMs ?? 600_000;
    const timeout = AbortSignal.timeout(timeoutMs);
    let answer: WireAnswer;
    try {
      answer = await send(`${baseUrl}/chat/completions`, {
        method: 'POST',
        headers,
        body,
        signal: AbortSignal.any([signal, timeout]),
      });
    } catch (err) {
      if (signal.aborted) throw signal.reason;
      if (timeout.aborted) throw new ModelError('timeout', `${baseUrl}: request timed out`, baseUrl);
      throw unreachableError(baseUrl, err);
    }
    if (answer.status >= 200 && answer.status < 300) return answer;
    const text = await readText(answer.body).catch(() => '');
    throw httpError(baseUrl, answer.status, errorDetail(text), parseRetryAfter(answer.header));
  }

  async function* stream(request: ModelRequest, signal: AbortSignal): AsyncGenerator<Delta> {
    const calls = new Map<number, { id: string; name: string; args: string }>();
    const think = new ThinkTagSplitter();
    // a server may ignore max_tokens: keel stops an answer that runs past it (arguments grow here, unseen)
    const meter = new AnswerMeter(request, baseUrl);
    let finishReason: string | undefined;
    try {
      const answer = await post(
        JSON.stringify({
          model: request.model,
          messages: toOpenAiMessages(request.messages),
          ...(request.tools.length > 0 ? { tools: toOpenAiTools(request.tools) } : {}),
          ...(request.maxOutputTokens !== undefined ? { [limitField]: request.maxOutputTokens } : {}),
          ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
          stream: true,
          stream_options: { include_usage: true },
        }),
        signal,
      );
      // a line that never ends would grow unseen: the wire's lines are capped
      const limit = { maxLineBytes: MAX_LINE_BYTES, error: () => lineTooLong(baseUrl) };
      for await (const sse of serverEvents(answer.body, limit)) {
        if (sse.data === '[DONE]') break;
        const chunk = JSON.parse(sse.data) as StreamChunk;
        // an error sent in the stream (an `error` event, or a chunk that is one)
        if (sse.event === 'error' || (chunk.error !== undefined && chunk.error !== null))
          throw new ModelError(
            'protocol',
            `${baseUrl}: unexpected answer: ${errorDetail(JSON.stringify({ error: chunk.error ?? chunk }))}`,
            baseUrl,
          );
        if (chunk.usage) {
          yield {
            type: 'usage',
            usage: {
              inputTokens: chunk.usage.prompt_tokens,
              outputTokens: chunk.usage.completion_tokens,
              reported: true,
              ...meteredUsage(chunk.usage),
            },
          };
        }
        const choice = chunk.choices?.[0];
        if (!choice?.delta) {
          if (choice?.finish_reason) finishReason = choice.finish_reason;
          continue;
        }
        const reasoning = reasoningOf(choice.delta);
        if (reasoning) {
          meter.add(reasoning);
          yield { type: 'reasoning', text: reasoning };
        }
        if (choice.delta.content) {
          meter.add(choice.delta.content);
          yield* think.push(choice.delta.content);
        }
        for (const [position, fragment] of (choice.delta.tool_calls ?? []).entries()) {
          // fragments of one call share an index; a few servers omit it and send each call whole
          const index = fragment.index ?? position;
          const call = calls.get(index) ?? { id: '', name: '', args: '' };
          if (fragment.id) call.id = fragment.id;
          if (fragment.function?.name) call.name += fragment.function.name;
          if (fragment.function?.arguments) {
            meter.add(fragment.function.arguments);
            call.args += fragment.function.arguments;
          }
          calls.set(index, call);
        }
        if (choice.finish_reason) finishReason = choice.finish_reason;
      }
    } catch (err) {
      if (signal.aborted) throw signal.reason;
      throw explainImageRefusal(mapWireError(err, baseUrl), request);
    }
    yield* think.end();
    for (const [index, call] of [...calls.entries()].sort((a, b) => a[0] - b[0])) {
      if (!call.name)
        throw new ModelError('protocol', `${baseUrl}: tool call ${index} arrived without a name`, baseUrl);
      const complete: ToolCall = { id: call.id || `call_${index}`, name: call.name, arguments: call.args };
      yield { type: 'tool_call', call: complete };
    }
    yield { type: 'done', finishReason: normalizeFinishReason(finishReason, calls.size > 0) };
  }

  return {
    name: 'openai',
    baseUrl,
    stream,
    async listModels(signal) {
      const { sdk, client } = await load();
      try {
        const ids: string[] = [];
        for await (const m of client.models.list({ signal })) ids.push(m.id);
        return ids;
      } catch (err) {
        throw mapSdkError(sdk, err, baseUrl);
      }
    },
    async contextWindow(model, signal) {
      // the three places a server may say it are asked at once: one round trip before the first request, not three.
      // What the server runs with beats what the model was trained for: llama-server's n_ctx, LM Studio's loaded length
      const props = settled(serverJson(`${root}/props`, opts.apiKey, signal));
      const studio = settled(serverJson(`${root}/api/v0/models`, opts.apiKey, signal));
      const listed = settled(serverJson(`${baseUrl}/models`, opts.apiKey, signal));
      const served = await props;
      const settings = isObject(served?.default_generation_settings)
        ? served.default_generation_settings
        : {};
      if (positive(settings.n_ctx)) return { tokens: settings.n_ctx, source: 'llama-server /props n_ctx' };
      const studioModels = (await studio)?.data;
      const entry = (Array.isArray(studioModels) ? studioModels : []).find(
        (m): m is Record<string, unknown> => isObject(m) && m.id === model,
      );
      if (positive(entry?.loaded_context_length))
        return { tokens: entry.loaded_context_length, source: 'LM Studio loaded_context_length' };
      if (positive(entry?.max_context_length))
        return { tokens: entry.max_context_length, source: 'LM Studio max_context_length (not loaded)' };
      // not in the OpenAI spec: vLLM says max_model_len (what it runs with), others context_length or meta.n_ctx_train
      const listedModels = (await listed)?.data;
      const raw = (Array.isArray(listedModels) ? listedModels : []).find(
        (m): m is Record<string, unknown> => isObject(m) && m.id === model,
      );
      if (!raw) return undefined;
      const meta = isObject(raw.meta) ? raw.meta : {};
      const fields: Array<[unknown, string]> = [
        [raw.max_model_len, '/v1/models max_model_len'],
        [raw.context_length, '/v1/models context_length'],
        [raw.context_window, '/v1/models context_window'],
        [meta.n_ctx_train, '/v1/models n_ctx_train (the training length)'],
      ];
      for (const [v, source] of fields) if (positive(v)) return { tokens: v, source };
      return undefined;
    },
    async vision(_model, signal) {
      // llama-server says whether its loaded model (with its projector) reads images; other servers keep quiet
      const props = await serverJson(`${root}/props`, opts.apiKey, signal);
      const vision = isObject(props?.modalities) ? props.modalities.vision : undefined;
      return typeof vision === 'boolean'
        ? { accepts: vision, source: 'llama-server /props modalities' }
        : undefined;
    },
    async countTokens(text, signal) {
      if (tokenizeMissing) return undefined;
      const answer = await serverJson(`${root}/tokenize`, opts.apiKey, signal, { content: text });
      if (!Array.isArray(answer?.tokens)) {
        tokenizeMissing = true; // asked once: a server without it is not asked again
        return undefined;
      }
      return answer.tokens.length;
    },
  };
}

type Json = Record<string, unknown>;

/**
 * A server that refuses a request with an image in it says so in its own words (400, or 500 from
 * llama-server without a projector): the error names the image as the likely cause, since keel could
 * not ask beforehand whether the model reads images.
 */
export function explainImageRefusal(err: ModelError, request: ModelRequest): ModelError {
  const images = request.messages.some(
    (m) => m.role === 'user' && m.images?.some((i) => i.data !== undefined),
  );
  if (!images || (err.kind !== 'bad_request' && err.kind !== 'server')) return err;
  return new ModelError(
    err.kind,
    `${err.message} (the request carried an image: ${request.model} may not accept images, and the server did not say beforehand)`,
    err.url,
    err.status,
    err.retryAfterS,
  );
}

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A promise started before it is known whether its answer is needed: a rejection nobody awaits is no crash. */
function settled<T>(p: Promise<T>): Promise<T> {
  p.catch(() => undefined);
  return p;
}

function positive(v: unknown): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v > 0;
}

/**
 * A server's own JSON endpoint (GET, or POST with a body), or undefined when it has none or answers
 * something else: these are optional extras of some servers, never a reason to fail.
 */
async function serverJson(
  url: string,
  apiKey: string | undefined,
  signal?: AbortSignal,
  body?: unknown,
): Promise<Json | undefined> {
  try {
    const answer = await send(url, {
      method: body === undefined ? 'GET' : 'POST',
      headers: {
        'content-type': 'application/json',
        ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      ...(signal ? { signal } : {}),
    });
    if (answer.status < 200 || answer.status >= 300) {
      answer.body.resume();
      return undefined;
    }
    const value: unknown = JSON.parse(await readText(answer.body));
    return isObject(value) ? value : undefined;
  } catch {
    if (signal?.aborted) throw signal.reason;
    return undefined;
  }
}

/**
 * Reasoning text in a stream delta: not in the OpenAI spec. vLLM, llama.cpp and DeepSeek send
 * `reasoning_content`; newer vLLM and OpenRouter send `reasoning`. One is taken, never both, since
 * a server in transition may send the same text in each.
 */
function reasoningOf(delta: object): string | undefined {
  const raw = delta as Record<string, unknown>;
  for (const v of [raw.reasoning_content, raw.reasoning]) {
    if (typeof v === 'string' && v.length > 0) return v;
  }
  return undefined;
}

/** Classify an error from the stream that is not yet a ModelError: a socket that died, an answer that is no JSON. */
function mapWireError(err: unknown, url: string): ModelError {
  if (err instanceof ModelError) return err;
  const cause = describeNetworkError(err);
  // a socket that dies mid-stream surfaces as a plain error with a system code underneath
  if (err instanceof Error && cause !== err.message) return unreachableError(url, err);
  return new ModelError('protocol', `${url}: unexpected answer: ${cause}`, url);
}

/** One chunk of a Chat Completions stream, as far as keel reads it. */
interface StreamChunk {
  error?: unknown;
  usage?: {
    prompt_tokens: number;
    completion_tokens: number;
    prompt_tokens_details?: { cached_tokens?: unknown } | null;
    cost?: unknown;
  } | null;
  choices?: Array<{
    delta?: {
      content?: string | null;
      tool_calls?: Array<{
        index?: number;
        id?: string;
        function?: { name?: string; arguments?: string };
      }>;
    };
    finish_reason?: string | null;
  }>;
}

/** Classify an error from the openai SDK. */
function mapSdkError(sdk: Sdk, err: unknown, url: string): ModelError {
  if (err instanceof ModelError) return err;
  if (err instanceof sdk.APIConnectionTimeoutError) {
    return new ModelError('timeout', `${url}: request timed out`, url);
  }
  if (err instanceof sdk.APIConnectionError) return unreachableError(url, err.cause ?? err);
  if (err instanceof sdk.APIError && typeof err.status === 'number') {
    const headers = err.headers;
    const retryAfter = headers ? parseRetryAfter((name) => headers.get(name)) : undefined;
    const detail = err.error ? errorDetail(JSON.stringify({ error: err.error })) : err.message;
    return httpError(url, err.status, detail, retryAfter);
  }
  const cause = describeNetworkError(err);
  // a socket that dies mid-stream surfaces as a plain error with a system code underneath
  if (err instanceof Error && cause !== err.message) return unreachableError(url, err);
  return new ModelError('protocol', `${url}: unexpected answer: ${cause}`, url);
}

/** The cached prompt tokens and the cost a server reports beside its counts, when they are numbers. */
function meteredUsage(usage: NonNullable<StreamChunk['usage']>): { cachedTokens?: number; costUsd?: number } {
  const cached = usage.prompt_tokens_details?.cached_tokens;
  const ok = (n: unknown): n is number => typeof n === 'number' && Number.isFinite(n) && n >= 0;
  return {
    ...(ok(cached) ? { cachedTokens: cached } : {}),
    ...(ok(usage.cost) ? { costUsd: usage.cost } : {}),
  };
}
