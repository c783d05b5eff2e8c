/** The reviewer of `keel loop`: one model call over the task and the diff, answered as a JSON verdict. */
import type { TokenCount } from '../agent/events.js';
import type { ModelClient } from '../model/chain.js';
import { costUsd, type Price } from '../model/cost.js';
import type { ChatMessage } from '../model/types.js';

/** What the reviewer decided; `readable` is false when its answer had no usable verdict. */
export interface Review {
  verdict: 'APPROVE' | 'REVISE';
  findings: string[];
  readable: boolean;
  model: string;
}

export interface ReviewInput {
  task: string;
  patch: string;
  files: string[];
  /** The test results the change reached, in words. */
  tests: string;
}

/** A review and what it cost. */
export interface ReviewOutcome {
  review: Review;
  tokens: TokenCount;
  costUsd: number | null;
}

// a reviewer needs the whole change, but a small local window must not overflow on a huge one
const MAX_PATCH_CHARS = 60_000;

const SYSTEM = [
  'You review a code change made for a task. The tests pass; judge whether the change does the task correctly and well.',
  'Answer with one JSON object and nothing else:',
  '{"verdict": "APPROVE" | "REVISE", "findings": ["one specific, actionable problem per entry"]}',
  'APPROVE when the change is correct and complete (findings may then be empty).',
  'REVISE only for real defects: wrong behaviour, a missed part of the task, a broken edge case. Name the file and what to change.',
].join('\n');

/** Ask the review model for a verdict on a change; model errors propagate to the caller. */
export async function askReviewer(
  client: ModelClient,
  input: ReviewInput,
  opts: { signal: AbortSignal; pricing: Record<string, Price>; temperature?: number },
): Promise<ReviewOutcome> {
  const messages: ChatMessage[] = [
    { role: 'system', content: SYSTEM },
    { role: 'user', content: reviewPrompt(input) },
  ];
  let text = '';
  const tokens: TokenCount = { input: 0, output: 0 };
  let cost: number | null = 0;
  const request = {
    messages,
    tools: [],
    ...(opts.temperature === undefined ? {} : { temperature: opts.temperature }),
  };
  for await (const delta of client.stream(request, opts.signal)) {
    if (delta.type === 'text') text += delta.text;
    if (delta.type !== 'usage') continue;
    tokens.input += delta.usage.inputTokens;
    tokens.output += delta.usage.outputTokens;
    const c = costUsd(delta.model, delta.usage, opts.pricing);
    cost = cost === null || c === null ? null : cost + c;
  }
  return { review: { ...parseReview(text), model: client.currentModel() }, tokens, costUsd: cost };
}

function reviewPrompt(input: ReviewInput): string {
  const patch =
    input.patch.length <= MAX_PATCH_CHARS
      ? input.patch
      : `${input.patch.slice(0, MAX_PATCH_CHARS)}\n[... ${input.patch.length - MAX_PATCH_CHARS} characters of the diff cut]`;
  return [
    `Task:\n${input.task}`,
    '',
    `Files changed: ${input.files.length ? input.files.join(', ') : '(none)'}`,
    '',
    `Tests:\n${input.tests}`,
    '',
    `Diff:\n${patch || '(empty: the working tree is as it was before the loop)'}`,
  ].join('\n');
}

/** Read a verdict from the reviewer's answer: bare or fenced JSON; anything else is an unreadable REVISE. */
export function parseReview(text: string): Omit<Review, 'model'> {
  const value = firstJsonObject(text);
  const verdict = typeof value?.verdict === 'string' ? value.verdict.trim().toUpperCase() : undefined;
  if (!value || (verdict !== 'APPROVE' && verdict !== 'REVISE')) {
    const said = text.trim().replace(/\s+/g, ' ').slice(0, 200);
    return {
      verdict: 'REVISE',
      findings: [
        `the review was unreadable (expected JSON with "verdict": "APPROVE" or "REVISE"); the reviewer said: ${said || '(nothing)'}`,
      ],
      readable: false,
    };
  }
  const raw: unknown[] = Array.isArray(value.findings) ? value.findings : [];
  const findings = raw.map(findingText).filter((f) => f.length > 0);
  if (verdict === 'REVISE' && !findings.length) {
    findings.push('the reviewer asked for changes without naming any; re-check the change against the task');
  }
  return { verdict, findings, readable: true };
}

type JsonObject = Record<string, unknown>;

function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The first JSON object in the text: a fenced block, the whole text, or the outermost braces. */
function firstJsonObject(text: string): JsonObject | undefined {
  const candidates: string[] = [];
  for (const m of text.matchAll(/```(?:json|JSON)?\s*\n?([\s\S]*?)```/g)) if (m[1]) candidates.push(m[1]);
  candidates.push(text);
  const start = text.indexOf('{');
  const end = text.lastIndexOf('}');
  if (start >= 0 && end > start) candidates.push(text.slice(start, end + 1));
  for (const candidate of candidates) {
    try {
      const value: unknown = JSON.parse(candidate.trim());
      if (isObject(value)) return value;
    } catch {
      // not this one; models wrap JSON in prose and fences
    }
  }
  return undefined;
}

/** A finding as one line: a string as is; an object as `file:line: message`. */
function findingText(finding: unknown): string {
  if (typeof finding === 'string') return finding.trim();
  if (!isObject(finding)) return finding === null || finding === undefined ? '' : JSON.stringify(finding);
  const pick = (...keys: string[]) => {
    for (const k of keys) {
      const v = finding[k];
      if (typeof v === 'string' && v.trim()) return v.trim();
      if (typeof v === 'number') return String(v);
    }
    return undefined;
  };
  const message = pick('message', 'finding', 'issue', 'description', 'text', 'comment', 'suggestion');
  if (!message) return JSON.stringify(finding);
  const file = pick('file', 'path');
  const line = pick('line');
  const where = file ? `${file}${line ? `:${line}` : ''}: ` : '';
  return `${where}${message}`;
}
