// keel batch under random SIGKILLs (issue 27): BENCH_TASKS tasks (200) at BENCH_CONCURRENCY (50) on the
// scripted model, with BENCH_KILLS (20) SIGKILLs of workers and of the supervisor (then `keel batch
// resume`), on SQLite and on PostgreSQL. Reports: every task verified, every killed task resumed, wall time
// against the serial floor, the supervisor's peak RSS, leaks (processes, worktrees, branches, the
// supervisor's open fds), and the queue's claim throughput per engine. Run `npm run build` first.
//
//   node bench/batch.mjs
//   BENCH_TASKS=60 BENCH_CONCURRENCY=15 BENCH_KILLS=8 BENCH_ENGINES=sqlite node bench/batch.mjs
//
// PostgreSQL: KEEL_BENCH_PG=postgres://… uses that server (a fresh database is made in it); otherwise the
// bench starts a private cluster as the tests do (test/helpers/pg-cluster.mjs: initdb in a temporary
// folder, a free loopback port, run as `postgres` through runuser when root) and removes it at the end.
// No server binaries: the row says so.
import { execFileSync, spawn } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openStore } from '../dist/store/engine.js';
import { RunQueue } from '../dist/store/queue.js';
import { findBinaries, freshDatabase, startCluster, THROWAWAY } from '../test/helpers/pg-cluster.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const KEEL = join(root, 'bin/keel.js');
const TASKS = Number(process.env.BENCH_TASKS ?? 200);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 50);
const KILLS = Number(process.env.BENCH_KILLS ?? 20);
const SUPERVISOR_KILLS = Number(process.env.BENCH_SUPERVISOR_KILLS ?? Math.max(1, Math.round(KILLS / 7)));
const REPOS = Number(process.env.BENCH_REPOS ?? Math.max(1, Math.round(TASKS / 10)));
const ENGINES = (process.env.BENCH_ENGINES ?? 'sqlite,postgres').split(',');
const SEED = Number(process.env.BENCH_SEED ?? Math.floor(Math.random() * 2 ** 31));
const SINGLE_RUNS = Number(process.env.BENCH_SINGLE_RUNS ?? 3);
const CLAIMS = Number(process.env.BENCH_CLAIMS ?? 2_000);
// a run that has not ended by then is stopped (its processes killed) and reported as not finished
const TIMEOUT_S = Number(process.env.BENCH_TIMEOUT_S ?? 1_200);

const BUGGY = '  return sum(values) / (values.length + 1);';
const TURNS = [
  { tool_calls: [{ name: 'read_file', arguments: { path: 'src/stats.js' } }] },
  { text: '1. mean divides by one too many.\n2. Divide by values.length.' },
  {
    tool_calls: [
      {
        name: 'edit_file',
        arguments: {
          path: 'src/stats.js',
          old_string: BUGGY,
          new_string: '  return sum(values) / values.length;',
        },
      },
    ],
  },
  { text: 'mean now divides by the length.' },
];

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const tmp = (prefix) => mkdtempSync(join(tmpdir(), prefix));
const made = []; // folders to remove at the end

/** mulberry32: the same seed, the same choices. */
function random(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function gitIn(cwd, ...args) {
  return execFileSync('git', args, {
    cwd,
    encoding: 'utf8',
    env: {
      PATH: process.env.PATH,
      HOME: cwd,
      GIT_AUTHOR_NAME: 'b',
      GIT_AUTHOR_EMAIL: 'b@example.com',
      GIT_COMMITTER_NAME: 'b',
      GIT_COMMITTER_EMAIL: 'b@example.com',
    },
  });
}

/** A committed repository holding the stats fixture (the bug the script fixes). */
function statsRepo() {
  const dir = tmp('keel-bench-repo-');
  made.push(dir);
  cpSync(join(root, 'test/fixtures/fix/stats'), dir, { recursive: true });
  gitIn(dir, 'init', '-q', '-b', 'main');
  gitIn(dir, 'add', '-A');
  gitIn(dir, 'commit', '-qm', 'stats');
  return dir;
}

function scriptedHome() {
  const dir = tmp('keel-bench-batch-');
  made.push(dir);
  writeFileSync(join(dir, 'script.json'), JSON.stringify({ turns: TURNS }));
  writeFileSync(
    join(dir, 'config.toml'),
    `provider = "scripted"\nmodel = "scripted"\nscript = "${join(dir, 'script.json')}"\n`,
  );
  return dir;
}

function env(home, store) {
  return {
    PATH: process.env.PATH,
    HOME: home,
    KEEL_HOME: home,
    NO_COLOR: '1',
    LANG: 'C.UTF-8',
    ...(store ? { KEEL_STORE: store } : {}),
  };
}

/** Run keel to its end: { code, signal, stdout, stderr, ms, pid }, with `onSpawn(child)` for the pid. */
function keel(args, { home, store, cwd, onSpawn }) {
  const t0 = process.hrtime.bigint();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [KEEL, ...args], {
      cwd,
      env: env(home, store),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += d;
    });
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    child.on('error', reject);
    child.on('close', (code, signal) =>
      resolve({
        code,
        signal,
        stdout,
        stderr,
        ms: Number(process.hrtime.bigint() - t0) / 1e6,
        pid: child.pid,
      }),
    );
    onSpawn?.(child);
  });
}

function tasksFile(dir, repos, n) {
  const file = join(dir, 'tasks.jsonl');
  writeFileSync(
    file,
    Array.from(
      { length: n },
      (_, i) =>
        `${JSON.stringify({ id: `t${i}`, repo: repos[i % repos.length], issue: 'mean() of [2, 4, 6] returns 3, not 4' })}\n`,
    ).join(''),
  );
  return file;
}

/** Live processes whose command line holds every part (zombies left out). */
function processesWith(...parts) {
  const out = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const cmd = readFileSync(`/proc/${name}/cmdline`, 'utf8').replaceAll('\0', ' ');
      if (!parts.every((p) => cmd.includes(p))) continue;
      if (/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${name}/stat`, 'utf8'))) continue;
      out.push(Number(name));
    } catch {}
  }
  return out;
}

function vmHwmKb(pid) {
  try {
    return Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
  } catch {
    return 0;
  }
}

function fdCount(pid) {
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return undefined;
  }
}

// ---- PostgreSQL: a given server, or a private cluster (test/helpers/pg-cluster.mjs, as the tests do)

async function privateCluster() {
  const found = findBinaries();
  if (!found)
    return { skip: 'no PostgreSQL server binaries under /usr/lib/postgresql (or set KEEL_BENCH_PG)' };
  const dir = tmp('keel-bench-pg-');
  made.push(dir);
  const cluster = await startCluster(found.bin, dir, {
    ...THROWAWAY,
    max_connections: 400,
    shared_buffers: '64MB',
  });
  return { ...cluster, where: `private cluster (PostgreSQL ${found.version}, fsync off)` };
}

// ---- the measurements

/** Median wall time of a one-task batch at concurrency 1 (supervisor, worker, fix): one task's own time. */
async function singleTaskMs(storeUrl) {
  const times = [];
  for (let i = 0; i < SINGLE_RUNS; i++) {
    const home = scriptedHome();
    const file = tasksFile(home, [statsRepo()], 1);
    const store = storeUrl ? await freshDatabase(storeUrl, 'keel_bench_') : undefined;
    const r = await keel(['batch', file, '--concurrency', '1', '--run-id', 'single', '--json'], {
      home,
      store,
      cwd: home,
    });
    if (r.code !== 0) throw new Error(`a one-task batch failed (${r.code}): ${r.stderr}`);
    times.push(r.ms);
  }
  return times.sort((a, b) => a - b)[Math.floor(times.length / 2)];
}

/** The batch under kills. */
async function chaos(storeUrl, rand) {
  const home = scriptedHome();
  const repos = Array.from({ length: REPOS }, statsRepo);
  const file = tasksFile(home, repos, TASKS);
  const store = storeUrl ? await freshDatabase(storeUrl, 'keel_bench_') : undefined;
  const runId = 'bench';
  const opts = { home, store, cwd: home };
  let current = 0;
  let peakKb = 0;
  const fds = []; // [first, last] sample of each supervisor incarnation
  const onSpawn = (child) => {
    current = child.pid;
    fds.push({ pid: child.pid, at: Date.now(), first: undefined, last: undefined });
  };
  const t0 = process.hrtime.bigint();
  const supervisors = [
    keel(['batch', file, '--concurrency', String(CONCURRENCY), '--run-id', runId, '--json'], {
      ...opts,
      onSpawn,
    }),
  ];
  let done = false;
  const watch = (p) =>
    p.then((r) => {
      if (r.signal !== 'SIGKILL') done = true;
    });
  watch(supervisors[0]);
  const sampler = setInterval(() => {
    peakKb = Math.max(peakKb, vmHwmKb(current));
    // first: once the supervisor has settled (store open, first workers started); last: its final sample
    const f = fds.at(-1);
    const n = fdCount(current);
    if (f && n) {
      if (Date.now() - f.at >= 2_000) f.first ??= n;
      f.last = n;
    }
  }, 200);
  const order = Array.from({ length: KILLS }, (_, i) => i < SUPERVISOR_KILLS).sort(() => rand() - 0.5);
  // spread the kills over the run's expected length
  const gap = Number(process.env.BENCH_KILL_GAP_MS ?? 3_000);
  const killed = [];
  let supervisorKills = 0;
  for (const forSupervisor of order) {
    await sleep(gap * (0.5 + rand()));
    if (done) break;
    if (forSupervisor) {
      process.kill(current, 'SIGKILL');
      await supervisors.at(-1);
      supervisorKills++;
      supervisors.push(keel(['batch', 'resume', runId, '--json'], { ...opts, onSpawn }));
      watch(supervisors.at(-1));
      continue;
    }
    const workers = processesWith('keel.js', ` batch worker ${runId} `);
    if (!workers.length) continue;
    const pid = workers[Math.floor(rand() * workers.length)];
    let argv;
    try {
      argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
      process.kill(pid, 'SIGKILL');
    } catch {
      continue;
    }
    killed.push({ task: argv.at(-2), attempt: Number(argv.at(-1)) });
  }
  const deadline = Number(t0 / 1_000_000n) + TIMEOUT_S * 1000;
  let last;
  for (;;) {
    const settled = await Promise.race([supervisors.at(-1), sleep(1_000).then(() => undefined)]);
    if (settled) {
      last = settled;
      break;
    }
    if (Number(process.hrtime.bigint() / 1_000_000n) > deadline) {
      stopRun(current, runId, repos);
      clearInterval(sampler);
      const s = await openStore(
        store ? { engine: 'postgres', url: store } : { engine: 'sqlite', path: join(home, 'keel.db') },
      );
      const journal = await new RunQueue(s).events(runId).finally(() => s.close());
      const count = (type) => journal.filter((e) => e.type === type).length;
      return {
        unfinished: `not finished after ${TIMEOUT_S} s (stopped): ${count('finished')} finished, ${count('claimed')} claims, ${count('expired')} leases expired, ${count('fix_started')} fixes started`,
      };
    }
  }
  const wallMs = Number(process.hrtime.bigint() - t0) / 1e6;
  clearInterval(sampler);
  if (last.code !== 0) throw new Error(`the batch ended ${last.code}: ${last.stderr.slice(-2000)}`);

  const status = JSON.parse((await keel(['batch', 'status', runId, '--json'], opts)).stdout);
  const results = new Map(status.tasks.map((t) => [t.id, t]));
  const s = await openStore(
    store ? { engine: 'postgres', url: store } : { engine: 'sqlite', path: join(home, 'keel.db') },
  );
  let journal;
  try {
    journal = await new RunQueue(s).events(runId);
  } finally {
    await s.close();
  }
  let resumed = 0;
  let finishedFirst = 0;
  let lost = 0;
  for (const k of killed) {
    const later = journal.some((e) => e.type === 'claimed' && e.taskId === k.task && e.attempt > k.attempt);
    const ended = journal.some(
      (e) => e.type === 'finished' && e.taskId === k.task && e.attempt === k.attempt,
    );
    if (later) resumed++;
    else if (ended) finishedFirst++;
    else lost++;
  }
  let held = 0;
  let most = 0;
  for (const e of journal) {
    if (e.type === 'claimed') held++;
    if (e.type === 'finished' || e.type === 'released' || e.type === 'expired') held--;
    most = Math.max(most, held);
  }
  // leaks: give orphaned workers (of killed supervisors) a moment to write their end and go
  const procs = () => [
    ...processesWith('keel.js', ` batch worker ${runId} `),
    ...repos.flatMap((r) => processesWith('keel.js', ` fix --repo ${r} `)),
  ];
  for (let i = 0; i < 100 && procs().length; i++) await sleep(200);
  let worktrees = 0;
  let extraBranches = 0;
  const resultBranches = new Set([...results.values()].map((t) => t.result?.branch));
  for (const r of repos) {
    worktrees +=
      gitIn(r, 'worktree', 'list', '--porcelain')
        .split('\n')
        .filter((l) => l.startsWith('worktree ')).length - 1;
    extraBranches += gitIn(r, 'branch', '--list', 'keel/fix-*', '--format=%(refname:short)')
      .split('\n')
      .filter((b) => b && !resultBranches.has(b)).length;
  }
  const verified = [...results.values()].filter(
    (t) => t.state === 'done' && t.result?.status === 'verified',
  ).length;
  return {
    verified,
    killedWorkers: killed.length,
    resumed,
    finishedFirst,
    lost,
    supervisorKills,
    wallMs,
    peakKb,
    mostHeld: most,
    leftProcesses: procs().length,
    worktrees,
    extraBranches,
    fds: fds.map((f) => `${f.first ?? '?'}→${f.last ?? '?'}`).join(', '),
    attempts: [...results.values()].reduce((a, t) => a + t.attempts, 0),
    expired: journal.filter((e) => e.type === 'expired').length,
    // an attempt whose worker never got to start a fix lost its lease while starting; the others while running
    expiredStarting: journal.filter(
      (e) =>
        e.type === 'expired' &&
        !journal.some((f) => f.type === 'fix_started' && f.taskId === e.taskId && f.attempt === e.attempt),
    ).length,
  };
}

/** SIGKILL the run's supervisor, its workers and their fixes (found by this build's path and the bench's repositories). */
function stopRun(supervisor, runId, repos) {
  const pids = [
    supervisor,
    ...processesWith(KEEL, ` batch worker ${runId} `),
    ...repos.flatMap((r) => processesWith(KEEL, ` fix --repo ${r} `)),
  ];
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {}
  }
}

/** Claim → finish cycles per second on the queue, BENCH_CLAIMS tasks, 8 claimers, cap 50. */
async function claimThroughput(storeUrl) {
  const dir = tmp('keel-bench-claims-');
  made.push(dir);
  const store = await openStore(
    storeUrl
      ? { engine: 'postgres', url: await freshDatabase(storeUrl, 'keel_bench_') }
      : { engine: 'sqlite', path: join(dir, 'keel.db') },
  );
  try {
    const queue = new RunQueue(store);
    await queue.createRun('claims', {
      concurrency: 50,
      tasks: Array.from({ length: CLAIMS }, (_, i) => ({ id: `c${i}`, spec: { i } })),
    });
    const t0 = process.hrtime.bigint();
    let done = 0;
    await Promise.all(
      Array.from({ length: 8 }, async (_, w) => {
        for (;;) {
          const lease = await queue.claim('claims', `bench:${w}`);
          if (!lease) return;
          await queue.finish(lease, 'done', { ok: true });
          done++;
        }
      }),
    );
    const s = Number(process.hrtime.bigint() - t0) / 1e9;
    if (done !== CLAIMS) throw new Error(`claimed ${done} of ${CLAIMS}`);
    return CLAIMS / s;
  } finally {
    await store.close();
  }
}

// ---- main

const rows = [];
let cluster;
try {
  for (const engine of ENGINES) {
    let url;
    let where = 'SQLite in KEEL_HOME';
    if (engine === 'postgres') {
      if (process.env.KEEL_BENCH_PG) {
        url = process.env.KEEL_BENCH_PG;
        where = 'KEEL_BENCH_PG';
      } else {
        cluster ??= await privateCluster();
        if (cluster.skip) {
          rows.push({ engine, skip: cluster.skip });
          continue;
        }
        url = cluster.url;
        where = cluster.where;
      }
    }
    process.stderr.write(`bench batch: ${engine}: one-task runs…\n`);
    const single = await singleTaskMs(url);
    process.stderr.write(
      `bench batch: ${engine}: ${TASKS} tasks at ${CONCURRENCY}, ${KILLS} kills (seed ${SEED})…\n`,
    );
    const c = await chaos(url, random(SEED));
    process.stderr.write(`bench batch: ${engine}: claim throughput…\n`);
    const claims = await claimThroughput(url);
    rows.push({ engine, where, single, claims, ...c });
  }
} finally {
  await cluster?.stop?.();
  for (const d of made) rmSync(d, { recursive: true, force: true });
}

const s = (ms) => `${(ms / 1000).toFixed(1)} s`;
const cores = (await import('node:os')).cpus().length;
console.log(
  `\nkeel batch: ${TASKS} tasks on ${REPOS} repositories at concurrency ${CONCURRENCY}, ${KILLS} SIGKILLs planned (${SUPERVISOR_KILLS} of the supervisor), seed ${SEED}, ${cores} cores\n`,
);
console.log(
  '| engine | verified | workers killed → resumed (finished before the kill) | supervisor kills | wall | serial floor (Σ one-task / concurrency) | wall / floor | wall / cores floor (Σ / min(concurrency, cores)) | attempts (leases expired) | most held (cap) | supervisor peak RSS | leaks: processes, worktrees, extra branches | supervisor fds first→last | claim→finish /s |',
);
console.log('| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |');
for (const r of rows) {
  if (r.skip || r.unfinished) {
    console.log(
      `| ${r.engine} | ${r.skip ? `skipped: ${r.skip}` : r.unfinished} | | | | | | | | | | | | ${r.claims?.toFixed(0) ?? ''} |`,
    );
    continue;
  }
  const floor = (r.single * TASKS) / CONCURRENCY;
  // what the machine's cores allow at best: Σ one-task times over min(concurrency, cores)
  const coreFloor = (r.single * TASKS) / Math.min(CONCURRENCY, cores);
  console.log(
    `| ${r.engine} | ${r.verified}/${TASKS} | ${r.killedWorkers} → ${r.resumed} (${r.finishedFirst})${r.lost ? `, ${r.lost} NOT resumed` : ''} | ${r.supervisorKills} | ${s(r.wallMs)} | ${s(floor)} (one task ${s(r.single)}) | ${(r.wallMs / floor).toFixed(2)}× | ${(r.wallMs / coreFloor).toFixed(2)}× | ${r.attempts} (${r.expired}: ${r.expiredStarting} before a fix started) | ${r.mostHeld} (${CONCURRENCY}) | ${(r.peakKb / 1024).toFixed(0)} MB | ${r.leftProcesses}, ${r.worktrees}, ${r.extraBranches} | ${r.fds} | ${r.claims.toFixed(0)} |`,
  );
}
console.log(
  `\nrerun: BENCH_SEED=${SEED} BENCH_TASKS=${TASKS} BENCH_CONCURRENCY=${CONCURRENCY} BENCH_KILLS=${KILLS} node bench/batch.mjs`,
);
const bad = rows.some(
  (r) =>
    r.unfinished ||
    (!r.skip && (r.verified !== TASKS || r.lost || r.leftProcesses || r.worktrees || r.extraBranches)),
);
process.exitCode = bad ? 1 : 0;
