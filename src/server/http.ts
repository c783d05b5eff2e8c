/** What every route does with a request: read its body against a schema, answer an error in the API's shape, keep to the one project. */

import { resolve } from 'node:path';
import type { Context } from 'hono';
import type { z } from 'zod';
import { recordedIn } from '../fix/runs.js';
import type { AppOptions } from './app.js';

export function fail(c: Context, status: 400 | 404 | 409 | 413, code: string, error: string) {
  return c.json({ code, error }, status);
}

export async function body<T extends z.ZodType>(c: Context, schema: T): Promise<z.infer<T> | string> {
  let raw: unknown;
  const text = await c.req.text();
  try {
    raw = text.trim() ? JSON.parse(text) : {};
  } catch {
    return 'the request body is not JSON';
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return `${issue?.path.join('.') || 'body'}: ${issue?.message ?? 'invalid'}`;
  }
  return parsed.data;
}

/** The server serves its own project: `?project=` naming another folder (a nested repository too) is refused. */
export function projectGuard(opts: AppOptions) {
  const { manager } = opts;
  const otherProject = (c: Context) => {
    const project = c.req.query('project');
    return project !== undefined && !recordedIn(resolve(opts.project, project), manager.root);
  };
  const onlyThisProject = `project: this server serves ${opts.project} only`;
  return { otherProject, onlyThisProject };
}
