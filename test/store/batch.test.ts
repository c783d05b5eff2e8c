import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openStore } from '../../src/store/engine.js';
import { LEASE_MS, RunQueue } from '../../src/store/queue.js';
import { fixtureRepo } from '../e2e/fix-harness.js';
import { keel } from '../e2e/harness.js';
import { freshPgDatabase } from '../helpers/pg.js';
import { git, tempDir } from '../helpers/tmp.js';
import { line, mostRunning, pgrep, scriptedHome, TURNS } from './batch-harness.js';

const pgUrl = await freshPgDatabase();

describe('keel batch', () => {
  it('runs one worker per task under the cap; a missing repo and a folder that is not git fail alone', async () => {
    const home = scriptedHome();
    const dir = tempDir('keel-batch-');
    const notGit = join(dir, 'plain');
    mkdirSync(notGit);
    const repos = [fixtureRepo('stats'), fixtureRepo('stats'), fixtureRepo('stats')];
    const file = join(dir, 'tasks.jsonl');
    writeFileSync(
      file,
      [
        ...repos.map((repo, i) =>
          line({ id: `mean-${i}`, repo, issue: 'mean() of [2, 4, 6] returns 3, not 4' }),
        ),
        line({ id: 'gone', repo: 'no-such-repo', issue: 'x' }),
        line({ id: 'plain', repo: 'plain', issue: 'x' }),
      ].join(''),
    );
    const run = await keel(['batch', file, '--concurrency', '2', '--run-id', 'night-1', '--json'], {
      cwd: dir,
      home,
      timeoutMs: 120_000,
    });
    expect(run.code, run.stderr).toBe(1);
    const doc = JSON.parse(run.stdout);
    expect(doc).toMatchObject({ run_id: 'night-1', end: 'failed', exit_code: 1, concurrency: 2 });
    const byId = Object.fromEntries(
      (doc.tasks as Array<{ id: string; state: string; result: { error?: string; branch?: string } }>).map(
        (t) => [t.id, t],
      ),
    );
    for (const [i, repo] of repos.entries()) {
      expect(byId[`mean-${i}`]?.state).toBe('done');
      const branch = byId[`mean-${i}`]?.result.branch ?? '';
      expect(git(repo, 'show', `${branch}:src/stats.js`)).toContain('/ values.length;');
    }
    expect(byId.gone?.result.error).toBe(`repo ${join(dir, 'no-such-repo')} does not exist`);
    expect(byId.plain?.result.error).toBe(`repo ${notGit} is not a git repository`);
    // the cap, proved from the run's journal as well as held by the database
    const store = await openStore({ engine: 'sqlite', path: join(home, 'keel.db') });
    try {
      const journal = await new RunQueue(store).events('night-1');
      expect(mostRunning(journal)).toBe(2);
      expect(journal.filter((e) => e.type === 'claimed')).toHaveLength(5);
    } finally {
      await store.close();
    }
    // every worker's model calls are in the ledger, by task: plan (2) and one attempt (2) each
    const ledger = JSON.parse((await keel(['ledger', 'night-1', '--json'], { cwd: dir, home })).stdout);
    const calls = ledger.calls as Array<{
      task_id: string;
      session_id: string;
      model: string;
      cost_source: string;
    }>;
    expect(calls.map((c) => c.task_id).sort()).toEqual(
      ['mean-0', 'mean-1', 'mean-2'].flatMap((id) => [id, id, id, id]),
    );
    expect(new Set(calls.map((c) => `${c.model} ${c.cost_source}`))).toEqual(new Set(['scripted unknown']));
    expect(new Set(calls.map((c) => c.session_id)).size).toBe(6); // a plan and an attempt session per task
    const status = await keel(['batch', 'status', 'night-1', '--json'], { cwd: dir, home });
    expect(status.code).toBe(1);
    const statusDoc = JSON.parse(status.stdout);
    expect(statusDoc.counts).toEqual({ queued: 0, running: 0, done: 3, failed: 2, cancelled: 0 });
    expect(statusDoc.progress).toMatchObject({ eta_s: 0, calls: 12, cost_usd: 0, unknown_cost_calls: 12 });
    const statusText = await keel(['batch', 'status', 'night-1'], { cwd: dir, home });
    expect(statusText.stdout).toContain('[####################] 5/5 ended · 0 running · ');
    expect(statusText.stdout).toContain('ETA 0 s · $0.0000 (+ 12 calls of unknown cost)');
    // the same run id again resumes the finished run: nothing is redone
    const again = await keel(['batch', file, '--run-id', 'night-1', '--json'], { cwd: dir, home });
    expect(JSON.parse(again.stdout).counts.done).toBe(3);
    const cancel = await keel(['batch', 'cancel', 'night-1', '--json'], { cwd: dir, home });
    expect(JSON.parse(cancel.stdout)).toEqual({ run_id: 'night-1', cancelled: true });
  }, 180_000);

  it('refuses a tasks file with an unknown key, a duplicate id or bad JSON before anything starts', async () => {
    const home = scriptedHome();
    const dir = tempDir('keel-batch-');
    const repo = fixtureRepo('stats');
    const cases: Array<[string, string, string]> = [
      [
        'unknown.jsonl',
        line({ id: 'a', repo, issue: 'x', tests: 'npm test' }),
        'unknown.jsonl: line 1: unknown key "tests"',
      ],
      [
        'twice.jsonl',
        line({ id: 'a', repo, issue: 'x' }) + line({ id: 'a', repo, issue: 'y' }),
        'twice.jsonl: line 2: task id "a" is used twice (first at',
      ],
      ['broken.json', '[{"id": "a",', 'broken.json: invalid JSON'],
      ['empty.jsonl', '\n', 'empty.jsonl: no tasks'],
    ];
    for (const [name, text, message] of cases) {
      writeFileSync(join(dir, name), text);
      const run = await keel(['batch', join(dir, name)], { cwd: dir, home });
      expect(run.code, name).toBe(2);
      expect(run.stderr).toContain(message);
    }
    const unreadable = await keel(['batch', join(dir, 'nope.jsonl')], { cwd: dir, home });
    expect(unreadable.code).toBe(2);
    expect(unreadable.stderr).toContain(`cannot read tasks file ${join(dir, 'nope.jsonl')}`);
    // nothing was queued
    const status = await keel(['batch', 'status', '--json'], { cwd: dir, home });
    expect(JSON.parse(status.stdout).runs).toEqual([]);
  });

  it.each([
    { engine: 'sqlite', env: {} as Record<string, string> },
    // without a PostgreSQL server this case is left out (KEEL_TEST_PG=require makes that an error)
    ...(pgUrl ? [{ engine: 'postgres', env: { KEEL_STORE: pgUrl } }] : []),
  ])(
    'on $engine, a provider that refuses the key pauses the run (exit 4); the same run id finishes it once it answers',
    async ({ env }) => {
      const script = join(tempDir('keel-script-'), 'script.json');
      const home = scriptedHome(script, [
        { error: { status: 401, body: '{"error":{"message":"invalid api key"}}' } },
      ]);
      const dir = tempDir('keel-batch-');
      const file = join(dir, 'tasks.json');
      const repos = [fixtureRepo('stats'), fixtureRepo('stats')];
      writeFileSync(
        file,
        JSON.stringify(repos.map((repo, i) => ({ id: `t${i}`, repo, issue: 'mean() is wrong' }))),
      );
      const args = ['batch', file, '--concurrency', '1', '--run-id', 'pv', '--json'];
      const paused = await keel(args, { cwd: dir, home, env, timeoutMs: 60_000 });
      expect(paused.code, paused.stderr).toBe(4);
      const doc = JSON.parse(paused.stdout);
      expect(doc).toMatchObject({
        end: 'paused_provider',
        status: 'paused_provider',
        counts: { queued: 2, done: 0 },
      });
      expect(doc.reason).toContain('HTTP 401');
      const status = await keel(['batch', 'status', 'pv'], { cwd: dir, home, env });
      expect(status.code).toBe(4);
      expect(status.stdout).toContain('paused_provider');
      // the provider answers again: the same command resumes and finishes the run
      writeFileSync(script, JSON.stringify({ turns: TURNS }));
      const resumed = await keel(args, { cwd: dir, home, env, timeoutMs: 120_000 });
      expect(resumed.code, resumed.stderr).toBe(0);
      expect(JSON.parse(resumed.stdout)).toMatchObject({
        end: 'verified',
        status: 'running',
        counts: { done: 2 },
      });
      const tasks = JSON.parse(resumed.stdout).tasks as Array<{ attempts: number }>;
      expect(tasks.map((t) => t.attempts)).toEqual([2, 1]); // t0 was given back once, then done
    },
    200_000,
  );

  it('cancel: running workers stop, nothing new starts, and the supervisor exits 130', async () => {
    const home = scriptedHome(undefined, [{ hang: true }]);
    const dir = tempDir('keel-batch-');
    const file = join(dir, 'tasks.jsonl');
    const repos = [fixtureRepo('stats'), fixtureRepo('stats'), fixtureRepo('stats')];
    writeFileSync(
      file,
      repos.map((repo, i) => line({ id: `h${i}`, repo, issue: 'mean() is wrong' })).join(''),
    );
    const supervisor = keel(['batch', file, '--concurrency', '2', '--run-id', 'c1', '--json'], {
      cwd: dir,
      home,
      timeoutMs: 90_000,
    });
    // wait until both workers' fixes run (their model calls hang)
    let workers: number[] = [];
    while (workers.length < 2) {
      await new Promise((r) => setTimeout(r, 300));
      workers = pgrep(`keel.js fix --repo (${repos[0]}|${repos[1]}) `);
    }
    const cancel = await keel(['batch', 'cancel', 'c1'], { cwd: dir, home });
    expect(cancel.stdout).toContain('batch c1: cancelled');
    const run = await supervisor;
    expect(run.code, run.stderr).toBe(130);
    expect(JSON.parse(run.stdout)).toMatchObject({
      end: 'cancelled',
      counts: { cancelled: 3, running: 0, queued: 0 },
    });
    // the workers are gone
    for (const pid of workers) expect(() => process.kill(pid, 0)).toThrow();
  }, 120_000);

  it('a SIGKILLed supervisor loses nothing: its workers finish, a killed worker’s task is requeued, keel batch resume completes the run', async () => {
    const slowPlan = [{ ...TURNS[0], delay_ms: 3_000 }, ...TURNS.slice(1)];
    const home = scriptedHome(undefined, slowPlan);
    const dir = tempDir('keel-batch-');
    const file = join(dir, 'tasks.jsonl');
    const repos = [fixtureRepo('stats'), fixtureRepo('stats'), fixtureRepo('stats')];
    writeFileSync(
      file,
      repos.map((repo, i) => line({ id: `k${i}`, repo, issue: 'mean() is wrong' })).join(''),
    );
    const args = ['batch', file, '--concurrency', '2', '--run-id', 'k', '--json'];
    let supervisorPid = 0;
    const first = keel(args, {
      cwd: dir,
      home,
      timeoutMs: 90_000,
      onSpawn: (child) => {
        supervisorPid = child.pid ?? 0;
      },
    });
    for (;;) {
      const status = await keel(['batch', 'status', 'k', '--json'], { cwd: dir, home });
      if (status.code !== 2 && JSON.parse(status.stdout).counts.running === 2) break;
      await new Promise((r) => setTimeout(r, 300));
    }
    process.kill(supervisorPid, 'SIGKILL');
    let worker: number[] = [];
    while (!worker.length) {
      worker = pgrep('batch worker k k0 1');
      if (!worker.length) await new Promise((r) => setTimeout(r, 100));
    }
    for (const pid of worker) process.kill(pid, 'SIGKILL');
    expect((await first).signal).toBe('SIGKILL');
    // `keel batch resume` goes on from the queue alone, without the tasks file
    const resumed = await keel(['batch', 'resume', 'k', '--json'], { cwd: dir, home, timeoutMs: 120_000 });
    expect(resumed.code, resumed.stderr).toBe(0);
    const doc = JSON.parse(resumed.stdout);
    expect(doc.counts).toEqual({ queued: 0, running: 0, done: 3, failed: 0, cancelled: 0 });
    // k0's worker died: its lease expired and a second attempt did it; k1's worker outlived the supervisor
    expect((doc.tasks as Array<{ id: string; attempts: number }>).map((t) => [t.id, t.attempts])).toEqual([
      ['k0', 2],
      ['k1', 1],
      ['k2', 1],
    ]);
  }, 180_000);

  it('a worker slower to start than its lease keeps its attempt (the supervisor holds the lease); one killed while starting is requeued', async () => {
    const home = scriptedHome();
    const dir = tempDir('keel-batch-');
    const file = join(dir, 'tasks.jsonl');
    const issue = 'mean() of [2, 4, 6] returns 3, not 4';
    writeFileSync(
      file,
      line({ id: 'slow', repo: fixtureRepo('stats'), issue }) +
        line({ id: 'dies', repo: fixtureRepo('stats'), issue }),
    );
    // each first attempt's worker starts LEASE_MS + 3 s late (the test hook), as on a loaded machine
    const supervisor = keel(['batch', file, '--concurrency', '2', '--run-id', 'slow-start', '--json'], {
      cwd: dir,
      home,
      env: { KEEL_FAULT_WORKER_START_DELAY_MS: String(LEASE_MS + 3_000) },
      timeoutMs: 120_000,
    });
    let dying: number[] = [];
    while (!dying.length) {
      await new Promise((r) => setTimeout(r, 200));
      dying = pgrep('batch worker slow-start dies 1');
    }
    for (const pid of dying) process.kill(pid, 'SIGKILL');
    const run = await supervisor;
    expect(run.code, run.stderr).toBe(0);
    // the slow worker's first attempt finished its task; the dead one's lease expired (no one held it)
    expect(JSON.parse(run.stdout).tasks).toMatchObject([
      { id: 'slow', state: 'done', attempts: 1 },
      { id: 'dies', state: 'done', attempts: 2 },
    ]);
  }, 150_000);

  it('a SIGKILLed worker leaves no fix running, and the supervisor requeues its task once the lease expires', async () => {
    const script = join(tempDir('keel-script-'), 'script.json');
    const home = scriptedHome(script, [{ hang: true }]);
    const dir = tempDir('keel-batch-');
    const repo = fixtureRepo('stats');
    const file = join(dir, 'tasks.jsonl');
    writeFileSync(file, line({ id: 'w0', repo, issue: 'mean() is wrong' }));
    const supervisor = keel(['batch', file, '--run-id', 'w', '--json'], {
      cwd: dir,
      home,
      timeoutMs: 90_000,
    });
    const alive = (pid: number) => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    };
    // the worker runs, and its fix hangs in its first model call
    let fix: number[] = [];
    while (!fix.length) {
      await new Promise((r) => setTimeout(r, 300));
      fix = pgrep(`keel.js fix --repo ${repo}`);
    }
    for (const pid of pgrep('batch worker w w0 1')) process.kill(pid, 'SIGKILL');
    // the hanging fix does not outlive its worker
    while (fix.some(alive)) await new Promise((r) => setTimeout(r, 200));
    // the provider answers now: the supervisor requeues the task after its lease and finishes it
    writeFileSync(script, JSON.stringify({ turns: TURNS }));
    const run = await supervisor;
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout).tasks).toMatchObject([{ id: 'w0', state: 'done', attempts: 2 }]);
  }, 120_000);
});
