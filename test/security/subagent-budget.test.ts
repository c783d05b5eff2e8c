/**
 * Subagents spend from one budget: the whole tree (a session, its children, theirs) is charged as each
 * answer arrives, whether or not anyone waits for a child. Once max_tokens is used up no agent starts and
 * the run ends BUDGET_EXCEEDED, not COMPLETED; a resumed session counts what its tree spent before.
 * Through the real binary, against the scripted model server.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openDb } from '../../src/store/db.js';
import { EventLog, type StoredEvent } from '../../src/store/event-log.js';
import { chatBodies, keel, keelHome, model, modelFlags, requestMessages } from '../e2e/harness.js';
import { gitRepo } from '../helpers/tmp.js';

const usage = (tokens: number) => ({ usage: { prompt_tokens: tokens, completion_tokens: 0 } });
const spawn = (task: string, name: string) => ({ name: 'spawn_agent', arguments: { task, name } });

/** Every session in the store with its events. */
function allSessions(home: string): Array<{ id: string; parent: string | null; events: StoredEvent[] }> {
  const db = openDb(join(home, 'keel.db'));
  try {
    const log = new EventLog(db);
    return log.listSessions(100).map((s) => ({ id: s.id, parent: s.parent_id, events: log.events(s.id) }));
  } finally {
    db.close();
  }
}

/** Tokens every model answer in the store reported: what the tree really spent. */
function spentInStore(home: string): number {
  let total = 0;
  for (const s of allSessions(home))
    for (const e of s.events)
      if (e.type === 'assistant_message') {
        const u = e.data.usage as { input: number; output: number };
        total += u.input + u.output;
      }
  return total;
}

/** Requests whose task (first user message) contains `task`. */
function requestsFor(server: Parameters<typeof chatBodies>[0], task: string): number {
  return chatBodies(server).filter((b) =>
    String(requestMessages(b).find((m) => m.role === 'user')?.content ?? '').includes(task),
  ).length;
}

const CONFIG = '[budgets]\nmax_tokens = 1000\n[agents]\nmax_running = 4\n';

describe('subagents and the budget', () => {
  it('children never waited for are charged as they spend: a spawn is refused, the run ends BUDGET_EXCEEDED, and a resume starts from the tree total', async () => {
    const repo = gitRepo();
    const home = keelHome(CONFIG);
    const server = await model([
      {
        task: 'PARENT',
        tool_calls: ['x1', 'x2', 'x3', 'x4'].map((n) => spawn(`CHILD spend ${n}`, n)),
        ...usage(10),
      },
      // by the time this answer arrives, the four children have spent 1200 of the 1000 tokens
      { task: 'PARENT', tool_calls: [spawn('CHILD more', 'y1')], delay_ms: 2500, ...usage(10) },
      { task: 'PARENT', text: 'all done', ...usage(10) },
      ...Array.from({ length: 4 }, () => ({
        task: 'CHILD spend',
        text: 'spent',
        delay_ms: 300,
        ...usage(300),
      })),
      { task: 'CHILD more', text: 'spent more', ...usage(300) },
      { task: 'PARENT', text: 'resumed', ...usage(10) },
    ]);
    const run = await keel(['ask', ...modelFlags(server), '--json', 'PARENT: spend through children'], {
      cwd: repo,
      home,
      timeoutMs: 60_000,
    });
    const doc = JSON.parse(run.stdout);
    expect(doc).toMatchObject({ code: 'BUDGET_EXCEEDED', budget: 'max_tokens' });
    expect(run.code).toBe(1);
    // the spawn after the budget was gone was refused, and no request of it reached the model
    expect(requestsFor(server, 'CHILD more')).toBe(0);
    const parent = allSessions(home).find((s) => s.id === doc.session_id);
    const refused = parent?.events.find(
      (e) => e.type === 'tool_result' && e.data.tool === 'spawn_agent' && e.data.is_error,
    );
    expect(String(refused?.data.output)).toMatch(/max_tokens/);
    expect(allSessions(home).filter((s) => s.parent === doc.session_id)).toHaveLength(4);
    // what the session reports is what its tree spent, children never waited for included
    expect(doc.tokens.total).toBe(spentInStore(home));
    expect(doc.tokens.total).toBe(1220);

    // a resumed session starts from the tree's total, read back from the log: no request is made
    const before = chatBodies(server).length;
    const resumed = await keel(
      ['sessions', 'resume', doc.session_id, ...modelFlags(server), '--json', 'go on'],
      { cwd: repo, home, timeoutMs: 60_000 },
    );
    expect(JSON.parse(resumed.stdout)).toMatchObject({ code: 'BUDGET_EXCEEDED', budget: 'max_tokens' });
    expect(chatBodies(server).length).toBe(before);
  }, 120_000);

  it('a parent that answers before its children (and a grandchild) have spent still ends BUDGET_EXCEEDED', async () => {
    const repo = gitRepo();
    const home = keelHome(CONFIG);
    const server = await model([
      { task: 'PARENT', tool_calls: [spawn('CHILD-A', 'a'), spawn('CHILD-B', 'b')], ...usage(10) },
      // the final answer comes after the children and the grandchild have spent
      { task: 'PARENT', text: 'done without waiting', delay_ms: 3000, ...usage(10) },
      { task: 'CHILD-A', tool_calls: [spawn('GRANDCHILD', 'g')], ...usage(100) },
      { task: 'CHILD-A', text: 'left it running', delay_ms: 1500, ...usage(100) },
      { task: 'CHILD-B', text: 'b spent', delay_ms: 300, ...usage(300) },
      { task: 'GRANDCHILD', text: 'g spent', delay_ms: 300, ...usage(500) },
    ]);
    const run = await keel(['ask', ...modelFlags(server), '--json', 'PARENT: answer at once'], {
      cwd: repo,
      home,
      timeoutMs: 60_000,
    });
    const doc = JSON.parse(run.stdout);
    expect(requestsFor(server, 'GRANDCHILD')).toBe(1);
    expect(doc).toMatchObject({ code: 'BUDGET_EXCEEDED', budget: 'max_tokens' });
    expect(run.code).toBe(1);
    expect(doc.tokens.total).toBe(spentInStore(home));
    expect(doc.tokens.total).toBe(1020);
  }, 120_000);
});
