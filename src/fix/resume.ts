/**
 * What a killed fix run had done, read back from its log (`keel fix --resume-run ID`, which a batch worker
 * runs for a task whose earlier attempt was killed): its snapshot, baseline, plan, each attempt's verdict,
 * its end, and the sessions it started. A resumed run redoes none of what the log says is done.
 */
import { existsSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { parseEvents } from '../agent/event-schema.js';
import { replay } from '../agent/history.js';
import { RunError, type TerminalCode } from '../agent/terminal.js';
import { findRepo, git, gitTry, openRepoAt } from '../policy/git.js';
import type { EventLog } from '../store/event-log.js';
import { TestSuite } from '../verify/suite.js';
import type { SuiteRun } from '../verify/types.js';
import type { Verdict } from '../verify/verifier.js';
import type { FixResult } from './run.js';
import { attemptDiff, type Snapshot } from './snapshot.js';

export interface PriorRun {
  /** fix_snapshot's data: where the snapshot is. */
  snapshot?: Record<string, unknown>;
  /** fix_baseline's data, with the whole run (`run`) when it was recorded by a keel that resumes. */
  baseline?: Record<string, unknown>;
  plan?: string;
  /** Attempts begun (fix_attempt), each with its recorded verdict once it was judged. */
  attempts: Map<number, { verdict?: Record<string, unknown> }>;
  /** fix_end's data: the run had ended; its result is read back, nothing is done again. */
  end?: Record<string, unknown>;
  /** The plan session and each attempt's, in order (sessions killed before they logged their task are left out). */
  planSession?: string;
  attemptSessions: string[];
  /** Processes that ran the run before (run_start, fix_resume). */
  pids: number[];
  /** How long those processes ran, from their events (the time between a kill and its resume left out). */
  wallMs: number;
}

/**
 * The log of fix run `runId`, or undefined when there is none (the run never got as far as its log: it
 * starts afresh under that id). A run of another repository or another issue is refused.
 */
export function readPriorRun(
  log: EventLog,
  runId: string,
  repo: string,
  issue: string,
): PriorRun | undefined {
  const row = log.getSession(runId);
  if (!row) return undefined;
  if (row.mode !== 'fix')
    throw new RunError('CONFIG_ERROR', `--resume-run ${runId} is a ${row.mode} run, not a fix`);
  if (row.cwd !== repo || row.prompt !== issue)
    throw new RunError(
      'CONFIG_ERROR',
      `--resume-run ${runId} fixed ${row.prompt === issue ? `another repository (${row.cwd})` : 'another issue'}; resume it with its own --repo and --issue`,
    );
  const prior: PriorRun = { attempts: new Map(), attemptSessions: [], pids: [], wallMs: 0 };
  const own = log.events(runId);
  for (const e of own) {
    const d = e.data;
    if ((e.type === 'run_start' || e.type === 'fix_resume') && typeof d.pid === 'number')
      prior.pids.push(d.pid);
    else if (e.type === 'fix_snapshot') prior.snapshot = d;
    else if (e.type === 'fix_baseline') prior.baseline = d;
    else if (e.type === 'fix_plan' && typeof d.plan === 'string') prior.plan = d.plan;
    else if (e.type === 'fix_attempt') prior.attempts.set(Number(d.attempt), {});
    else if (e.type === 'fix_verdict') prior.attempts.set(Number(d.attempt), { verdict: d });
    else if (e.type === 'fix_end') prior.end = d;
  }
  for (const child of log.childSessions(runId)) {
    // a session killed before it logged its task (its start perhaps not yet sealed in the audit chain)
    // did nothing: the resumed run starts that session afresh
    if (child.forked_seq !== null || !log.firstOfType(child.id, 'user_message')) continue;
    if (child.mode === 'plan') prior.planSession ??= child.id;
    else if (child.mode === 'edit') prior.attemptSessions.push(child.id);
  }
  // the wall budget is the run's: what its earlier processes took counts, the time it lay dead does not
  const times = [...own, ...log.childSessions(runId).flatMap((c) => log.events(c.id))]
    .map((e) => ({ at: Date.parse(e.ts), resume: e.type === 'fix_resume' }))
    .sort((a, b) => a.at - b.at);
  for (let i = 1; i < times.length; i++) {
    const [from, to] = [times[i - 1], times[i]];
    if (from && to && !to.resume) prior.wallMs += to.at - from.at;
  }
  return prior;
}

/** A session's own totals over its whole life, from its log: what a resumed run carries over. */
export function sessionTotals(
  log: EventLog,
  id: string,
): { ended: boolean; rounds: number; tokens: { input: number; output: number }; cost: number | null } {
  const state = replay(parseEvents(log.events(id)));
  return { ended: state.ended, rounds: state.rounds, tokens: { ...state.tokens }, cost: state.cost };
}

/**
 * Make sure no earlier process of the run still works in its snapshot: a keel process among `pids` that
 * lives (an orphan of a killed worker) is killed, and waited for. A pid that now names another program is
 * not the run's and is left alone.
 */
export async function stopEarlierRuns(pids: number[]): Promise<void> {
  for (const pid of new Set(pids)) {
    if (pid === process.pid || !isKeelFix(pid)) continue;
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      continue;
    }
    for (let i = 0; i < 100 && isKeelFix(pid); i++) await new Promise((r) => setTimeout(r, 50));
    if (isKeelFix(pid))
      throw new RunError(
        'ENVIRONMENT_ERROR',
        `an earlier run of this fix (process ${pid}) is still running and would not stop`,
      );
  }
}

/** Whether `pid` is a live (not zombie) `keel fix` process on this machine. */
function isKeelFix(pid: number): boolean {
  try {
    if (/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'))) return false;
    const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    return argv.some((a) => /keel(\.js)?$/.test(a)) && argv.includes('fix');
  } catch {
    return false;
  }
}

/** The result a run recorded in its fix_end (it ended before it was resumed). */
export function recordedResult(runId: string, end: Record<string, unknown>): FixResult {
  const tokens = (end.tokens ?? { input: 0, output: 0 }) as FixResult['tokens'];
  return {
    runId,
    code: String(end.code) as TerminalCode,
    status: end.status as FixResult['status'],
    reason: String(end.reason ?? ''),
    summary: String(end.summary ?? end.reason ?? ''),
    attempts: Number(end.attempts ?? 0),
    branch: (end.branch as string | null) ?? null,
    commit: (end.commit as string | null) ?? null,
    verification: (end.verification as Verdict | null) ?? null,
    files: (end.files as string[]) ?? [],
    rounds: Number(end.rounds ?? 0),
    tokens,
    costUsd: (end.cost_usd as number | null) ?? null,
    paths: (end.paths as FixResult['paths']) ?? null,
    snapshot: (end.snapshot as FixResult['snapshot']) ?? null,
    worktree: (end.worktree as string | null) ?? null,
    testCommand: (end.test_command as string | null) ?? null,
    replayed: true,
  };
}

/** The snapshot a run recorded (fix_snapshot), to work in again. */
export function recordedSnapshot(d: Record<string, unknown>, repo: string): Snapshot {
  const str = (v: unknown) => (typeof v === 'string' ? v : undefined);
  const list = (v: unknown) => (Array.isArray(v) ? v.map(String) : []);
  const dir = String(d.dir);
  const top = typeof d.top === 'string' ? d.top : dir;
  // keel's git runner works only in repositories keel opened: the worktree and the user's repository
  // (where the branch lives, and `git worktree remove` runs) by the tops keel recorded
  if (existsSync(top)) openRepoAt(top);
  if (typeof d.repo === 'string' && existsSync(d.repo)) openRepoAt(d.repo);
  const optional = {
    ...(str(d.repo) ? { repo: str(d.repo) } : {}),
    ...(str(d.branch) ? { branch: str(d.branch) } : {}),
    ...(str(d.base) ? { base: str(d.base) } : {}),
  };
  return {
    kind: d.kind === 'copy' ? 'copy' : 'worktree',
    dir,
    top,
    source: realpathSync(repo),
    ...optional,
    linked: list(d.linked),
    linkedFrom: list(d.linked_from),
    moduleShadows: list(d.module_shadows),
  };
}

/**
 * A worktree and branch a killed run made but never logged (killed between `git worktree add` and its
 * fix_snapshot): removed, so the resumed run can make them afresh under the same names.
 */
export function discardLeftover(repo: string, runId: string, slug: string, worktreesDir: string): void {
  const dir = join(worktreesDir, runId);
  const top = findRepo(realpathSync(repo));
  if (top) gitTry(top, ['worktree', 'remove', '--force', dir]);
  rmSync(dir, { recursive: true, force: true });
  if (!top) return;
  gitTry(top, ['worktree', 'prune']);
  gitTry(top, ['branch', '-q', '-D', `keel/fix-${slug}-${runId.slice(-6)}`]);
}

/** The baseline a run recorded: its whole run and the suite it settled on (undefined: an older log without them). */
export function recordedBaseline(
  d: Record<string, unknown>,
  found: TestSuite,
  snapshot: Snapshot,
  reportsDir: string,
): { suite: TestSuite; before: SuiteRun } | undefined {
  if (!d.run || typeof d.run !== 'object') return undefined;
  const command = typeof d.suite_command === 'string' ? d.suite_command : found.detected.command;
  const suite =
    command === found.detected.command
      ? found
      : new TestSuite(found.root, { ...found.detected, command }, reportsDir);
  if (Array.isArray(d.writable_copies))
    snapshot.writableCopies = new Map(
      (d.writable_copies as Array<[string, string[]]>).map(([shadow, names]) => [shadow, new Set(names)]),
    );
  return { suite, before: d.run as SuiteRun };
}

/** An attempt as its recorded verdict says it went (fix_verdict). */
export function recordedAttempt(v: Record<string, unknown>): {
  verdict?: Verdict;
  after?: SuiteRun;
  patch: string;
  files: string[];
  summary: string;
  why: string;
} {
  const { attempt: _a, files, tests: _t, patch, summary, after, feedback: _f, ...rest } = v;
  const judged = typeof rest.mode === 'string';
  return {
    ...(judged ? { verdict: rest as unknown as Verdict } : {}),
    ...(after && typeof after === 'object' ? { after: after as SuiteRun } : {}),
    patch: typeof patch === 'string' ? patch : '',
    files: Array.isArray(files) ? files.map(String) : [],
    summary: typeof summary === 'string' ? summary : '',
    why: String(rest.reason ?? ''),
  };
}

/**
 * The commit a killed run made of its attempt before it could log its end, or null: the branch moved past
 * its base and the worktree holds no change (or the worktree is gone, as after a verified fix).
 */
export function madeCommit(snapshot: Snapshot): string | null {
  if (snapshot.kind !== 'worktree' || !snapshot.repo || !snapshot.branch || !snapshot.base) return null;
  if (!existsSync(snapshot.top)) {
    const tip = gitTry(snapshot.repo, [
      'rev-parse',
      '--verify',
      '-q',
      `refs/heads/${snapshot.branch}`,
    ])?.trim();
    return tip && tip !== snapshot.base ? tip : null;
  }
  const head = git(snapshot.top, ['rev-parse', 'HEAD']).trim();
  if (head === snapshot.base) return null;
  return attemptDiff(snapshot).files.length ? null : head;
}
