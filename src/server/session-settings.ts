/**
 * Switching a session's mode and model from the page: `POST /v1/sessions/:id/settings` sets what the
 * NEXT turn runs with. Never wider than a new session may have: the same modes and the same model check
 * as `POST /v1/sessions` (the server's config for that model, a ConfigError when it is wrong). Refused
 * (409) while a turn runs; recorded in the session's log as a `session_settings` event.
 */
import type { Context, Hono } from 'hono';
import * as z from 'zod';
import type { LoadedConfig } from '../config/load.js';
import { MODES } from '../config/schema.js';
import type { SessionManager } from './sessions.js';

export const SettingsBody = z
  .object({ mode: z.enum(MODES).optional(), model: z.string().min(1).max(200).optional() })
  .strict()
  .refine((b) => b.mode !== undefined || b.model !== undefined, 'give a mode, a model or both');

export const SETTINGS_ROUTE = {
  method: 'post' as const,
  path: '/v1/sessions/:id/settings',
  summary: 'set the mode and model the next turn runs with (409 while a turn runs)',
  body: SettingsBody,
};

export function mountSessionSettings(
  app: Hono,
  opts: { manager: SessionManager; configFor(flags: { model?: string }): LoadedConfig },
): void {
  app.post(SETTINGS_ROUTE.path, async (c: Context) => {
    let raw: unknown;
    try {
      const text = await c.req.text();
      raw = text.trim() ? JSON.parse(text) : {};
    } catch {
      return c.json({ code: 'BAD_REQUEST', error: 'the request body is not JSON' }, 400);
    }
    const parsed = SettingsBody.safeParse(raw);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const error = `${issue?.path.join('.') || 'body'}: ${issue?.message ?? 'invalid'}`;
      return c.json({ code: 'BAD_REQUEST', error }, 400);
    }
    const { mode, model } = parsed.data;
    const id = c.req.param('id') ?? '';
    opts.manager.view(id);
    // the model passes the check a new session's would (a ConfigError is a 400)
    if (model) opts.configFor({ model });
    const view = opts.manager.settings(id, { ...(mode ? { mode } : {}), ...(model ? { model } : {}) });
    return c.json(view);
  });
}
