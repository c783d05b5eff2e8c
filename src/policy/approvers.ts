/** Approver hooks: which PreToolUse hooks may stand in for a sandbox, by naming the tool they review. */
import type { HookSpec } from './hooks.js';

/** Split a regex at its top-level `|`, leaving groups, classes and escapes whole. */
function alternatives(pattern: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let inClass = false;
  let start = 0;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === '\\') {
      i++;
      continue;
    }
    if (inClass) {
      if (c === ']') inClass = false;
    } else if (c === '[') inClass = true;
    else if (c === '(') depth++;
    else if (c === ')') depth--;
    else if (c === '|' && depth === 0) {
      parts.push(pattern.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(pattern.slice(start));
  return parts;
}

/** The inside of `(…)` or `(?:…)` when the group spans the whole alternative. */
function groupBody(alt: string): string | undefined {
  const open = alt.startsWith('(?:') ? 3 : alt.startsWith('(') && !alt.startsWith('(?') ? 1 : 0;
  if (!open || !alt.endsWith(')')) return undefined;
  const body = alt.slice(open, -1);
  // `(a)|(b)` is not one group: the body must itself be balanced
  let depth = 0;
  for (let i = 0; i < body.length; i++) {
    if (body[i] === '\\') i++;
    else if (body[i] === '(') depth++;
    else if (body[i] === ')' && --depth < 0) return undefined;
  }
  return depth === 0 ? body : undefined;
}

/**
 * Whether a matcher names `tool` literally: one of its top-level alternatives (optionally
 * anchored with ^ and $, or inside a group) is exactly the tool's name. `.*`, `sh.*` or no
 * matcher at all match shell too, but do not name it: a hook written for every tool is not
 * a decision about commands.
 */
export function namesTool(matcher: string | undefined, tool: string): boolean {
  if (!matcher || !validRegex(matcher)) return false;
  return alternatives(matcher).some((raw) => {
    const alt = raw.trim().replace(/^\^/, '').replace(/\$$/, '');
    if (alt === tool) return true;
    const body = groupBody(alt);
    return body !== undefined && namesTool(body, tool);
  });
}

function validRegex(pattern: string): boolean {
  try {
    new RegExp(pattern);
    return true;
  } catch {
    return false;
  }
}

/** The PreToolUse hooks that declare themselves approvers and name `tool` in their matcher. */
export function approversOf(hooks: HookSpec[], tool: string): HookSpec[] {
  return hooks.filter((h) => h.event === 'PreToolUse' && h.approver === true && namesTool(h.matcher, tool));
}
