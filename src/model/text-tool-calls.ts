/** Recovering tool calls that a model wrote as text (bare JSON, fenced JSON, <tool_call> tags). */
import type { ToolCall } from './types.js';

/** A tagged tool call whose JSON did not parse; the loop answers it with a tool error. */
export interface MalformedToolCall {
  name?: string;
  /** The broken argument text (the whole tag body when the arguments could not be located). */
  raw: string;
  error: string;
}

export interface RecoveredToolCalls {
  calls: ToolCall[];
  malformed: MalformedToolCall[];
  /** The text with recovered calls cut out. */
  remainingText: string;
}

interface Span {
  start: number;
  end: number;
  calls: Omit<ToolCall, 'id'>[];
  malformed?: MalformedToolCall;
}

/**
 * The end (exclusive) of the balanced JSON object or array starting at `start`, or -1. Braces
 * inside strings do not count, so `{"a": "}"}` scans whole.
 */
export function scanJson(text: string, start: number): number {
  const open = text[start];
  if (open !== '{' && open !== '[') return -1;
  let depth = 0;
  let inString = false;
  for (let i = start; i < text.length; i++) {
    const ch = text[i];
    if (inString) {
      if (ch === '\\') i++;
      else if (ch === '"') inString = false;
      continue;
    }
    if (ch === '"') inString = true;
    else if (ch === '{' || ch === '[') depth++;
    else if (ch === '}' || ch === ']') {
      depth--;
      if (depth === 0) return i + 1;
    }
  }
  return -1;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The call a parsed JSON value describes, when it names a known tool. */
function asCall(value: unknown, known: ReadonlySet<string>): Omit<ToolCall, 'id'> | undefined {
  if (!isObject(value)) return undefined;
  // some models wrap it OpenAI-style: {"type": "function", "function": {...}}
  const inner = isObject(value.function) ? value.function : value;
  if (typeof inner.name !== 'string' || !known.has(inner.name)) return undefined;
  const args = inner.arguments ?? inner.parameters ?? {};
  if (typeof args === 'string') return { name: inner.name, arguments: args };
  if (!isObject(args)) return undefined;
  return { name: inner.name, arguments: JSON.stringify(args) };
}

/** Calls in a parsed value: one call object or an array of them (all must be calls). */
function callsIn(value: unknown, known: ReadonlySet<string>): Omit<ToolCall, 'id'>[] {
  const items = Array.isArray(value) ? value : [value];
  const calls = items.map((v) => asCall(v, known));
  return calls.length > 0 && calls.every((c) => c !== undefined) ? (calls as Omit<ToolCall, 'id'>[]) : [];
}

function tryParse(text: string): { value: unknown } | { error: string } {
  try {
    return { value: JSON.parse(text) };
  } catch (err) {
    return { error: (err as Error).message };
  }
}

/** Blank out a span so later passes skip it while offsets stay valid. */
function mask(text: string, start: number, end: number): string {
  return text.slice(0, start) + ' '.repeat(end - start) + text.slice(end);
}

const TAG = /<tool_call>([\s\S]*?)(?:<\/tool_call>|$)/g;
const FENCE = /```[ \t]*(?:json|tool_call)?[ \t]*\r?\n([\s\S]*?)```/gi;

function stripFence(body: string): string {
  const m = /^```[a-z_]*\s*\n?([\s\S]*?)```$/i.exec(body);
  return m?.[1] !== undefined ? m[1].trim() : body;
}

function malformedCall(
  body: string,
  error: string,
  known: ReadonlySet<string>,
): MalformedToolCall | undefined {
  const name = /"name"\s*:\s*"([^"\\]+)"/.exec(body)?.[1];
  if (name !== undefined && !known.has(name)) return undefined;
  const argsAt = /"(?:arguments|parameters)"\s*:\s*/.exec(body);
  let raw = body;
  if (argsAt) {
    // the arguments run to the call's closing brace, which is the last one in the tag
    const from = argsAt.index + argsAt[0].length;
    const close = body.lastIndexOf('}');
    raw = body.slice(from, close > from ? close : undefined).trim();
  }
  return { ...(name !== undefined ? { name } : {}), raw, error };
}

function tagSpans(text: string, known: ReadonlySet<string>): Span[] {
  const spans: Span[] = [];
  for (const m of text.matchAll(TAG)) {
    const body = stripFence((m[1] ?? '').trim());
    const start = m.index;
    const end = start + m[0].length;
    const parsed = tryParse(body);
    if ('value' in parsed) {
      const calls = callsIn(parsed.value, known);
      if (calls.length > 0) spans.push({ start, end, calls });
      continue; // valid JSON for an unknown tool stays text
    }
    const malformed = malformedCall(body, parsed.error, known);
    if (malformed) spans.push({ start, end, calls: [], malformed });
  }
  return spans;
}

function fenceSpans(text: string, known: ReadonlySet<string>): Span[] {
  const spans: Span[] = [];
  for (const m of text.matchAll(FENCE)) {
    const parsed = tryParse((m[1] ?? '').trim());
    if (!('value' in parsed)) continue;
    const calls = callsIn(parsed.value, known);
    if (calls.length > 0) spans.push({ start: m.index, end: m.index + m[0].length, calls });
  }
  return spans;
}

function bareSpans(text: string, known: ReadonlySet<string>): Span[] {
  const spans: Span[] = [];
  let i = text.indexOf('{');
  while (i >= 0) {
    const end = scanJson(text, i);
    if (end < 0) {
      i = text.indexOf('{', i + 1);
      continue;
    }
    const parsed = tryParse(text.slice(i, end));
    if (!('value' in parsed)) {
      i = text.indexOf('{', i + 1);
      continue;
    }
    const calls = callsIn(parsed.value, known);
    if (calls.length > 0) spans.push({ start: i, end, calls });
    // skip the whole object either way: a call nested in other JSON is data, not a call
    i = text.indexOf('{', end);
  }
  return spans;
}

/** Find tool calls written as text, for tools in `knownToolNames`; everything else stays text. */
export function recoverToolCalls(text: string, knownToolNames: Iterable<string>): RecoveredToolCalls {
  const known = new Set(knownToolNames);
  const spans: Span[] = [];
  let working = text;
  // most explicit first; each pass masks what it took so the next cannot take it twice
  for (const pass of [tagSpans, fenceSpans, bareSpans]) {
    for (const span of pass(working, known)) {
      spans.push(span);
      working = mask(working, span.start, span.end);
    }
  }
  spans.sort((a, b) => a.start - b.start);
  const calls: ToolCall[] = [];
  const malformed: MalformedToolCall[] = [];
  let remaining = '';
  let at = 0;
  for (const span of spans) {
    for (const call of span.calls) calls.push({ id: `recovered_${calls.length}`, ...call });
    if (span.malformed) malformed.push(span.malformed);
    remaining += text.slice(at, span.start);
    at = span.end;
  }
  remaining += text.slice(at);
  if (spans.length === 0) return { calls, malformed, remainingText: text };
  return { calls, malformed, remainingText: remaining.replace(/\n{3,}/g, '\n\n').trim() };
}
