/**
 * The script format replayed by the scripted provider and the mock HTTP server: turns, cursors, expectations.
 *
 * A script is `{"turns": [...]}`; each request gets the next turn, which may have:
 * - `text`: the answer, streamed in pieces (an inline `<think>...</think>` in it streams as a real model's would)
 * - `tool_calls`: `[{"name", "arguments", "id"?}]`; string arguments are sent raw, broken or not
 * - `reasoning`: reasoning streamed before the text: `reasoning_content` on the OpenAI wire (or the
 *   field `reasoning_field` names: `reasoning`, as newer vLLM sends it), `thinking` on Ollama's
 * - `finish`: the finish reason sent, `stop`, `length` or `tool_calls` (default: `tool_calls` when
 *   there are tool calls, else `stop`); Ollama's `done_reason` has no `tool_calls` and says `stop`
 * - `chunk_size`: stream text, reasoning and arguments in pieces of this many characters (default: three pieces)
 * - `error` (`{"status", "retry_after"?, "body"?}`), `usage` (`{"prompt_tokens", "completion_tokens",
 *   "cached_tokens"?, "cost"?}`), `delay_ms`, `chunk_delay_ms`, `hang`
 * - `endless`: stream text (or one tool call's arguments) without end, as a server ignoring max_tokens does
 * - `model`: the turn answers only that model; `expect`: checks on the request, a 400 when they fail
 * - `task`: the turn answers only requests whose first user message contains this text (concurrent sessions)
 */
import { readFileSync } from 'node:fs';
import * as z from 'zod';

/** The format's schemas, built on first use: only a scripted model or the mock server reads a script. */
function build() {
  const scriptToolCallSchema = z.strictObject({
    id: z.string().optional(),
    name: z.string().min(1),
    /** An object is serialized; a string is sent raw, so a script can send broken JSON. */
    arguments: z.union([z.record(z.string(), z.unknown()), z.string()]),
  });

  const expectSchema = z.strictObject({
    last_user_contains: z.string().optional(),
    last_tool_result_contains: z.string().optional(),
    /** Tool names that must all be offered in the request. */
    tools: z.array(z.string()).optional(),
    model: z.string().optional(),
  });

  const turnSchema = z.strictObject({
    text: z.string().optional(),
    tool_calls: z.array(scriptToolCallSchema).optional(),
    /** Streamed before the text as reasoning_content (OpenAI wire) or thinking (Ollama). */
    reasoning: z.string().optional(),
    /** The OpenAI-wire field reasoning goes in: servers disagree. */
    reasoning_field: z.enum(['reasoning_content', 'reasoning']).optional(),
    /** The finish reason to send; `length` is a reply cut at the output limit. */
    finish: z.enum(['stop', 'length', 'tool_calls']).optional(),
    /** Characters per streamed piece; small sizes cut tags and JSON at every point. */
    chunk_size: z.number().int().positive().optional(),
    error: z
      .strictObject({
        status: z.number().int().min(100).max(599),
        retry_after: z.number().nonnegative().optional(),
        body: z.string().optional(),
      })
      .optional(),
    /** Wait before the first byte of the answer (or the first chunk of a stream). */
    delay_ms: z.number().nonnegative().optional(),
    /** Wait between streamed chunks. */
    chunk_delay_ms: z.number().nonnegative().optional(),
    /** Accept the request and never answer; only the client giving up ends it. */
    hang: z.boolean().optional(),
    /** Stream without end (answer text, one tool call's arguments, or one line) until the client goes away. */
    endless: z.enum(['text', 'arguments', 'line']).optional(),
    usage: z
      .strictObject({
        prompt_tokens: z.number().int().nonnegative(),
        completion_tokens: z.number().int().nonnegative(),
        /** Sent as `prompt_tokens_details.cached_tokens` (OpenAI's prompt cache). */
        cached_tokens: z.number().int().nonnegative().optional(),
        /** Sent as `cost`: USD the provider meters for the call (OpenRouter's usage accounting). */
        cost: z.number().nonnegative().optional(),
      })
      .optional(),
    /** The turn only answers requests for this model (scripts fallback between models). */
    model: z.string().optional(),
    /**
     * The turn only answers requests whose first user message (the task) contains this text:
     * sessions that run at once (subagents) each get their own turns, whatever order they ask in.
     */
    task: z.string().min(1).optional(),
    expect: expectSchema.optional(),
  });

  const scriptSchema = z.strictObject({ turns: z.array(turnSchema) });
  return { scriptToolCallSchema, expectSchema, turnSchema, scriptSchema };
}
type Schemas = ReturnType<typeof build>;
let built: Schemas | undefined;
const schemas = (): Schemas => {
  built ??= build();
  return built;
};

export type Script = z.infer<Schemas['scriptSchema']>;
export type ScriptTurn = z.infer<Schemas['turnSchema']>;
export type ScriptToolCall = z.infer<Schemas['scriptToolCallSchema']>;
export type ScriptExpectation = z.infer<Schemas['expectSchema']>;

/** A script that cannot be read or does not match the format; the message names the file. */
export class ScriptError extends Error {
  override name = 'ScriptError';
}

/** Validate a script object; `source` names where it came from in error messages. */
export function parseScript(value: unknown, source = 'script'): Script {
  const result = schemas().scriptSchema.safeParse(value);
  if (result.success) return result.data;
  const lines = result.error.issues.map(
    (issue) => `${issue.path.map(String).join('.') || '(root)'}: ${issue.message}`,
  );
  throw new ScriptError(`invalid script ${source}:\n  ${lines.join('\n  ')}`);
}

/** Read and validate a script JSON file. */
export function loadScript(path: string): Script {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ScriptError(`cannot read script ${path}: ${(err as Error).message}`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new ScriptError(`invalid JSON in script ${path}: ${(err as Error).message}`);
  }
  return parseScript(value, path);
}

/** The raw argument text a scripted tool call sends. */
export function scriptArguments(call: ScriptToolCall): string {
  return typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments);
}

/**
 * Hands out turns in order. When any turn names a model, each model gets its own cursor over the
 * turns for it (plus unnamed ones), so a primary's failures and a fallback's answers stay apart.
 */
export class ScriptCursor {
  private readonly positions = new Map<string, number>();
  private readonly perModel: boolean;
  private readonly tasks: string[];

  constructor(readonly script: Script) {
    this.perModel = script.turns.some((t) => t.model !== undefined);
    this.tasks = [...new Set(script.turns.flatMap((t) => (t.task === undefined ? [] : [t.task])))];
  }

  /** The next turn for a request to `model` (whose task is `task`), or undefined when the script is exhausted. */
  next(model: string, task = ''): ScriptTurn | undefined {
    // the longest task text the request's task contains picks its own run of turns
    const route = this.tasks.filter((t) => task.includes(t)).sort((a, b) => b.length - a.length)[0];
    const key = `${this.perModel ? model : ''}\u0000${route ?? ''}`;
    let i = this.positions.get(key) ?? 0;
    for (; i < this.script.turns.length; i++) {
      const turn = this.script.turns[i];
      if (!turn) break;
      if (this.perModel && turn.model !== undefined && turn.model !== model) continue;
      if (turn.task !== route) continue;
      this.positions.set(key, i + 1);
      return turn;
    }
    this.positions.set(key, i);
    return undefined;
  }
}

/** What an expectation can check, extracted from any wire format. */
export interface RequestView {
  model: string;
  lastUser?: string;
  lastToolResult?: string;
  tools: string[];
}

/** Check a turn's expectation; returns a failure message starting "script expectation failed", or undefined. */
export function checkExpectation(
  expect: ScriptExpectation | undefined,
  view: RequestView,
): string | undefined {
  if (!expect) return undefined;
  const fail = (what: string) => `script expectation failed: ${what}`;
  if (expect.model !== undefined && view.model !== expect.model) {
    return fail(`expected model ${JSON.stringify(expect.model)}, got ${JSON.stringify(view.model)}`);
  }
  if (expect.last_user_contains !== undefined && !(view.lastUser ?? '').includes(expect.last_user_contains)) {
    return fail(
      `last user message should contain ${JSON.stringify(expect.last_user_contains)}, got ${JSON.stringify(clip(view.lastUser))}`,
    );
  }
  if (
    expect.last_tool_result_contains !== undefined &&
    !(view.lastToolResult ?? '').includes(expect.last_tool_result_contains)
  ) {
    return fail(
      `last tool result should contain ${JSON.stringify(expect.last_tool_result_contains)}, got ${JSON.stringify(clip(view.lastToolResult))}`,
    );
  }
  const missing = (expect.tools ?? []).filter((t) => !view.tools.includes(t));
  if (missing.length > 0) {
    return fail(`tools ${missing.join(', ')} not offered (offered: ${view.tools.join(', ') || 'none'})`);
  }
  return undefined;
}

function clip(text: string | undefined): string | null {
  if (text === undefined) return null;
  return text.length > 300 ? `${text.slice(0, 300)}...` : text;
}

/** The finish reason a turn answers with: its `finish`, else what its content implies. */
export function scriptFinish(turn: ScriptTurn): 'stop' | 'length' | 'tool_calls' {
  return turn.finish ?? ((turn.tool_calls ?? []).length > 0 ? 'tool_calls' : 'stop');
}

/** The pieces a turn streams `text` in: `chunk_size` characters each, else three pieces. */
export function turnChunks(turn: ScriptTurn, text: string): string[] {
  if (turn.chunk_size === undefined) return splitIntoChunks(text);
  const out: string[] = [];
  for (let i = 0; i < text.length; i += turn.chunk_size) out.push(text.slice(i, i + turn.chunk_size));
  return out;
}

/** Split text into up to `parts` roughly equal fragments, as a streaming server would. */
export function splitIntoChunks(text: string, parts = 3): string[] {
  if (text.length === 0) return [];
  const size = Math.max(1, Math.ceil(text.length / parts));
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}
