/**
 * Issue 27, end to end: 20 tasks on 4 shared repositories at concurrency 5, with workers and the
 * supervisor SIGKILLed at random (then `keel batch resume`), on each engine. A failure prints its seed:
 * KEEL_CHAOS_SEED=<seed> replays the same choices (the timing of a loaded machine still varies).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openStore, type Store } from '../../src/store/engine.js';
import type { QueueEvent } from '../../src/store/queue.js';
import { fixtureRepo } from '../e2e/fix-harness.js';
import { type KeelRun, keel, keelHome } from '../e2e/harness.js';
import { freshPgDatabase, skipReason } from '../helpers/pg.js';
import { git, tempDir } from '../helpers/tmp.js';
import {
  fixRunsOf,
  journalOf,
  leftovers,
  processesWith,
  repeatedEffects,
  writesBy,
} from './batch-chaos-helpers.js';
import { BUGGY_DIVISOR, line } from './batch-harness.js';

const TASKS = 20;
const REPOS = 4;
const CONCURRENCY = 5;
const KILLS = 6;
const SUPERVISOR_KILLS = 2;

/** The stats fix, its plan and edit a little slow (so kills land inside fixes). */
const TURNS = [
  {
    tool_calls: [{ name: 'read_file', arguments: { path: 'src/stats.js' } }],
    delay_ms: 300,
  },
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
    delay_ms: 300,
  },
  { text: 'mean now divides by the length.' },
];

/** A small seeded generator (mulberry32): the same seed, the same kills. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The most tasks holding a slot at once, from the journal (a slot is freed by finished, released or expired). */
function mostHeld(journal: QueueEvent[]): number {
  let held = 0;
  let most = 0;
  for (const e of journal) {
    if (e.type === 'claimed') held++;
    if (e.type === 'finished' || e.type === 'released' || e.type === 'expired') held--;
    most = Math.max(most, held);
  }
  return most;
}

const pgUrl = await freshPgDatabase();
const engines = [
  { name: 'sqlite', env: {} as Record<string, string>, skip: '' },
  { name: 'postgres', env: pgUrl ? { KEEL_STORE: pgUrl } : {}, skip: pgUrl ? '' : skipReason },
];

describe.each(engines)('keel batch under random SIGKILLs, on $name', ({ name, env, skip }) => {
  it.skipIf(skip !== '')(
    `every task verified, every killed task resumed, nothing left behind ${skip ? `(${skip})` : ''}`,
    async () => {
      const seed = Number(process.env.KEEL_CHAOS_SEED ?? Math.floor(Math.random() * 2 ** 31));
      console.log(`batch chaos on ${name}: KEEL_CHAOS_SEED=${seed}`);
      const rand = random(seed);
      const script = join(tempDir('keel-script-'), 'script.json');
      writeFileSync(script, JSON.stringify({ turns: TURNS }));
      const home = keelHome(`provider = "scripted"\nmodel = "scripted"\nscript = "${script}"\n`);
      const dir = tempDir('keel-batch-');
      const repos = Array.from({ length: REPOS }, () => fixtureRepo('stats'));
      const file = join(dir, 'tasks.jsonl');
      const ids = Array.from({ length: TASKS }, (_, i) => `t${i}`);
      writeFileSync(
        file,
        ids
          .map((id, i) => line({ id, repo: repos[i % REPOS], issue: 'mean() of [2, 4, 6] returns 3, not 4' }))
          .join(''),
      );
      const runId = `chaos-${name}`;
      const opts = { cwd: dir, home, env, timeoutMs: 240_000 };
      let supervisorPid = 0;
      const onSpawn = (child: { pid?: number }) => {
        supervisorPid = child.pid ?? 0;
      };
      const supervisors: Array<Promise<KeelRun>> = [
        keel(['batch', file, '--concurrency', String(CONCURRENCY), '--run-id', runId, '--json'], {
          ...opts,
          onSpawn,
        }),
      ];
      // which kills come for the supervisor: the seed says
      const order = Array.from({ length: KILLS }, (_, i) => i < SUPERVISOR_KILLS);
      order.sort(() => rand() - 0.5);
      const killedWorkers: Array<{ task: string; attempt: number }> = [];
      let supervisorKills = 0;
      // the run is over once a supervisor exits by itself
      let finished = false;
      const watch = (run: Promise<KeelRun>) =>
        void run.then((r) => {
          if (r.signal !== 'SIGKILL') finished = true;
        });
      watch(supervisors[0] as Promise<KeelRun>);
      for (const forSupervisor of order) {
        await sleep(1_500 + rand() * 2_500);
        if (finished) break;
        if (forSupervisor) {
          process.kill(supervisorPid, 'SIGKILL');
          expect((await supervisors.at(-1))?.signal).toBe('SIGKILL');
          supervisorKills++;
          supervisors.push(keel(['batch', 'resume', runId, '--json'], { ...opts, onSpawn }));
          watch(supervisors.at(-1) as Promise<KeelRun>);
          continue;
        }
        const workers = processesWith('keel.js', ` batch worker ${runId} `);
        if (!workers.length) continue;
        const pid = workers[Math.floor(rand() * workers.length)] as number;
        // a worker that has just exited (a zombie's cmdline is empty) is not one to kill
        const argv = readArgv(pid);
        const task = argv?.at(-2);
        const attempt = Number(argv?.at(-1));
        if (!argv?.includes(runId) || !task || !Number.isInteger(attempt)) continue;
        process.kill(pid, 'SIGKILL');
        killedWorkers.push({ task, attempt });
      }
      const last = await supervisors.at(-1);
      expect(last?.code, `${last?.stdout}\n${last?.stderr}`).toBe(0);

      // every task verified: its branch holds the fix
      const status = JSON.parse((await keel(['batch', 'status', runId, '--json'], opts)).stdout);
      expect(status.counts).toEqual({ queued: 0, running: 0, done: TASKS, failed: 0, cancelled: 0 });
      const branchOf = new Map<string, string>(
        (status.tasks as Array<{ id: string; result: { branch: string } }>).map((t) => [
          t.id,
          t.result.branch,
        ]),
      );
      for (const [i, id] of ids.entries())
        expect(git(repos[i % REPOS] as string, 'show', `${branchOf.get(id)}:src/stats.js`)).toContain(
          '/ values.length;',
        );

      const store: Store = await openStore(
        env.KEEL_STORE
          ? { engine: 'postgres', url: env.KEEL_STORE }
          : { engine: 'sqlite', path: join(home, 'keel.db') },
      );
      try {
        const journal = await journalOf(store, runId);
        // every killed worker's task was taken up again by a later attempt (unless it had finished first)
        let resumed = 0;
        for (const k of killedWorkers) {
          const finishedThen = journal.some(
            (e) => e.type === 'finished' && e.taskId === k.task && e.attempt === k.attempt,
          );
          const later = journal.some(
            (e) => e.type === 'claimed' && e.taskId === k.task && (e.attempt ?? 0) > k.attempt,
          );
          expect(finishedThen || later, `task ${k.task} killed in attempt ${k.attempt}`).toBe(true);
          if (!later) continue;
          resumed++;
        }
        // no fix wrote after the next attempt's fix started: that attempt's worker ends an earlier fix
        // still running here before it starts its own (the pid each event records names its writer; an
        // attempt whose predecessor died before opening the log starts the same run id afresh)
        const late: Record<string, number> = {};
        for (const id of ids) {
          const fixes = fixRunsOf(journal, id);
          for (const [i, fix] of fixes.entries()) {
            const next = fixes[i + 1];
            if (!next) continue;
            const after = writesBy(home, fix.fixRun, fix.fixPid).filter((ts) => ts >= next.startedAt);
            if (after.length) late[`${id} attempt ${fix.attempt}`] = after.length;
          }
        }
        expect(late).toEqual({});
        console.log(
          `batch chaos on ${name}: ${killedWorkers.length} workers killed (${resumed} mid-task, resumed), ${supervisorKills} supervisor kills`,
        );
        // the cap, from the journal
        expect(mostHeld(journal)).toBeLessThanOrEqual(CONCURRENCY);
        // no effect repeated: a killed worker's task goes on with the same fix run from its log, one tool
        // effect at a time, so no write, edit or command of any task ran twice (repeatedEffects)
        const repeats: Record<string, Record<string, number>> = {};
        for (const id of ids) {
          const runs = [...new Set(fixRunsOf(journal, id).map((f) => f.fixRun))];
          const repeated = repeatedEffects(home, runs);
          if (Object.keys(repeated).length) repeats[id] = repeated;
        }
        expect(repeats).toEqual({});
      } finally {
        await store.close();
      }

      // the ledger has every task's calls: a plan (2) and an attempt (2) of its finishing fix at least
      const ledger = JSON.parse((await keel(['ledger', runId, '--json'], opts)).stdout);
      const perTask = new Map<string, number>();
      for (const c of ledger.calls as Array<{ task_id: string }>)
        perTask.set(c.task_id, (perTask.get(c.task_id) ?? 0) + 1);
      for (const id of ids) expect(perTask.get(id) ?? 0, `calls of ${id}`).toBeGreaterThanOrEqual(4);

      // nothing left: no worker or fix of the run (an orphaned worker may still be writing its end), no
      // worktree, and no branch but each task's result
      const procs = () => [
        ...processesWith('keel.js', ` batch worker ${runId} `),
        ...repos.flatMap((repo) => processesWith('keel.js', ` fix --repo ${repo} `)),
      ];
      for (let i = 0; i < 100 && procs().length; i++) await sleep(200);
      expect(procs()).toEqual([]);
      for (const [r, repo] of repos.entries())
        expect(leftovers(repo)).toEqual({
          worktrees: [],
          branches: ids
            .filter((_, i) => i % REPOS === r)
            .map((id) => branchOf.get(id))
            .sort(),
        });
    },
    300_000,
  );
});

/** A process's arguments, or undefined when it is gone. */
function readArgv(pid: number): string[] | undefined {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
  } catch {
    return undefined;
  }
}
