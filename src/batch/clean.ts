/**
 * `keel batch clean RUN`: remove what a run left on this machine. The run's journal names every fix its
 * workers started (`fix_started`: the fix's run id, host and process ids); from there, each fix's own log
 * names its worktree and branch (fix/runs.ts prunes them as `keel runs prune` does). A verified task's
 * branch stays: it is the result. Processes are ended only when they are still the ones recorded (a fix's
 * own environment names its run, task, attempt and fix run id; a worker's command line names its
 * attempt), never by name: a journal line on a shared store cannot point keel at another process.
 *
 * A worker uses the same steps for its own task: before its fix starts it ends an earlier attempt's fix
 * still running here (endEarlierFixes), and once its task is finished it removes what earlier attempts
 * left (cleanRun with `only`).
 */
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { type KeelPaths, keelPaths } from '../config/paths.js';
import { BATCH_ATTEMPT_ENV } from '../fix/parent-watch.js';
import { describeItem, pruneRun, type RunSummary, summarizeRun } from '../fix/runs.js';
import { slugify } from '../fix/snapshot.js';
import { findRepo, gitTry } from '../policy/git.js';
import { AuditLog } from '../store/audit.js';
import { appendAudited } from '../store/audit-entries.js';
import { openDb } from '../store/db.js';
import type { Store } from '../store/engine.js';
import { EventLog } from '../store/event-log.js';
import { type Lease, RunQueue } from '../store/queue.js';
import type { BatchTask } from './tasks-file.js';

export interface CleanResult {
  /** `process 123 (batch worker night-1 t0 1)`, `worktree /…/worktrees/ID`, `branch keel/fix-… in /repo`. */
  removed: string[];
  /** What stays, and why (a verified branch, a fix recorded on another machine). */
  kept: string[];
}

/** Why a run cannot be cleaned now, or undefined. */
export async function cleanProblem(store: Store, runId: string): Promise<string | undefined> {
  const now = Date.now();
  const live = (await new RunQueue(store).tasks(runId)).filter(
    (t) => t.state === 'running' && (t.leaseUntil ?? 0) > now,
  );
  if (live.length)
    return `run ${runId} still has running tasks (${live.map((t) => t.id).join(', ')}): wait for them, or keel batch cancel ${runId} first`;
  return undefined;
}

/** The environment a worker gives its fix: which attempt it is, and the run id the worker chose for it. */
export function fixEnv(lease: Lease, fixRun: string): Record<string, string> {
  return { [BATCH_ATTEMPT_ENV]: attemptTag(lease), [FIX_RUN_ENV]: fixRun };
}

/** The variable that hands `keel fix` the run id its worker chose (fix-command.ts reads it). */
export const FIX_RUN_ENV = 'KEEL_BATCH_FIX_RUN_ID';

function attemptTag(lease: Lease): string {
  return JSON.stringify([lease.runId, lease.taskId, lease.attempt]);
}

/**
 * End the fixes of this task's earlier attempts that still run on this machine (their worker was
 * killed before the fix noticed, or its event loop is stuck), so two fixes never work on one task.
 * Returns the pids ended.
 */
export async function endEarlierFixes(store: Store, lease: Lease): Promise<number[]> {
  const here = hostname();
  const ended: number[] = [];
  for (const e of await new RunQueue(store).events(lease.runId)) {
    if (e.type !== 'fix_started' || e.taskId !== lease.taskId || (e.attempt ?? 0) >= lease.attempt) continue;
    const pid = e.data.fix_pid;
    if (e.data.host !== here || typeof pid !== 'number') continue;
    const of = { runId: lease.runId, taskId: lease.taskId, attempt: e.attempt ?? 0 };
    if (endFix(pid, of, String(e.data.fix_run ?? ''))) ended.push(pid);
  }
  return ended;
}

/** SIGKILL `pid` when it is the keel fix started for `lease` under `fixRun`; true when it was ended. */
function endFix(pid: number, lease: Lease, fixRun: string): boolean {
  return ended(pid, (cmd) => {
    if (!cmd.includes(' fix --repo ')) return false;
    let environ: string[];
    try {
      environ = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
    } catch {
      return false; // not ours to read: not a fix keel started here
    }
    return (
      environ.includes(`${BATCH_ATTEMPT_ENV}=${attemptTag(lease)}`) &&
      environ.includes(`${FIX_RUN_ENV}=${fixRun}`)
    );
  });
}

/**
 * Remove what the run left on this machine; with `only`, just what the earlier attempts of that task
 * left (a worker's own task, once finished: its own fix `fixRun` and its result `branch` stay).
 */
export async function cleanRun(
  store: Store,
  runId: string,
  only?: { lease: Lease; fixRun: string; branch: string | null },
): Promise<CleanResult> {
  const queue = new RunQueue(store);
  const createdAt = (await queue.run(runId))?.createdAt ?? 0;
  // a verified task's branch is the one its finishing attempt recorded; an earlier attempt's is not the result
  const verified = new Map<string, string>();
  const specs = new Map<string, BatchTask>();
  for (const t of await queue.tasks(runId)) {
    specs.set(t.id, t.spec as BatchTask);
    const branch = (t.result as { branch?: string | null } | undefined)?.branch;
    if (t.state === 'done' && branch) verified.set(t.id, branch);
  }
  if (only?.branch) verified.set(only.lease.taskId, only.branch);
  const here = hostname();
  const removed: string[] = [];
  const kept: string[] = [];
  const fixes: Array<{ fixRun: string; taskId: string; fixPid: unknown }> = [];
  for (const e of await queue.events(runId)) {
    if (e.type !== 'fix_started' || e.taskId === undefined) continue;
    const fixRun = String(e.data.fix_run ?? '');
    if (only && (e.taskId !== only.lease.taskId || (e.attempt ?? 0) >= only.lease.attempt)) continue;
    // an earlier attempt whose fix run this attempt went on with (resumed from its log): its processes go,
    // its worktree and branch are this attempt's own
    const resumed = only !== undefined && fixRun === only.fixRun;
    if (e.data.host !== here) {
      kept.push(`fix ${fixRun} of task ${e.taskId}: recorded on ${String(e.data.host)}, clean it there`);
      continue;
    }
    // the fix first (it holds the worktree), then its worker
    const attempt = `${runId} ${e.taskId} ${e.attempt}`;
    const fixPid = e.data.fix_pid;
    const of = { runId, taskId: e.taskId, attempt: e.attempt ?? 0 };
    if (typeof fixPid === 'number' && endFix(fixPid, of, fixRun))
      removed.push(`process ${fixPid} (keel fix of task ${e.taskId})`);
    const workerPid = e.data.worker_pid;
    if (typeof workerPid === 'number' && ended(workerPid, (cmd) => cmd.includes(` batch worker ${attempt} `)))
      removed.push(`process ${workerPid} (batch worker ${attempt})`);
    if (resumed) continue;
    // a resumed attempt names the fix run its killed one started: the run is one, its newest process counts
    const same = fixes.findIndex((f) => f.fixRun === fixRun && f.taskId === e.taskId);
    if (same >= 0) fixes.splice(same, 1);
    fixes.push({ fixRun, taskId: e.taskId, fixPid });
  }
  const paths = keelPaths();
  const db = openDb(paths.db);
  const audit = new AuditLog(paths.auditDir);
  try {
    const log = new EventLog(db);
    const record = (id: string, type: string, data: Record<string, unknown>) =>
      appendAudited(log, audit, id, type, data);
    for (const { fixRun, taskId, fixPid } of fixes) {
      const row = log.getSession(fixRun);
      if (!row) continue; // the fix died before it opened its log: it made nothing
      // the journal may be a shared database's: only a fix of this task's repository, started after the
      // run, is taken for one of its fixes (never another fix run of this machine it happens to name)
      const spec = specs.get(taskId);
      if (
        row.mode !== 'fix' ||
        !spec ||
        !sameFolder(row.cwd, spec.repo) ||
        Date.parse(row.created_at) < createdAt
      ) {
        kept.push(
          `fix ${fixRun} of task ${taskId}: not a fix of ${spec?.repo ?? 'its repository'} in this run`,
        );
        continue;
      }
      const summary = summarizeRun(log, paths, row);
      // a fix that is a zombie (its stuck worker never reaped it) still answers a signal 0, but runs no more
      const run =
        summary.code === 'running' && typeof fixPid === 'number' && !alive(fixPid)
          ? namedLeftovers({ ...summary, code: 'interrupted' }, paths, specs.get(taskId))
          : summary.code === 'running'
            ? summary
            : namedLeftovers(summary, paths, specs.get(taskId));
      if (run.branch && verified.get(taskId) === run.branch) {
        kept.push(`branch ${run.branch} in ${run.repo} (task ${taskId}, verified)`);
        // the verified fix's branch and report are its result: only scaffolding goes
        const pruned = pruneRun(log, paths, { ...run, branch: null, runDir: null }, record);
        removed.push(...pruned.removed.map(describeItem));
        continue;
      }
      const pruned = pruneRun(log, paths, run, record);
      removed.push(...pruned.removed.map(describeItem));
      kept.push(...pruned.skipped.map((s) => `${describeItem(s)}: ${s.reason}`));
    }
  } finally {
    audit.close();
    db.close();
  }
  return { removed, kept };
}

/**
 * A fix killed between making its worktree and recording it left them unnamed in its log: they are still
 * found by the names keel gives them from the run id the worker chose (the folder `worktrees/<id>`, the
 * branch `keel/fix-<slug>-<last 6 of the id>`), which no one else makes.
 */
function namedLeftovers(run: RunSummary, paths: KeelPaths, spec: BatchTask | undefined): RunSummary {
  const out = { ...run };
  const repo = run.repo ?? (spec && existsSync(spec.repo) ? (findRepo(spec.repo) ?? null) : null);
  const dir = join(paths.worktreesDir, run.id);
  if (!out.worktree && existsSync(dir)) out.worktree = dir;
  if (!out.branch && repo && spec) {
    const branch = `keel/fix-${slugify(spec.issue)}-${run.id.slice(-6)}`;
    if (gitTry(repo, ['rev-parse', '--verify', '-q', `refs/heads/${branch}`]) !== undefined)
      out.branch = branch;
  }
  return { ...out, repo };
}

function sameFolder(a: string, b: string): boolean {
  try {
    return realpathSync(a) === realpathSync(b);
  } catch {
    return false;
  }
}

/** SIGKILL a process that is still alive and still the one recorded; true when it was ended. */
function ended(pid: number, isIt: (commandLine: string) => boolean): boolean {
  let cmd: string;
  try {
    cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
  } catch {
    return false; // gone
  }
  if (!isIt(` ${cmd}`)) return false; // the pid went to another process since
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    return false;
  }
  // a killed process's worktree may still be open: wait until the kernel has let it go
  for (let i = 0; i < 200 && alive(pid); i++)
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 25);
  return true;
}

function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^\d+ \(.*\) Z/.test(stat); // a zombie holds nothing
  } catch {
    return false;
  }
}
