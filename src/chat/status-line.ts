/** The status line under the input: model, mode, context used of the window, cost, sandbox. */
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
  const parts = [inertLine(conv.model), mode, ctx, cost, sandbox];
  return `${style.dim(' ')}${parts.join(style.dim(' · '))}${conv.sessionId ? style.dim(` · ${conv.sessionId}`) : ''}`;
}
