/**
 * `keel batch`: a worker SIGKILLed while its fix waits for the model leaves the task to its next attempt,
 * which goes on with the same fix run from its log (issue 27): the orphaned fix is stopped first, the
 * request it never heard back for is sent again and marked re-issued in the ledger, and no call or effect
 * of the killed attempt is made twice.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ScriptTurn } from '../../src/model/script.js';
import { openDb } from '../../src/store/db.js';
import { openStore } from '../../src/store/engine.js';
import { EventLog } from '../../src/store/event-log.js';
import { RunQueue } from '../../src/store/queue.js';
import { fixtureRepo } from '../e2e/fix-harness.js';
import { keel, keelHome, model } from '../e2e/harness.js';
import { git, tempDir } from '../helpers/tmp.js';
import { alive, BUGGY_DIVISOR, line, pgrep } from './batch-harness.js';

const TURNS: ScriptTurn[] = [
  { text: '1. mean divides by one too many.\n2. Divide by values.length.' },
  {
    tool_calls: [
      {
        name: 'edit_file',
        arguments: {
          path: 'src/stats.js',
          old_string: BUGGY_DIVISOR,
          new_string: '  return sum(values) / values.length;',
        },
      },
    ],
  },
  { tool_calls: [{ name: 'shell', arguments: { command: "printf 'ran\\n' >> NOTES.txt" } }] },
  // the killed attempt's last request is held here, unanswered; the resumed attempt's gets the next turn
  { text: 'never heard', delay_ms: 120_000 },
  { text: 'mean now divides by the length.' },
];

describe('keel batch: a killed worker’s task', () => {
  it('resumes its fix from the log: the orphaned fix is stopped, nothing is redone, the lost request is re-issued', async () => {
    const server = await model(TURNS);
    const home = keelHome(`provider = "openai"\nbase_url = "${server.url}"\nmodel = "test-model"\n`);
    const dir = tempDir('keel-batch-');
    const repo = fixtureRepo('stats');
    const file = join(dir, 'tasks.jsonl');
    writeFileSync(file, line({ id: 'r0', repo, issue: 'mean() of [2, 4, 6] returns 3, not 4' }));
    const supervisor = keel(['batch', file, '--run-id', 'res', '--json'], {
      cwd: dir,
      home,
      timeoutMs: 120_000,
    });
    // wait until the attempt's fix has sent its last request (after the shell command ran)
    const db = () => new EventLog(openDb(join(home, 'keel.db')));
    let fixRun = '';
    for (;;) {
      await new Promise((r) => setTimeout(r, 300));
      const store = await openStore({ engine: 'sqlite', path: join(home, 'keel.db') }).catch(() => undefined);
      if (!store) continue;
      const started = (await new RunQueue(store).events('res').catch(() => [])).find(
        (e) => e.type === 'fix_started',
      );
      await store.close();
      if (!started) continue;
      fixRun = String(started.data.fix_run);
      const log = db();
      const requests = log
        .childSessions(fixRun)
        .flatMap((s) => log.events(s.id))
        .filter((e) => e.type === 'model_request');
      if (requests.length === 4) break;
    }
    const fixPids = pgrep(`keel.js fix --repo ${repo}`);
    expect(fixPids.length).toBe(1);
    for (const pid of pgrep('batch worker res r0 1')) process.kill(pid, 'SIGKILL');
    const run = await supervisor;
    expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(0);
    expect(JSON.parse(run.stdout).tasks).toMatchObject([{ id: 'r0', state: 'done', attempts: 2 }]);
    // the orphan of the killed worker was stopped before the resumed fix touched its worktree
    expect(fixPids.filter(alive)).toEqual([]);

    const store = await openStore({ engine: 'sqlite', path: join(home, 'keel.db') });
    try {
      const started = (await new RunQueue(store).events('res')).filter((e) => e.type === 'fix_started');
      expect(started.map((e) => [e.attempt, e.data.fix_run, e.data.resumed ?? false])).toEqual([
        [1, fixRun, false],
        [2, fixRun, true],
      ]);
    } finally {
      await store.close();
    }
    // one verified branch, the shell's append made once
    const branch = String(JSON.parse(run.stdout).tasks[0].result.branch);
    expect(git(repo, 'show', `${branch}:NOTES.txt`)).toBe('ran\n');
    expect(git(repo, 'show', `${branch}:src/stats.js`)).toContain('/ values.length;');
    // every call once in the ledger: the plan, the edit, the shell, and the lost request sent again
    const ledger = JSON.parse((await keel(['ledger', 'res', '--json'], { cwd: dir, home })).stdout);
    expect((ledger.calls as Array<{ reissued: boolean }>).map((c) => c.reissued)).toEqual([
      false,
      false,
      false,
      true,
    ]);
    // the model heard five requests: four of the first attempt, the re-issued one of the second
    const asked = server.requests.filter((r) => r.path.endsWith('/chat/completions'));
    expect(asked.length).toBe(5);
  }, 180_000);

  it('a task that ended blocked_uncertain says so in batch status and report', async () => {
    const home = keelHome();
    const dir = tempDir('keel-batch-');
    const store = await openStore({ engine: 'sqlite', path: join(home, 'keel.db') });
    try {
      const queue = new RunQueue(store);
      await queue.createRun('bu', { concurrency: 1, tasks: [{ id: 't0', spec: { id: 't0' } }] });
      const lease = await queue.claim('bu', 'test');
      if (!lease) throw new Error('no task to claim');
      // what a worker writes for a fix whose JSON says blocked_uncertain (batch/worker.ts)
      await queue.finish(lease, 'failed', {
        status: 'blocked_uncertain',
        exit_code: 1,
        code: 'BLOCKED_UNCERTAIN',
        error: 'the edit_file call on src/stats.js was cut off, and the file now holds neither ...',
      });
    } finally {
      await store.close();
    }
    const status = await keel(['batch', 'status', 'bu'], { cwd: dir, home });
    expect(status.stdout).toContain('t0  blocked_uncertain  the edit_file call on src/stats.js was cut off');
    const report = JSON.parse((await keel(['batch', 'report', 'bu', '--json'], { cwd: dir, home })).stdout);
    expect(report.tasks).toMatchObject([{ id: 't0', verdict: 'blocked_uncertain' }]);
  });
});
