/**
 * A2A tasks of the real `keel serve` binary over time: the fix skill is a verified `keel fix` run,
 * tasks are still there after the server restarts (and the ones it was running when killed say
 * so), and an approval the timeout denies puts the task back to working and on to its end.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ListTasksRequest, Message, type Task, TaskState } from '@a2a-js/sdk';
import type { Client } from '@a2a-js/sdk/client';
import { describe, expect, it } from 'vitest';
import { git, gitRepo } from '../helpers/tmp.js';
import { a2aClient, asTask, textOf } from './a2a-harness.js';
import { editTurns, fixtureRepo, planTurns } from './fix-harness.js';
import { keelHome, model, modelFlags } from './harness.js';
import { startServe } from './serve-harness.js';

const TOKEN = 'a2a-serve-token-for-tests';

const clientFor = (port: number) => a2aClient(`http://127.0.0.1:${port}`, TOKEN);

const send = (text: string, skill?: string) => ({
  tenant: '',
  message: Message.fromJSON({
    messageId: randomUUID(),
    role: 'ROLE_USER',
    parts: [{ text }],
    ...(skill ? { metadata: { skill } } : {}),
  }),
  configuration: undefined,
  metadata: undefined,
});

/** GetTask until the task is in `state` (or the time is up); the last task read. */
async function waitFor(client: Client, id: string, state: TaskState, ms = 60_000): Promise<Task> {
  let task = await client.getTask({ tenant: '', id });
  for (const end = Date.now() + ms; task.status?.state !== state && Date.now() < end; ) {
    await new Promise((r) => setTimeout(r, 150));
    task = await client.getTask({ tenant: '', id });
  }
  return task;
}

const history = (task: Task) => task.history.map((m) => textOf(m.parts)).join('\n');

describe('keel serve: A2A tasks over time', () => {
  it('the fix skill is a verified keel fix run: completed with the verdict, PR text and diff; the run is in /v1/runs', async () => {
    const repo = fixtureRepo('stats');
    const before = readFileSync(join(repo, 'src/stats.js'), 'utf8');
    const server = await model([
      ...planTurns('src/stats.js', '1. mean divides by one too many.'),
      ...editTurns(
        'src/stats.js',
        '  return sum(values) / (values.length + 1);',
        '  return sum(values) / values.length;',
        'mean now divides by the length.',
      ),
    ]);
    const s = await startServe({
      cwd: repo,
      home: keelHome(),
      args: modelFlags(server),
      env: { KEEL_SERVE_TOKEN: TOKEN },
    });
    const client = await clientFor(s.port);
    const sent = asTask(await client.sendMessage(send('mean() of [2, 4, 6] returns 3, not 4', 'fix')));
    const done = await waitFor(client, sent.id, TaskState.TASK_STATE_COMPLETED);
    expect(done.status?.state, textOf(done.status?.message?.parts)).toBe(TaskState.TASK_STATE_COMPLETED);
    const artifact = done.artifacts[0];
    expect(artifact?.name).toBe('verified fix');
    expect(textOf(artifact?.parts)).toMatch(/^verified after 1 attempt on branch keel\/fix-/);
    // the verdict sentence is said once
    expect(
      textOf(artifact?.parts)
        .split('\n')[0]
        ?.match(/verified/g),
    ).toHaveLength(1);
    expect(textOf(artifact?.parts)).toContain('+  return sum(values) / values.length;');
    const runId = artifact?.metadata?.run_id as string;
    expect(artifact?.metadata).toMatchObject({ verdict: 'verified', attempts: 1 });
    // the run is keel's own: listed with its verdict, its branch holds the fix, the checkout is untouched
    const run = await s.api('GET', `/v1/runs/${runId}`);
    expect(run.body).toMatchObject({ run_id: runId, status: 'verified', attempts: 1 });
    const branch = artifact?.metadata?.branch as string;
    expect(git(repo, 'show', `${branch}:src/stats.js`)).toContain('/ values.length;');
    expect(readFileSync(join(repo, 'src/stats.js'), 'utf8')).toBe(before);
  }, 120_000);

  it('a fix the tests do not verify is failed, with its report', async () => {
    const repo = fixtureRepo('stats');
    const server = await model([
      ...planTurns('src/stats.js', '1. Rename a variable.'),
      ...editTurns('src/stats.js', 'values.length + 1', 'values.length + 1 ', 'Fixed it, all tests pass.'),
    ]);
    const s = await startServe({
      cwd: repo,
      home: keelHome(),
      args: modelFlags(server),
      env: { KEEL_SERVE_TOKEN: TOKEN },
    });
    const client = await clientFor(s.port);
    const sent = asTask(await client.sendMessage(send('mean() of [2, 4, 6] returns 3, not 4', 'fix')));
    const done = await waitFor(client, sent.id, TaskState.TASK_STATE_FAILED);
    expect(done.status?.state).toBe(TaskState.TASK_STATE_FAILED);
    expect(textOf(done.status?.message?.parts)).toMatch(/^[A-Z_]+: /);
    expect(done.artifacts[0]?.metadata).toMatchObject({ verdict: 'not verified' });
    expect(textOf(done.artifacts[0]?.parts)).toMatch(/^not verified after \d attempts?/);
  }, 180_000);

  it('canceling a fix task cancels its run: the task is canceled and so is the run', async () => {
    const repo = fixtureRepo('stats');
    const server = await model([{ hang: true }]);
    const s = await startServe({
      cwd: repo,
      home: keelHome(),
      args: modelFlags(server),
      env: { KEEL_SERVE_TOKEN: TOKEN },
    });
    const client = await clientFor(s.port);
    let taskId = '';
    let runId = '';
    for await (const event of client.sendMessageStream(send('mean() is wrong', 'fix'))) {
      if (event.payload?.$case === 'task') taskId = event.payload.value.id;
      const status = event.payload?.$case === 'statusUpdate' ? event.payload.value : undefined;
      if (typeof status?.metadata?.run_id === 'string') {
        runId = status.metadata.run_id;
        break;
      }
    }
    // the run's plan request is held by the model before the cancel
    for (let i = 0; i < 200 && !server.requests.some((r) => r.path.endsWith('/chat/completions')); i++)
      await new Promise((r) => setTimeout(r, 100));
    const canceled = await client.cancelTask({ tenant: '', id: taskId, metadata: undefined });
    expect(canceled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    let run = (await s.api('GET', `/v1/runs/${runId}`)).body;
    for (let i = 0; i < 100 && run.status === 'running'; i++) {
      await new Promise((r) => setTimeout(r, 100));
      run = (await s.api('GET', `/v1/runs/${runId}`)).body;
    }
    expect(run).toMatchObject({ run_id: runId, status: 'failed', code: 'CANCELLED' });
  }, 90_000);

  it('tasks outlive a restart; one the killed server was running is failed with its session to resume', async () => {
    const repo = gitRepo();
    const home = keelHome();
    const server = await model([
      { task: 'first', text: 'Answered before the restart.' },
      { task: 'second', hang: true },
    ]);
    const args = modelFlags(server);
    const env = { KEEL_SERVE_TOKEN: TOKEN };
    const first = await startServe({ cwd: repo, home, args, env });
    let client = await clientFor(first.port);
    const answered = asTask(await client.sendMessage(send('first')));
    expect(answered.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    let hanging = '';
    for await (const event of client.sendMessageStream(send('second'))) {
      if (event.payload?.$case === 'task') hanging = event.payload.value.id;
      const status = event.payload?.$case === 'statusUpdate' ? event.payload.value : undefined;
      if (status?.metadata?.session_id) break;
    }
    for (
      let i = 0;
      i < 100 && server.requests.filter((r) => r.path.endsWith('/chat/completions')).length < 2;
      i++
    )
      await new Promise((r) => setTimeout(r, 100));
    first.child.kill('SIGKILL');
    await first.stop();

    const second = await startServe({ cwd: repo, home, args, env });
    expect(second.stderr()).toContain('1 A2A task left unfinished by a stopped server is marked failed');
    client = await clientFor(second.port);
    const kept = await client.getTask({ tenant: '', id: answered.id });
    expect(kept.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(textOf(kept.artifacts[0]?.parts)).toBe('Answered before the restart.');
    const lost = await client.getTask({ tenant: '', id: hanging });
    expect(lost.status?.state).toBe(TaskState.TASK_STATE_FAILED);
    const why = textOf(lost.status?.message?.parts);
    expect(why).toContain('the server stopped while this task ran');
    expect(why).toMatch(/keel sessions resume \d/);
    const listed = await client.listTasks(ListTasksRequest.fromJSON({ pageSize: 10 }));
    expect(listed.tasks.map((t) => t.id).sort()).toEqual([answered.id, hanging].sort());
  }, 90_000);

  it('an approval the timeout denies puts the task back to working, and it goes on to complete', async () => {
    const repo = gitRepo({ 'src/app.js': 'export const answer = 41;\n' });
    const server = await model([
      {
        tool_calls: [
          { name: 'edit_file', arguments: { path: 'src/app.js', old_string: '41', new_string: '42' } },
        ],
      },
      { text: 'The edit was not approved; nothing changed.' },
    ]);
    const home = keelHome('approvals = "writes"\n');
    const s = await startServe({
      cwd: repo,
      home,
      args: [...modelFlags(server), '--approval-timeout', '1'],
      env: { KEEL_SERVE_TOKEN: TOKEN },
    });
    const client = await clientFor(s.port);
    const asked = asTask(await client.sendMessage(send('make it 42', 'edit')));
    expect(asked.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    // no one answers: the timeout says no, and the task ends as the session does
    const done = await waitFor(client, asked.id, TaskState.TASK_STATE_COMPLETED, 30_000);
    expect(done.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(history(done)).toContain('the question about edit_file was denied: no one answered within 1 s');
    expect(textOf(done.artifacts[0]?.parts)).toContain('nothing changed');
    expect(readFileSync(join(repo, 'src/app.js'), 'utf8')).toBe('export const answer = 41;\n');
  }, 60_000);
});
