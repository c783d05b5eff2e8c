/** The `scripted` provider: replays a script in-process, no HTTP, for the offline demo and fast tests. */
import { kindForStatus } from './errors.js';
import { normalizeFinishReason } from './finish-reason.js';
import { sleep } from './retry.js';
import {
  checkExpectation,
  type Script,
  ScriptCursor,
  scriptArguments,
  scriptFinish,
  turnChunks,
} from './script.js';
import { ThinkTagSplitter } from './think-tags.js';
import { estimateUsage } from './tokens.js';
import {
  type ChatMessage,
  type Delta,
  ModelError,
  type ModelRequest,
  type Provider,
  type ToolCall,
} from './types.js';

export interface ScriptedProviderOptions {
  /** Where the script came from, shown in errors (e.g. its file path). */
  source?: string;
  /** Share one cursor between providers (primary and fallback replaying one script). */
  cursor?: ScriptCursor;
}

function lastOf(messages: ChatMessage[], role: ChatMessage['role']): string | undefined {
  return messages.findLast((m) => m.role === role)?.content;
}

/** Create a provider that answers each request with the script's next turn. */
export function createScriptedProvider(script: Script, opts: ScriptedProviderOptions = {}): Provider {
  const cursor = opts.cursor ?? new ScriptCursor(script);
  const baseUrl = `script:${opts.source ?? 'inline'}`;

  async function* stream(request: ModelRequest, signal: AbortSignal): AsyncGenerator<Delta> {
    const task = request.messages.find((m) => m.role === 'user');
    const turn = cursor.next(request.model, task?.content ?? '');
    if (!turn) {
      throw new ModelError(
        'server',
        `${baseUrl}: script exhausted: no turn left for model "${request.model}"`,
        baseUrl,
        500,
      );
    }
    if (turn.hang) await sleep(2 ** 31 - 1, signal); // only an abort ends it
    if (turn.delay_ms) await sleep(turn.delay_ms, signal);
    if (turn.error) {
      const { status, retry_after: retryAfter, body } = turn.error;
      const detail = body ?? `scripted error ${status}`;
      throw new ModelError(
        kindForStatus(status),
        `${baseUrl}: HTTP ${status}: ${detail}`,
        baseUrl,
        status,
        retryAfter,
      );
    }
    const failed = checkExpectation(turn.expect, {
      model: request.model,
      tools: request.tools.map((t) => t.name),
      lastUser: lastOf(request.messages, 'user'),
      lastToolResult: lastOf(request.messages, 'tool'),
    });
    if (failed) throw new ModelError('bad_request', `${baseUrl}: ${failed}`, baseUrl, 400);

    const reasoning = turn.reasoning ?? '';
    const text = turn.text ?? '';
    let first = true;
    const pause = async () => {
      if (!first && turn.chunk_delay_ms) await sleep(turn.chunk_delay_ms, signal);
      first = false;
    };
    for (const part of turnChunks(turn, reasoning)) {
      await pause();
      yield { type: 'reasoning', text: part };
    }
    // inline <think> in a scripted text splits as it does from a real server
    const think = new ThinkTagSplitter();
    for (const part of turnChunks(turn, text)) {
      await pause();
      yield* think.push(part);
    }
    yield* think.end();
    const calls: ToolCall[] = (turn.tool_calls ?? []).map((c, i) => ({
      id: c.id ?? `call_${i}`,
      name: c.name,
      arguments: scriptArguments(c),
    }));
    for (const call of calls) yield { type: 'tool_call', call };
    const usage = turn.usage
      ? { inputTokens: turn.usage.prompt_tokens, outputTokens: turn.usage.completion_tokens, reported: true }
      : estimateUsage(request.messages, request.tools, reasoning + text, calls);
    yield { type: 'usage', usage };
    // as the HTTP providers do: a 'stop' with tool calls is 'tool_calls'
    yield { type: 'done', finishReason: normalizeFinishReason(scriptFinish(turn), calls.length > 0) };
  }

  return {
    name: 'scripted',
    baseUrl,
    stream,
    async listModels() {
      const named = [...new Set(script.turns.flatMap((t) => (t.model ? [t.model] : [])))];
      return named.length > 0 ? named : ['scripted'];
    },
  };
}
