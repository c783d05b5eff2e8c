import type { ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openDb } from '../../src/store/db.js';
import { EventLog, type StoredEvent } from '../../src/store/event-log.js';
import { gitRepo } from '../helpers/tmp.js';
import { chatBodies, keel, keelHome, model, modelFlags, requestMessages } from './harness.js';

/** $1 per million tokens each way: every scripted turn has a cost the log must keep. */
const PRICED = '[pricing."test-model"]\ninput_per_mtok = 1000\noutput_per_mtok = 1000\n';
const usage = (p: number, c: number) => ({ usage: { prompt_tokens: p, completion_tokens: c } });

function withLog<T>(home: string, fn: (log: EventLog) => T): T {
  const db = openDb(join(home, 'keel.db'));
  try {
    return fn(new EventLog(db));
  } finally {
    db.close();
  }
}

function sessionEvents(home: string, id?: string): StoredEvent[] {
  return withLog(home, (log) => log.events(id ?? (log.listSessions(1)[0]?.id as string)));
}

/** Resolve once the newest session's log has an event matching `until`. */
async function waitForEvent(home: string, until: (e: StoredEvent) => boolean, ms = 15_000): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    try {
      if (sessionEvents(home).some(until)) return;
    } catch {
      // the database or the session is not there yet
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('timed out waiting for an event');
}

/** Start keel, SIGKILL it once `until` is in its log, and return when it is dead. */
async function killWhen(
  args: string[],
  cwd: string,
  home: string,
  until: (e: StoredEvent) => boolean,
  andThen: () => boolean = () => true,
) {
  let child: ChildProcess | undefined;
  const run = keel(args, { cwd, home, onSpawn: (c) => (child = c) });
  await waitForEvent(home, until);
  for (const end = Date.now() + 10_000; !andThen() && Date.now() < end; )
    await new Promise((r) => setTimeout(r, 50));
  child?.kill('SIGKILL');
  const done = await run;
  expect(done.signal).toBe('SIGKILL');
}

const ends = (events: StoredEvent[]) => events.filter((e) => e.type === 'session_end');

describe('a session killed with SIGKILL resumes from its log', () => {
  it('in the middle of a tool call: the call is reported interrupted, never rerun, and the cost is kept', async () => {
    const repo = gitRepo();
    const home = keelHome(PRICED);
    const command = 'echo ran >> marker.txt; sleep 30';
    const server = await model([
      { tool_calls: [{ id: 'call_sleep', name: 'shell', arguments: { command } }], ...usage(100, 10) },
      { text: 'It was interrupted; I will not run it again.', ...usage(200, 20) },
    ]);
    // killed once the command really started
    await killWhen(
      ['edit', ...modelFlags(server), '-m', 'run the slow command'],
      repo,
      home,
      (e) => e.type === 'tool_start',
      () => existsSync(join(repo, 'marker.txt')),
    );
    expect(readFileSync(join(repo, 'marker.txt'), 'utf8')).toBe('ran\n');

    const before = sessionEvents(home);
    const id = before[0]?.session_id as string;
    expect(ends(before)).toHaveLength(0);
    const listed = await keel(['sessions', 'list', '--json'], { cwd: repo, home });
    expect(JSON.parse(listed.stdout).sessions[0]).toMatchObject({ id, state: 'interrupted' });

    const resumed = await keel(['sessions', 'resume', id, ...modelFlags(server), '--json'], {
      cwd: repo,
      home,
    });
    expect(resumed.stderr).toBe('');
    expect(resumed.code).toBe(0);
    const doc = JSON.parse(resumed.stdout);
    expect(doc).toMatchObject({ session_id: id, code: 'COMPLETED', mode: 'edit' });
    // both turns' tokens and cost: (100+10 + 200+20) tokens at $1000 per million
    expect(doc.tokens).toMatchObject({ input: 300, output: 30 });
    expect(doc.cost_usd).toBeCloseTo(0.33, 6);

    const after = sessionEvents(home, id);
    expect(after.filter((e) => e.type === 'tool_start')).toHaveLength(1);
    // the call has keel's id in the log; the server gets its own id back with the result
    const answer = after.find((e) => e.type === 'assistant_message');
    expect((answer?.data.tool_calls as unknown[] | undefined)?.[0]).toMatchObject({
      id: 'c1',
      wire_id: 'call_sleep',
    });
    const settled = after.find((e) => e.type === 'tool_result' && e.data.call_id === 'c1');
    expect(settled?.data).toMatchObject({ interrupted: true, is_error: true });
    expect(String(settled?.data.output)).toContain('interrupted');
    expect(ends(after)).toHaveLength(1);
    expect(after.map((e) => e.seq)).toEqual(after.map((_, i) => i + 1));
    expect(readFileSync(join(repo, 'marker.txt'), 'utf8')).toBe('ran\n');

    // the model heard about the interruption as the call's result, with the history as first sent
    const [first, second] = chatBodies(server).map(requestMessages);
    expect(second?.slice(0, 2)).toEqual(first);
    const last = second?.at(-1) as { role: string; content: string; tool_call_id?: string };
    expect(last.role).toBe('tool');
    expect(last.content).toContain('did not run it again');
    expect(last.tool_call_id).toBe('call_sleep');
  }, 40_000);

  it('in the middle of a streamed answer: goes on from the last recorded event without losing spent cost', async () => {
    const repo = gitRepo({ 'notes.md': 'the answer is 42\n' });
    const home = keelHome(PRICED);
    const server = await model([
      {
        tool_calls: [{ id: 'call_read', name: 'read_file', arguments: { path: 'notes.md' } }],
        ...usage(100, 10),
      },
      // streams one character at a time, slowly: the kill lands mid-answer
      {
        text: 'The answer, after long thought, is forty-two.',
        chunk_size: 1,
        chunk_delay_ms: 300,
        ...usage(150, 15),
      },
      { text: 'The answer is 42.', ...usage(150, 5) },
    ]);
    await killWhen(
      ['ask', ...modelFlags(server), '-m', 'what is the answer?'],
      repo,
      home,
      (e) => e.type === 'model_request' && e.data.round === 2,
      // the server has the request and is streaming its answer
      () => chatBodies(server).length === 2,
    );
    const id = sessionEvents(home)[0]?.session_id as string;
    const resumed = await keel(['-c', ...modelFlags(server), '--json'], { cwd: repo, home });
    expect(resumed.code).toBe(0);
    const doc = JSON.parse(resumed.stdout);
    expect(doc).toMatchObject({ session_id: id, code: 'COMPLETED', summary: 'The answer is 42.' });
    // the first turn was paid for; the cut-off one never finished and reported nothing
    expect(doc.tokens).toMatchObject({ input: 250, output: 15 });
    const after = sessionEvents(home, id);
    expect(after.filter((e) => e.type === 'tool_start')).toHaveLength(1);
    expect(after.filter((e) => e.type === 'assistant_message').map((e) => e.data.text)).toEqual([
      '',
      'The answer is 42.',
    ]);
    expect(ends(after)).toHaveLength(1);
    // the third request is the second one again: nothing of the cut answer entered the history
    const bodies = chatBodies(server).map(requestMessages);
    expect(bodies[2]).toEqual(bodies[1]);
  }, 40_000);
});

describe('resume, continue and fork', () => {
  it('--continue picks the newest session of this project, not a newer one of another project', async () => {
    const mine = gitRepo();
    const other = gitRepo();
    const home = keelHome();
    const server = await model([
      { text: 'first answer in mine' },
      { text: 'answer in other' },
      { text: 'follow-up in mine', expect: { last_user_contains: 'and then?' } },
    ]);
    const a = JSON.parse(
      (await keel(['ask', ...modelFlags(server), '--json', 'question one'], { cwd: mine, home })).stdout,
    );
    await keel(['ask', ...modelFlags(server), '--json', 'elsewhere'], { cwd: other, home });
    const run = await keel(['-c', ...modelFlags(server), '--json', '-m', 'and then?'], { cwd: mine, home });
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ session_id: a.session_id, summary: 'follow-up in mine' });
    const third = requestMessages(chatBodies(server)[2]);
    expect(third.map((m) => m.content)).toEqual([
      expect.stringContaining('You are keel'),
      'question one',
      'first answer in mine',
      'and then?',
    ]);
    const events = sessionEvents(home, a.session_id);
    expect(ends(events)).toHaveLength(2);
    expect(events.filter((e) => e.type === 'session_resume')).toHaveLength(1);
  });

  it('a session that ended needs a new message to go on, and an unknown id is a clear error', async () => {
    const repo = gitRepo();
    const home = keelHome();
    const server = await model([{ text: 'done' }]);
    const a = JSON.parse(
      (await keel(['ask', ...modelFlags(server), '--json', 'hi'], { cwd: repo, home })).stdout,
    );
    const again = await keel(['sessions', 'resume', a.session_id, ...modelFlags(server)], {
      cwd: repo,
      home,
    });
    expect(again.code).toBe(2);
    expect(again.stderr).toContain('give a new message');
    const unknown = await keel(['sessions', 'resume', 'nope', ...modelFlags(server)], { cwd: repo, home });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('no session matches "nope"');
    const none = await keel(['-c', ...modelFlags(server), '-m', 'x'], { cwd: gitRepo(), home });
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('no session to continue');
  });

  it('a fork at a seq keeps the prefix, diverges, and leaves its parent as it was', async () => {
    const repo = gitRepo();
    const home = keelHome();
    const server = await model([
      { text: 'answer one' },
      { text: 'answer two' },
      { text: 'the other branch' },
    ]);
    const a = JSON.parse(
      (await keel(['ask', ...modelFlags(server), '--json', 'one'], { cwd: repo, home })).stdout,
    );
    await keel(['sessions', 'resume', a.session_id, ...modelFlags(server), '--json', '-m', 'two'], {
      cwd: repo,
      home,
    });
    const parentBefore = sessionEvents(home, a.session_id);
    const firstEnd = parentBefore.find((e) => e.type === 'session_end')?.seq as number;

    const forked = await keel(['sessions', 'fork', a.session_id, '--at', String(firstEnd), '--json'], {
      cwd: repo,
      home,
    });
    expect(forked.code).toBe(0);
    const fork = JSON.parse(forked.stdout);
    expect(fork).toMatchObject({ parent_id: a.session_id, forked_seq: firstEnd });
    const run = await keel(
      ['sessions', 'resume', fork.session_id, ...modelFlags(server), '--json', '-m', 'other'],
      {
        cwd: repo,
        home,
      },
    );
    expect(JSON.parse(run.stdout)).toMatchObject({
      session_id: fork.session_id,
      summary: 'the other branch',
    });
    const third = requestMessages(chatBodies(server)[2]);
    expect(third.slice(1).map((m) => m.content)).toEqual(['one', 'answer one', 'other']);

    const forkEvents = sessionEvents(home, fork.session_id);
    expect(forkEvents.slice(0, firstEnd).map((e) => [e.type, e.data])).toEqual(
      parentBefore.slice(0, firstEnd).map((e) => [e.type, e.data]),
    );
    expect(sessionEvents(home, a.session_id)).toEqual(parentBefore);

    const listed = JSON.parse(
      (await keel(['sessions', 'list', '--json'], { cwd: repo, home })).stdout,
    ).sessions;
    expect(listed.map((s: { id: string }) => s.id)).toEqual(
      expect.arrayContaining([a.session_id, fork.session_id]),
    );
    expect(listed.find((s: { id: string }) => s.id === fork.session_id)).toMatchObject({
      parent_id: a.session_id,
      title: 'one',
      mode: 'ask',
      state: 'COMPLETED',
    });
    const tree = await keel(['sessions', 'show', fork.session_id, '--tree'], { cwd: repo, home });
    expect(tree.stdout.split('\n')[0]).toContain(a.session_id);
    expect(tree.stdout).toMatch(new RegExp(`└─ ${fork.session_id}.*fork @${firstEnd}`));

    const past = await keel(['sessions', 'fork', a.session_id, '--at', '999'], { cwd: repo, home });
    expect(past.code).toBe(2);
    expect(past.stderr).toContain('past its end');
    const asJson = await keel(['sessions', 'fork', 'nope', '--json'], { cwd: repo, home });
    expect(JSON.parse(asJson.stdout)).toMatchObject({
      code: 'CONFIG_ERROR',
      exit_code: 2,
      error: expect.stringContaining('nope'),
    });
  });

  it('a sandbox that cannot start still leaves a session row, its log and an audit line', async () => {
    const repo = gitRepo();
    const home = keelHome('sandbox = "docker"\n');
    const server = await model([{ text: 'never' }]);
    const run = await keel(['edit', ...modelFlags(server), '--json', 'go'], { cwd: repo, home });
    expect(run.code).toBe(3);
    const doc = JSON.parse(run.stdout);
    expect(doc).toMatchObject({ code: 'ENVIRONMENT_ERROR' });
    expect(doc.session_id).toEqual(expect.any(String));
    const row = withLog(home, (log) => log.getSession(doc.session_id));
    expect(row).toMatchObject({ code: 'ENVIRONMENT_ERROR', mode: 'edit' });
    expect(sessionEvents(home, doc.session_id).map((e) => e.type)).toEqual(['session_start', 'session_end']);
    const tail = await keel(['audit', 'tail', '--json'], { cwd: repo, home });
    const lines = JSON.parse(tail.stdout).lines as Array<{ type: string; session_id: string; code?: string }>;
    expect(lines.filter((l) => l.session_id === doc.session_id).map((l) => [l.type, l.code])).toEqual([
      ['session_start', undefined],
      ['session_end', 'ENVIRONMENT_ERROR'],
    ]);
  });
});
