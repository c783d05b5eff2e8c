/** What every route does with a request: read its body against a schema, answer an error in the API's shape. */

import type { Context } from 'hono';
import type { z } from 'zod';

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
