/** The session routes: start, list, read, stream, message, answer a question, cancel and fork. */

import { realpathSync, statSync } from 'node:fs';
import { isAbsolute, relative, resolve } from 'node:path';
import type { Hono } from 'hono';
import { streamSSE } from 'hono/streaming';
import { ApprovalBody, ForkBody, MessageBody, StartBody } from './api.js';
import type { AppOptions } from './app.js';
import { body, fail } from './http.js';
import type { Frame, SessionState } from './sessions.js';

export function mountSessions(app: Hono, opts: AppOptions): void {
  const { manager } = opts;
  app.post('/v1/sessions', async (c) => {
    const req = await body(c, StartBody);
    if (typeof req === 'string') return fail(c, 400, 'BAD_REQUEST', req);
    const loaded = opts.configFor({
      ...(req.model ? { model: req.model } : {}),
      ...(req.profile ? { profile: req.profile } : {}),
    });
    if (req.scope) {
      const scope = scopeInside(opts.project, req.scope);
      if (scope === undefined)
        return fail(c, 400, 'SCOPE', `scope ${JSON.stringify(req.scope)} is not a folder inside the project`);
      loaded.config = { ...loaded.config, scope: [scope] };
    }
    if (req.parent) manager.view(req.parent);
    const { id } = await manager.start({
      prompt: req.prompt,
      mode: req.mode,
      loaded,
      ...(req.parent ? { parent: req.parent } : {}),
    });
    return c.json({ session_id: id, mode: req.mode, state: manager.view(id).state }, 201);
  });
  app.get('/v1/sessions', (c) => {
    const state = c.req.query('state') as SessionState | undefined;
    return c.json({ project: opts.project, sessions: manager.list(state ? { state } : {}) });
  });
  app.get('/v1/sessions/:id', (c) => c.json(manager.view(c.req.param('id'))));
  app.get('/v1/sessions/:id/diff', (c) => c.json({ files: manager.diff(c.req.param('id')) }));
  app.get('/v1/sessions/:id/events', (c) => {
    const id = c.req.param('id');
    manager.view(id);
    const from = c.req.header('last-event-id') ?? c.req.query('after') ?? '0';
    const after = /^\d+$/.test(from) ? Number(from) : 0;
    return streamSSE(c, async (stream) => {
      let chain = Promise.resolve();
      const send = (frame: Frame) => {
        chain = chain.then(() =>
          frame.kind === 'event'
            ? stream.writeSSE({
                id: String(frame.seq),
                event: frame.event.type,
                data: JSON.stringify({ ...frame.event, seq: frame.seq }),
              })
            : stream.writeSSE({ event: frame.kind, data: JSON.stringify(frame.data) }),
        );
      };
      const unsubscribe = manager.subscribe(id, after, send);
      const ping = setInterval(() => {
        chain = chain.then(() => stream.write(': ping\n\n')).then(() => {});
      }, 15_000);
      await new Promise<void>((done) => stream.onAbort(done));
      clearInterval(ping);
      unsubscribe();
    });
  });
  app.post('/v1/sessions/:id/messages', async (c) => {
    const req = await body(c, MessageBody);
    if (typeof req === 'string') return fail(c, 400, 'BAD_REQUEST', req);
    const delivered = await manager.message(c.req.param('id'), req.text);
    return c.json({ delivered }, 202);
  });
  app.post('/v1/sessions/:id/approvals/:question', async (c) => {
    const req = await body(c, ApprovalBody);
    if (typeof req === 'string') return fail(c, 400, 'BAD_REQUEST', req);
    const question = c.req.param('question');
    const ok = manager.approve(c.req.param('id'), question, req.decision, req.reason);
    if (!ok)
      return fail(
        c,
        404,
        'NOT_FOUND',
        `no question ${question} waits in this session; an answer names the question id (pending_approvals[].id), not the call id`,
      );
    return c.json({ ok: true });
  });
  app.post('/v1/sessions/:id/cancel', (c) => {
    const cancelled = manager.cancel(c.req.param('id'));
    return c.json({ cancelled }, 202);
  });
  app.post('/v1/sessions/:id/fork', async (c) => {
    const req = await body(c, ForkBody);
    if (typeof req === 'string') return fail(c, 400, 'BAD_REQUEST', req);
    const { id } = manager.fork(c.req.param('id'), req.at);
    if (req.prompt) await manager.message(id, req.prompt);
    return c.json({ session_id: id }, 201);
  });
}

/** A request's scope as a path relative to the project, or undefined when it leaves the project. */
export function scopeInside(project: string, scope: string): string | undefined {
  if (isAbsolute(scope) && !scope.startsWith(project)) return undefined;
  let real: string;
  try {
    real = realpathSync(resolve(project, scope));
  } catch {
    return undefined;
  }
  const root = realpathSync(project);
  const rel = relative(root, real);
  if (rel.startsWith('..') || isAbsolute(rel) || !statSync(real).isDirectory()) return undefined;
  return rel || '.';
}
