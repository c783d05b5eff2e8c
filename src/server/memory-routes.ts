/** The memory routes: search the project's memory, add a note. */
import type { Hono } from 'hono';
import { openMemory } from '../memory/open.js';
import { MemoryAddBody } from './api.js';
import type { AppOptions } from './app.js';
import { body, fail } from './http.js';

export function mountMemory(app: Hono, opts: AppOptions): void {
  const withMemory = async <T>(fn: (m: ReturnType<typeof openMemory>) => Promise<T>): Promise<T> => {
    const m = openMemory({ dir: opts.project, config: opts.configFor({}).config, env: opts.env });
    try {
      return await fn(m);
    } finally {
      m.close();
    }
  };
  app.get('/v1/memory/search', async (c) => {
    const q = c.req.query('q') ?? '';
    if (!q.trim()) return fail(c, 400, 'BAD_REQUEST', 'q: give a query');
    const k = Math.min(50, Math.max(1, Number(c.req.query('k') ?? 10) || 10));
    const hits = await withMemory((m) => m.memory.search(q, k));
    return c.json({ items: hits.map((h) => ({ ...h.item, score: h.score })) });
  });
  app.post('/v1/memory', async (c) => {
    const req = await body(c, MemoryAddBody);
    if (typeof req === 'string') return fail(c, 400, 'BAD_REQUEST', req);
    const added = await withMemory((m) =>
      m.memory.add({ kind: 'note', text: req.text, tags: req.tags ?? [], author: 'user' }),
    );
    return c.json({ item: added.item, folded: added.folded }, 201);
  });
}
