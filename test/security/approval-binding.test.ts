/**
 * An answer is bound to the question it answers. A subagent and its parent ask at once with the same
 * call id (the model's `call_0`, and keel's own `c2`): `keel serve` must keep both questions, each under its own
 * server-made id (recorded in each session's log), and an answer names one and applies to exactly
 * that one. Over A2A the two questions queue on the task, and a bare "yes" while two wait applies to
 * neither; in `keel chat` they come one after another, none dropped. Attack variant: answering by the
 * shared call id (what the API took before) is refused.
 */
import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Message, TaskState } from '@a2a-js/sdk';
import type { Client } from '@a2a-js/sdk/client';
import { chromium } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import type { ScriptTurn } from '../../src/model/script.js';
import { openDb } from '../../src/store/db.js';
import { EventLog, type StoredEvent } from '../../src/store/event-log.js';
import { a2aClient, asTask, textOf } from '../e2e/a2a-harness.js';
import { keelHome, model, modelFlags } from '../e2e/harness.js';
import { Pane } from '../e2e/pane.js';
import { readStream, startServe } from '../e2e/serve-harness.js';
import { gitRepo } from '../helpers/tmp.js';

const TOKEN = 'approval-binding-token';

/**
 * The parent spawns a helper, then both ask to write with the same call id: the model's (`call_0`), and
 * keel's own too (each session counts its calls: the helper looks first, so both writes are `c2`).
 */
const sameCallId: ScriptTurn[] = [
  {
    task: 'PARENT',
    tool_calls: [
      { id: 'call_s', name: 'spawn_agent', arguments: { task: 'CHILD: write child.txt', name: 'helper' } },
    ],
  },
  { task: 'CHILD', tool_calls: [{ id: 'call_l', name: 'list_dir', arguments: { path: '.' } }] },
  {
    task: 'CHILD',
    tool_calls: [{ id: 'call_0', name: 'write_file', arguments: { path: 'child.txt', content: 'child\n' } }],
  },
  { task: 'CHILD', text: 'child done' },
  {
    task: 'PARENT',
    tool_calls: [
      { id: 'call_0', name: 'write_file', arguments: { path: 'parent.txt', content: 'hidden\n' } },
    ],
  },
  { task: 'PARENT', tool_calls: [{ id: 'call_w', name: 'wait_agent', arguments: { names: ['helper'] } }] },
  { task: 'PARENT', text: 'parent done' },
];

/** Every stored event of every session in a KEEL_HOME, by session. */
function allEvents(home: string): StoredEvent[] {
  const db = openDb(join(home, 'keel.db'));
  try {
    const log = new EventLog(db);
    return log.listSessions(50).flatMap((s) => log.events(s.id));
  } finally {
    db.close();
  }
}

const asks = (events: StoredEvent[]) =>
  events.filter((e) => e.type === 'gate_decision' && e.data.decision === 'ask');

/** Wait until the store holds `n` questions asked (across the parent's and the child's logs). */
async function questionsAsked(home: string, n: number): Promise<StoredEvent[]> {
  const end = Date.now() + 30_000;
  for (;;) {
    try {
      const found = asks(allEvents(home));
      if (found.length >= n) return found;
    } catch {
      // the store may not exist yet
    }
    if (Date.now() > end) throw new Error(`fewer than ${n} questions were asked`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function until(check: () => boolean, what: string): Promise<void> {
  const end = Date.now() + 30_000;
  while (!check()) {
    if (Date.now() > end) throw new Error(`${what} never happened`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The session's waiting questions once there are `n` (a question is logged a moment before it waits). */
async function pendingOf(
  s: Awaited<ReturnType<typeof startServe>>,
  id: string,
  n: number,
): Promise<Pending[]> {
  const end = Date.now() + 30_000;
  for (;;) {
    const pending = (await s.api('GET', `/v1/sessions/${id}`)).body.pending_approvals as Pending[];
    if (pending.length === n || Date.now() > end) return pending;
    await new Promise((r) => setTimeout(r, 100));
  }
}

const CHROMIUM = '/usr/bin/chromium';

/** Open the session's page, expect `cards` approval cards, and click Allow on the one for `agent`. */
async function allowOnPage(
  s: Awaited<ReturnType<typeof startServe>>,
  id: string,
  agent: string,
  cards: number,
): Promise<void> {
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: process.getuid?.() === 0 ? ['--no-sandbox'] : [],
  });
  try {
    const page = await browser.newPage();
    await page.goto(`http://127.0.0.1:${s.port}/#token=${s.token}`);
    await page.getByRole('heading', { name: 'Sessions' }).waitFor();
    await page.goto(`http://127.0.0.1:${s.port}/#/s/${id}`);
    const approvals = page.locator('article.approval');
    await expect.poll(() => approvals.count(), { timeout: 30_000 }).toBe(cards);
    const card = approvals.filter({ hasText: `for ${agent}` });
    expect(await card.count()).toBe(1);
    await card.getByRole('button', { name: 'Allow' }).click();
    await expect.poll(() => approvals.count(), { timeout: 30_000 }).toBe(cards - 1);
  } finally {
    await browser.close();
  }
}

interface Pending {
  id: string;
  call_id: string;
  agent: string | null;
}

describe('an approval answers exactly the question it names', () => {
  it('serve: a subagent and its parent asking with the same call id are two questions; allowing one applies only it', async () => {
    const server = await model(sameCallId);
    const repo = gitRepo();
    const home = keelHome('approvals = "writes"\n');
    const s = await startServe({ cwd: repo, home, args: modelFlags(server) });
    const id = (await s.api('POST', '/v1/sessions', { prompt: 'PARENT: delegate, then write', mode: 'edit' }))
      .body.session_id;
    const logged = await questionsAsked(home, 2);

    // both questions wait, each under its own id, though both calls have the same id (c2; the model's call_0)
    const pending = await pendingOf(s, id, 2);
    expect(pending.map((p) => p.call_id)).toEqual(['c2', 'c2']);
    expect(pending.map((p) => p.agent ?? 'parent').sort()).toEqual(['helper', 'parent']);
    expect(new Set(pending.map((p) => p.id)).size).toBe(2);
    // the ids are the server's, and each session's log records its own question under it
    expect(logged.map((e) => e.data.question_id).sort()).toEqual(pending.map((p) => p.id).sort());
    const child = pending.find((p) => p.agent === 'helper') as Pending;
    const parent = pending.find((p) => p.agent === null) as Pending;
    expect(logged.find((e) => e.session_id === id)?.data.question_id).toBe(parent.id);

    // the stream shows both questions too (a page that connects now draws two cards)
    const frames = await readStream(
      `${s.url}v1/sessions/${id}/events`,
      (_f, all) => all.filter((f) => f.event === 'approval').length >= 2,
      { token: s.token },
    );
    expect(
      frames
        .filter((f) => f.event === 'approval')
        .map((f) => f.data.id)
        .sort(),
    ).toEqual([child.id, parent.id].sort());

    // the attack: an answer by the shared call id binds to nothing
    const byCall = await s.api('POST', `/v1/sessions/${id}/approvals/c2`, { decision: 'allow' });
    expect(byCall.status).toBe(404);
    expect(byCall.body.error).toContain('question id');
    expect((await s.api('GET', `/v1/sessions/${id}`)).body.pending_approvals).toHaveLength(2);

    // the page shows both cards; Allow on the child's card writes the child's file and nothing else
    if (existsSync(CHROMIUM)) await allowOnPage(s, id, 'helper', 2);
    else {
      console.warn(`approval-binding: no browser at ${CHROMIUM}; answering through the API`);
      expect(
        (await s.api('POST', `/v1/sessions/${id}/approvals/${child.id}`, { decision: 'allow' })).status,
      ).toBe(200);
    }
    await until(() => existsSync(join(repo, 'child.txt')), "the child's write");
    expect(existsSync(join(repo, 'parent.txt'))).toBe(false);
    expect((await pendingOf(s, id, 1)).map((p) => p.id)).toEqual([parent.id]);
    // an answered question cannot be answered again
    expect(
      (await s.api('POST', `/v1/sessions/${id}/approvals/${child.id}`, { decision: 'allow' })).status,
    ).toBe(404);

    expect(
      (await s.api('POST', `/v1/sessions/${id}/approvals/${parent.id}`, { decision: 'deny' })).status,
    ).toBe(200);
    const all = await readStream(`${s.url}v1/sessions/${id}/events`, (f) => f.event === 'end', {
      token: s.token,
    });
    expect(all.find((f) => f.event === 'end')?.data.code).toBe('COMPLETED');
    expect(existsSync(join(repo, 'parent.txt'))).toBe(false);
    expect(readFileSync(join(repo, 'child.txt'), 'utf8')).toBe('child\n');
    // the settlements are in the logs under the same ids
    const settled = allEvents(home).filter(
      (e) => e.type === 'gate_decision' && e.data.decision !== 'ask' && e.data.question_id,
    );
    expect(settled.map((e) => `${e.data.question_id}:${e.data.decision}`).sort()).toEqual(
      [`${child.id}:allow`, `${parent.id}:deny`].sort(),
    );
  }, 90_000);

  it('A2A: two questions queue on the task; a bare "yes" applies to neither, an answer that names one applies to it', async () => {
    const server = await model(sameCallId);
    const repo = gitRepo();
    const home = keelHome('approvals = "writes"\n');
    const s = await startServe({
      cwd: repo,
      home,
      args: modelFlags(server),
      env: { KEEL_SERVE_TOKEN: TOKEN },
    });
    const client = await clientFor(s.port);
    const first = asTask(await client.sendMessage(send([{ text: 'PARENT: delegate, then write' }], 'edit')));
    expect(first.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    await questionsAsked(home, 2);
    const ref = { taskId: first.id, contextId: first.contextId };

    // the task shows both questions, each with its id
    const shown = await waitForQuestions(client, first.id, 2);
    const ids = shown.map((q) => q.id);
    expect(new Set(ids).size).toBe(2);
    const child = shown.find((q) => q.agent === 'helper') as { id: string };
    const parent = shown.find((q) => q.agent === null) as { id: string };

    // the attack: a bare "yes" with two waiting must not pick one
    const bare = asTask(await client.sendMessage(send([{ text: 'yes' }], undefined, ref)));
    expect(bare.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    expect(textOf(bare.status?.message?.parts)).toContain('2 questions wait');
    expect(existsSync(join(repo, 'child.txt'))).toBe(false);
    expect(existsSync(join(repo, 'parent.txt'))).toBe(false);
    // nor does an answer naming a question that does not wait
    const stranger = asTask(
      await client.sendMessage(
        send([{ data: { decision: 'allow', question: 'q-000000000000' } }], undefined, ref),
      ),
    );
    expect(textOf(stranger.status?.message?.parts)).toContain('no question q-000000000000 waits');

    // the child's question answered elsewhere (the API, as the page does): off the task's queue
    const session = (await s.api('GET', '/v1/sessions', undefined, { token: TOKEN })).body.sessions.find(
      (v: { pending_approvals: Pending[] }) => v.pending_approvals.some((p) => p.id === child.id),
    );
    expect(
      (
        await s.api(
          'POST',
          `/v1/sessions/${session.session_id}/approvals/${child.id}`,
          { decision: 'allow' },
          { token: TOKEN },
        )
      ).status,
    ).toBe(200);
    await until(() => existsSync(join(repo, 'child.txt')), "the child's write");
    expect((await waitForQuestions(client, first.id, 1)).map((q) => q.id)).toEqual([parent.id]);
    // the variant: a bare "yes" sent now may have been meant for the child's question; it applies to none
    const late = asTask(await client.sendMessage(send([{ text: 'yes' }], undefined, ref)));
    expect(late.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    expect(textOf(late.status?.message?.parts)).toContain('answered elsewhere since your last message');
    expect(existsSync(join(repo, 'parent.txt'))).toBe(false);

    // text that names the question works too
    const done = asTask(await client.sendMessage(send([{ text: `no ${parent.id}` }], undefined, ref)));
    expect(done.status?.state, textOf(done.status?.message?.parts)).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(existsSync(join(repo, 'parent.txt'))).toBe(false);
    expect(readFileSync(join(repo, 'child.txt'), 'utf8')).toBe('child\n');
  }, 90_000);

  it('chat: the two questions come one after another, and each answer applies to the question on screen', async () => {
    const server = await model(sameCallId);
    const repo = gitRepo();
    const home = keelHome('approvals = "writes"\n');
    const pane = Pane.start(['chat', '--mode', 'edit', ...modelFlags(server)], { cwd: repo, home });
    await pane.waitFor(/ctx \d/);
    pane.type('PARENT: delegate, then write', 'Enter');
    const shown = await pane.waitFor(/wants to change (child|parent)\.txt/);
    const first = /wants to change (child|parent)\.txt/.exec(shown)?.[1] as string;
    const second = first === 'child' ? 'parent' : 'child';
    await questionsAsked(home, 2);
    await pane.waitFor('then Enter');
    pane.type('y', 'Enter');
    // the other question was not dropped: it comes next, and the yes applied only to the first
    await pane.waitFor(`wants to change ${second}.txt`);
    await until(() => existsSync(join(repo, `${first}.txt`)), `the ${first}'s write`);
    expect(existsSync(join(repo, `${second}.txt`))).toBe(false);
    await pane.waitFor('then Enter');
    pane.type('n', 'Enter');
    await pane.waitFor('parent done');
    expect(existsSync(join(repo, `${second}.txt`))).toBe(false);
  }, 90_000);
});

const clientFor = (port: number) => a2aClient(`http://127.0.0.1:${port}`, TOKEN);

function send(parts: unknown[], skill?: string, ref: { taskId?: string; contextId?: string } = {}) {
  return {
    tenant: '',
    message: Message.fromJSON({
      messageId: randomUUID(),
      role: 'ROLE_USER',
      parts,
      ...ref,
      ...(skill ? { metadata: { skill } } : {}),
    }),
    configuration: undefined,
    metadata: undefined,
  };
}

/** The questions the task's status lists (a data part {questions}), once there are `n` of them. */
async function waitForQuestions(
  client: Client,
  id: string,
  n: number,
): Promise<Array<{ id: string; agent: string | null }>> {
  const end = Date.now() + 30_000;
  for (;;) {
    const task = await client.getTask({ tenant: '', id });
    const listed = (task.status?.message?.parts ?? [])
      .map((p) => (p.content?.$case === 'data' ? (p.content.value as { questions?: unknown }) : undefined))
      .find((d) => Array.isArray(d?.questions))?.questions as Array<{ id: string; agent: string | null }>;
    if (listed?.length === n) return listed;
    if (Date.now() > end)
      throw new Error(
        `the task never listed ${n} questions; its status says: ${textOf(task.status?.message?.parts)}`,
      );
    await new Promise((r) => setTimeout(r, 150));
  }
}
