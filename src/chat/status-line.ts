/**
 * The status line under the input: model, mode, context used of the window, cost, sandbox, and the
 * last answer's time to first token and tokens per second (from its logged timing and usage).
 */
import { inertLine } from '../term/inert.js';
import type { Conversation } from './conversation.js';
import { tokens } from './describe.js';
import type { Style } from './style.js';

export function statusLine(conv: Conversation, style: Style): string {
  const s = conv.stats;
  const ctx = s.contextWindow
    ? `ctx ${tokens(s.contextTokens)}/${tokens(s.contextWindow)} (${Math.round((100 * s.contextTokens) / s.contextWindow)}%)`
    : `ctx ${tokens(s.contextTokens)}`;
  const cost = s.cost === null ? 'cost n/a' : `$${s.cost.toFixed(4)}`;
  const acting = conv.mode === 'edit' || conv.mode === 'auto';
  const sandbox = !acting
    ? 'read-only'
    : s.sandboxed === false
      ? 'shell unsandboxed'
      : s.sandboxed
        ? `sandboxed (${conv.config.sandbox})`
        : `sandbox ${conv.config.sandbox}`;
  const mode = acting ? style.yellow(conv.mode) : style.green(conv.mode);
  // the last answer's speed after the settings: a narrow terminal cuts it before them
  const parts = [
    inertLine(conv.model),
    mode,
    ctx,
    cost,
    sandbox,
    ...(s.lastAnswer ? [speed(s.lastAnswer)] : []),
  ];
  return `${style.dim(' ')}${parts.join(style.dim(' · '))}${conv.sessionId ? style.dim(` · ${conv.sessionId}`) : ''}`;
}

/**
 * `ttft 0.4 s · 38 tok/s`: seconds to the first token, and output tokens per second of generating
 * them (from the first token to the end; over the whole answer when it all came at once).
 */
export function speed(answer: { first_token_ms: number; total_ms: number; output: number }): string {
  const ttft = `ttft ${(answer.first_token_ms / 1000).toFixed(1)} s`;
  const generating = answer.total_ms - answer.first_token_ms;
  const ms = generating > 0 ? generating : answer.total_ms;
  return ms > 0 ? `${ttft} · ${Math.round((1000 * answer.output) / ms)} tok/s` : ttft;
}
