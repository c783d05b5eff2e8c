import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { SessionRow, StoredEvent } from '../../src/store/event-log.js';
import { gitRepo } from '../helpers/tmp.js';
import {
  catalogueOf,
  chatBodies,
  keel,
  keelHome,
  model,
  modelFlags,
  offeredTools,
  requestMessages,
  withEventLog,
} from './harness.js';

const usage = (p: number, c: number) => ({ usage: { prompt_tokens: p, completion_tokens: c } });
const call = (name: string, args: Record<string, unknown>, id?: string) => ({
  name,
  arguments: args,
  ...(id ? { id } : {}),
});

const sessions = (home: string): SessionRow[] => withEventLog(home, (log) => log.listSessions(50));
const eventsOf = (home: string, id: string): StoredEvent[] => withEventLog(home, (log) => log.events(id));

/** The request bodies a session's task sent, in order. */
function bodiesFor(server: Parameters<typeof chatBodies>[0], task: string): unknown[] {
  return chatBodies(server).filter((b) =>
    String(requestMessages(b).find((m) => m.role === 'user')?.content ?? '').includes(task),
  );
}

describe('subagents', () => {
  it('a child runs under a narrowed policy, reports back as a tool result, and is in the log, the tree and the audit chain', async () => {
    const repo = gitRepo({ 'sub/.keep': '' });
    const home = keelHome('[pricing."test-model"]\ninput_per_mtok = 1000\noutput_per_mtok = 1000\n');
    const server = await model([
      {
        task: 'PARENT',
        tool_calls: [
          call('spawn_agent', { task: 'CHILD one: write sub/b.txt', name: 'helper', scope: ['sub'] }),
        ],
        ...usage(100, 10),
      },
      {
        task: 'CHILD one',
        tool_calls: [call('write_file', { path: 'sub/b.txt', content: 'b\n' })],
        ...usage(50, 5),
      },
      { task: 'CHILD one', text: 'wrote sub/b.txt', ...usage(50, 5) },
      { task: 'PARENT', tool_calls: [call('wait_agent', { names: ['helper'] })], ...usage(100, 10) },
      {
        task: 'PARENT',
        text: 'The helper wrote it.',
        expect: { last_tool_result_contains: 'wrote sub/b.txt' },
        ...usage(100, 10),
      },
    ]);
    const run = await keel(['edit', ...modelFlags(server), '--json', 'PARENT: delegate the file'], {
      cwd: repo,
      home,
    });
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const doc = JSON.parse(run.stdout);
    expect(doc.summary).toBe('The helper wrote it.');
    expect(readFileSync(join(repo, 'sub/b.txt'), 'utf8')).toBe('b\n');
    // the child's spending counts for its parent: 3 parent turns and 2 child turns
    expect(doc.tokens).toMatchObject({ input: 400, output: 40 });
    expect(doc.cost_usd).toBeCloseTo(0.44, 6);

    const child = sessions(home).find((s) => s.parent_id === doc.session_id);
    expect(child).toMatchObject({ mode: 'edit', code: 'COMPLETED', prompt: 'CHILD one: write sub/b.txt' });
    const childEvents = eventsOf(home, child?.id as string);
    expect(childEvents[0]).toMatchObject({ type: 'session_start', data: { scope: ['sub'] } });
    expect(childEvents.filter((e) => e.type === 'session_end')).toHaveLength(1);
    // the parent's gate granted a policy one level deep; the parent's log says which child it started
    const spawned = eventsOf(home, doc.session_id).find(
      (e) => e.type === 'tool_result' && e.data.tool === 'spawn_agent',
    );
    expect(String(spawned?.data.output)).toContain(child?.id as string);

    const tree = await keel(['sessions', 'show', doc.session_id, '--tree'], { cwd: repo, home });
    expect(tree.stdout).toMatch(new RegExp(`└─ ${child?.id}\\s+edit\\s+COMPLETED`));
    const audit = JSON.parse(
      (await keel(['audit', 'tail', '-n', '200', '--json'], { cwd: repo, home })).stdout,
    ).lines as Array<{ type: string; session_id: string }>;
    expect(audit.filter((l) => l.session_id === child?.id).map((l) => l.type)).toEqual(
      expect.arrayContaining(['session_start', 'gate_decision', 'tool_start', 'tool_result', 'session_end']),
    );
    const verify = await keel(['audit', 'verify'], { cwd: repo, home });
    expect(verify.code).toBe(0);
  });

  it('limits hold: max_running refuses a second child, max_depth leaves the deepest without spawn_agent, and ending the parent cancels a running child', async () => {
    const repo = gitRepo();
    const home = keelHome('[agents]\nmax_running = 1\nmax_depth = 1\n');
    const server = await model([
      { task: 'PARENT', tool_calls: [call('spawn_agent', { task: 'CHILD slow', name: 'slow' })] },
      { task: 'PARENT', tool_calls: [call('spawn_agent', { task: 'CHILD second', name: 'second' })] },
      {
        task: 'PARENT',
        text: 'leaving the slow one',
        expect: { last_tool_result_contains: 'max_running = 1' },
      },
      // the child's answer takes long: its parent ends first
      { task: 'CHILD slow', text: 'too late', delay_ms: 20_000 },
    ]);
    const run = await keel(['ask', ...modelFlags(server), '--json', 'PARENT: spawn two'], {
      cwd: repo,
      home,
    });
    expect(run.code).toBe(0);
    expect(run.ms).toBeLessThan(15_000);
    const doc = JSON.parse(run.stdout);
    const children = sessions(home).filter((s) => s.parent_id === doc.session_id);
    expect(children.map((c) => [c.prompt, c.code])).toEqual([['CHILD slow', 'CANCELLED']]);
    const [childBody] = bodiesFor(server, 'CHILD slow');
    expect(offeredTools(childBody)).not.toContain('agent');
    expect(catalogueOf(childBody)).not.toContain('agent');
    const [parentBody] = bodiesFor(server, 'PARENT');
    expect(catalogueOf(parentBody)).toContain('agent');
  });

  it('agents.max_depth = 0 offers no subagent tools at all (and their prompt tokens are saved)', async () => {
    const repo = gitRepo();
    const server = await model([{ text: 'ok' }, { text: 'ok' }]);
    await keel(['ask', ...modelFlags(server), 'hi'], { cwd: repo, home: keelHome() });
    await keel(['ask', ...modelFlags(server), 'hi'], {
      cwd: repo,
      home: keelHome('[agents]\nmax_depth = 0\n'),
    });
    const [withAgents, without] = chatBodies(server);
    expect(catalogueOf(withAgents)).toContain('agent');
    expect(catalogueOf(without)).toEqual(catalogueOf(withAgents).filter((name) => name !== 'agent'));
    expect(offeredTools(without)).toEqual(offeredTools(withAgents));
    expect(offeredTools(without)).toContain('read_file');
  });

  it('Ctrl+C on the parent ends its children, each with its own terminal code in the log', async () => {
    const repo = gitRepo();
    const home = keelHome();
    const server = await model([
      { task: 'PARENT', tool_calls: [call('spawn_agent', { task: 'CHILD hang', name: 'hang' })] },
      { task: 'PARENT', tool_calls: [call('wait_agent', { timeout_s: 60 })] },
      { task: 'CHILD hang', hang: true },
    ]);
    let child: ChildProcess | undefined;
    const running = keel(['ask', ...modelFlags(server), '--json', 'PARENT: wait forever'], {
      cwd: repo,
      home,
      onSpawn: (c) => (child = c),
    });
    for (let i = 0; i < 200 && bodiesFor(server, 'CHILD hang').length === 0; i++)
      await new Promise((r) => setTimeout(r, 50));
    // the parent is inside wait_agent by now, or about to be
    await new Promise((r) => setTimeout(r, 300));
    child?.kill('SIGINT');
    const run = await running;
    const doc = JSON.parse(run.stdout);
    expect(doc.code).toBe('CANCELLED');
    const [kid] = sessions(home).filter((s) => s.parent_id === doc.session_id);
    expect(kid?.code).toBe('CANCELLED');
    expect(eventsOf(home, kid?.id as string).filter((e) => e.type === 'session_end')).toHaveLength(1);
  });

  it('send_message reaches a running child before its next step', async () => {
    const repo = gitRepo();
    const home = keelHome();
    mkdirSync(join(repo, 'x'), { recursive: true });
    const server = await model([
      { task: 'PARENT', tool_calls: [call('spawn_agent', { task: 'CHILD listen', name: 'kid' })] },
      { task: 'PARENT', tool_calls: [call('send_message', { name: 'kid', text: 'also check x/' })] },
      { task: 'PARENT', tool_calls: [call('wait_agent', {})] },
      { task: 'PARENT', text: 'done', expect: { last_tool_result_contains: 'heard: also check x/' } },
      // the child's first answer waits long enough for the message to arrive, then it reads its inbox
      { task: 'CHILD listen', tool_calls: [call('list_dir', { path: '.' })], delay_ms: 1500 },
      { task: 'CHILD listen', text: 'heard: also check x/', expect: { last_user_contains: 'also check x/' } },
    ]);
    const run = await keel(['ask', ...modelFlags(server), '--json', 'PARENT: steer'], { cwd: repo, home });
    expect(run.stderr).toBe('');
    expect(JSON.parse(run.stdout)).toMatchObject({ code: 'COMPLETED', summary: 'done' });
    expect(existsSync(join(repo, 'x'))).toBe(true);
  });
});
