/**
 * A stage's prompt with `{{a.b.c}}` filled from the webhook's payload, when the run starts (the payload
 * itself is never kept). Only scalar values are put in, each cut to a bound; a path that names nothing,
 * or an object, becomes empty. What comes from the payload is data for the agent, written by whoever
 * could trigger the webhook (a pull request's title): the agent's own policy is what bounds it.
 */

const FIELD = /\{\{\s*([A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+)*)\s*\}\}/g;
const MAX_VALUE = 2_000;

function lookup(payload: unknown, path: string): string {
  let at: unknown = payload;
  for (const part of path.split('.')) {
    if (at === null || typeof at !== 'object' || !Object.hasOwn(at, part)) return '';
    at = (at as Record<string, unknown>)[part];
  }
  if (typeof at === 'string') return at.slice(0, MAX_VALUE);
  if (typeof at === 'number' || typeof at === 'boolean') return String(at);
  return '';
}

/** The prompt with every `{{path}}` replaced by the payload's scalar at that path. */
export function renderPrompt(template: string, payload: unknown): string {
  return template.replace(FIELD, (_, path: string) => lookup(payload, path));
}
