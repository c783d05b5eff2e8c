/**
 * The fix and loop runs as a person looks back at them: what each decided and cost, what it left (a
 * branch, a worktree, a run folder), and pruning what it left. Everything is read from the run's own
 * events; only what keel recorded making is ever removed.
 */
import { existsSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { alive } from '../agent/session.js';
import type { KeelPaths } from '../config/paths.js';
import { findRepo, gitTry, openRepoAt } from '../policy/git.js';
import { isInside } from '../policy/scope.js';
import type { EventLog, SessionRow, StoredEvent } from '../store/event-log.js';

export const RUN_MODES = ['fix', 'loop'] as const;

export interface RunSummary {
  id: string;
  kind: 'fix' | 'loop';
  createdAt: string;
  cwd: string;
  /** The issue or task, first line. */
  title: string;
  /** The terminal code; `running` while its process lives, `interrupted` when it died without one. */
  code: string;
  /** fix: `verified` or `failed`; loop: its code. */
  verdict: string;
  /** A fix's attempts, a loop's rounds. */
  attempts: number;
  costUsd: number | null;
  /** The repository the run's branch lives in. */
  repo: string | null;
  /** The keel/fix-* branch the run made, while it is still in the repository. */
  branch: string | null;
  /** The worktree (or copy) the run kept, while it is still on disk. */
  worktree: string | null;
  /** KEEL_HOME/runs/<id>, while it exists. */
  runDir: string | null;
  pruned: boolean;
}

/** The runs, newest first; pruned ones only with `all`; with `root`, only that project's (recordedIn). */
export function readRuns(
  log: EventLog,
  paths: KeelPaths,
  opts: { limit: number; all?: boolean; root?: string },
): RunSummary[] {
  const out: RunSummary[] = [];
  const { root } = opts;
  // pruned runs are skipped after reading, so read a little further than the limit; another project's
  // are skipped before reading (a row's folder is compared canonically, so SQL cannot pick them)
  const rows = log.listByMode(
    [...RUN_MODES],
    root !== undefined ? -1 : opts.all ? opts.limit : opts.limit * 4 + 20,
  );
  for (const row of rows) {
    if (root !== undefined && !recordedIn(row.cwd, root)) continue;
    const run = summarizeRun(log, paths, row);
    if (run.pruned && !opts.all) continue;
    out.push(run);
    if (out.length >= opts.limit) break;
  }
  return out;
}

/** What one run decided and left, from its events and what is still on disk. */
export function summarizeRun(log: EventLog, paths: KeelPaths, row: SessionRow): RunSummary {
  const events = log.events(row.id);
  const last = (type: string) => events.findLast((e) => e.type === type)?.data;
  const snap = last('fix_snapshot');
  const end = last(row.mode === 'fix' ? 'fix_end' : 'loop_end');
  // a resumed run's newest process is named by its last fix_resume
  const start = events.findLast((e) => e.type === 'run_start' || e.type === 'fix_resume')?.data;
  const code = row.code ?? (typeof start?.pid === 'number' && alive(start.pid) ? 'running' : 'interrupted');
  // runs before the snapshot named its repository made their worktree from the repository they ran in
  const repo = str(snap?.repo) ?? (snap?.kind === 'worktree' ? (findRepo(row.cwd) ?? null) : null);
  const branch = keptBranch(repo, str(snap?.branch), str(snap?.base));
  const top = str(snap?.top) ?? str(snap?.dir);
  const worktree = top && ownWorktree(paths, top) && existsSync(top) ? (str(snap?.dir) ?? top) : null;
  const runDir = join(paths.runsDir, row.id);
  return {
    id: row.id,
    kind: row.mode === 'loop' ? 'loop' : 'fix',
    createdAt: row.created_at,
    cwd: row.cwd,
    title: row.prompt.trim().split('\n')[0]?.slice(0, 80) ?? '',
    code,
    verdict: row.mode === 'fix' ? (str(end?.status) ?? code) : code,
    attempts:
      num(row.mode === 'fix' ? end?.attempts : end?.iterations) ??
      countOf(events, 'fix_attempt', 'loop_round'),
    costUsd: row.cost_usd ?? num(end?.cost_usd) ?? childCost(log, row.id),
    repo,
    branch,
    worktree,
    runDir: existsSync(runDir) ? runDir : null,
    pruned: events.some((e) => e.type === 'run_pruned'),
  };
}

/** A run's report files (a fix writes them), read back as text; missing ones are null. */
export function runReport(run: RunSummary): {
  rationale: string | null;
  pr: string | null;
  diff: string | null;
  trace: string | null;
} {
  const read = (name: string) => {
    const path = run.runDir ? join(run.runDir, name) : undefined;
    return path && existsSync(path) ? readFileSync(path, 'utf8') : null;
  };
  const trace = run.runDir ? join(run.runDir, 'trace.jsonl') : undefined;
  return {
    rationale: read('rationale.md'),
    pr: read('pr.md'),
    diff: read('diff.patch'),
    trace: trace && existsSync(trace) ? trace : null,
  };
}

/** One line per step of a run's own log (its rounds, verdicts, reviews), for a run without a report. */
export function runSteps(log: EventLog, id: string): string[] {
  const steps: string[] = [];
  for (const e of log.events(id)) {
    const d = e.data;
    if (e.type === 'loop_round' || e.type === 'fix_attempt')
      steps.push(`${e.type === 'loop_round' ? 'round' : 'attempt'} ${d.round ?? d.attempt}`);
    else if (e.type === 'loop_tests') steps.push(`  tests: ${d.passed} passed, ${d.failed} failed`);
    else if (e.type === 'loop_review') steps.push(`  review: ${d.verdict}`);
    else if (e.type === 'fix_verdict') steps.push(`  verdict: ${d.status}: ${d.reason}`);
    else if (e.type === 'loop_verdict') steps.push(`verdict ${d.code}: ${d.reason}`);
    else if (e.type === 'fix_end' || e.type === 'loop_end') steps.push(`end ${d.code}: ${d.reason}`);
  }
  return steps;
}

/** What pruning a run would remove (or did). */
export interface PruneItem {
  what: 'branch' | 'worktree' | 'run folder';
  path: string;
  /** For a branch: the repository it is in. */
  repo?: string;
}

/** What is there to remove of a run; a running run has nothing to prune. */
export function prunePlan(run: RunSummary): PruneItem[] {
  if (run.code === 'running') return [];
  const items: PruneItem[] = [];
  if (run.worktree) items.push({ what: 'worktree', path: run.worktree });
  if (run.branch && run.repo) items.push({ what: 'branch', path: run.branch, repo: run.repo });
  if (run.runDir) items.push({ what: 'run folder', path: run.runDir });
  return items;
}

/**
 * Remove what a run left: its worktree (through git, so the repository forgets it), its branch, its run
 * folder; the run's log records what went. Returns what was removed and what could not be, with why.
 */
export function pruneRun(
  log: EventLog,
  paths: KeelPaths,
  run: RunSummary,
  record: (runId: string, type: string, data: Record<string, unknown>) => void,
): { removed: PruneItem[]; skipped: Array<PruneItem & { reason: string }> } {
  const removed: PruneItem[] = [];
  const skipped: Array<PruneItem & { reason: string }> = [];
  const snapTop = topOf(log, run.id);
  for (const item of prunePlan(run)) {
    if (item.what === 'worktree') {
      const top = snapTop ?? item.path;
      // checked again here: only a folder under keel's own worktrees folder is ever removed
      if (!ownWorktree(paths, top)) {
        skipped.push({ ...item, reason: 'not under keel worktrees folder' });
        continue;
      }
      if (run.repo && openRepoAt(run.repo)) gitTry(run.repo, ['worktree', 'remove', '--force', top]);
      rmSync(top, { recursive: true, force: true });
      if (run.repo && openRepoAt(run.repo)) gitTry(run.repo, ['worktree', 'prune']);
      removed.push(item);
    } else if (item.what === 'branch' && item.repo) {
      const done = openRepoAt(item.repo)
        ? gitTry(item.repo, ['branch', '-q', '-D', '--', item.path])
        : undefined;
      if (done === undefined)
        skipped.push({ ...item, reason: 'git would not delete it (checked out somewhere?)' });
      else removed.push(item);
    } else if (item.what === 'run folder') {
      if (!isInside(item.path, paths.runsDir)) continue;
      rmSync(item.path, { recursive: true, force: true });
      removed.push(item);
    }
  }
  record(run.id, 'run_pruned', {
    removed: removed.map(describeItem),
    skipped: skipped.map((s) => `${describeItem(s)}: ${s.reason}`),
  });
  return { removed, skipped };
}

/** `branch keel/fix-x-1a2b3c in /repo`, `worktree /home/.../worktrees/ID`, `run folder ...`. */
export function describeItem(item: PruneItem): string {
  return item.what === 'branch' ? `branch ${item.path} in ${item.repo}` : `${item.what} ${item.path}`;
}

/**
 * Whether a session or run recorded in `cwd` is one of the project at `root` (canonical): the same
 * folder, never one inside it (a nested repository is another project).
 */
export function recordedIn(cwd: string, root: string): boolean {
  return cwd === root || canonical(cwd) === root;
}

/** Whether a run belongs to the repository at `repo` (its branch is there, or it ran inside it). */
export function runOfRepo(run: RunSummary, repo: string): boolean {
  return run.repo === repo || isInside(canonical(run.cwd), repo);
}

/**
 * The branch a run made, while it still exists and is keel's: named keel/fix-*, as the run recorded it,
 * and holding the commit the run started from (a user's branch of the same name would not be the run's).
 */
function keptBranch(
  repo: string | null,
  branch: string | undefined,
  base: string | undefined,
): string | null {
  if (!repo || !branch?.startsWith('keel/fix-') || !openRepoAt(repo)) return null;
  const tip = gitTry(repo, ['rev-parse', '--verify', '-q', `refs/heads/${branch}^{commit}`])?.trim();
  if (!tip) return null;
  if (base && gitTry(repo, ['merge-base', '--is-ancestor', base, tip]) === undefined) return null;
  return branch;
}

function ownWorktree(paths: KeelPaths, dir: string): boolean {
  return (
    isInside(canonical(dir), canonical(paths.worktreesDir)) &&
    canonical(dir) !== canonical(paths.worktreesDir)
  );
}

function topOf(log: EventLog, id: string): string | undefined {
  const snap = log.events(id).findLast((e) => e.type === 'fix_snapshot')?.data;
  return str(snap?.top);
}

function childCost(log: EventLog, id: string): number | null {
  let total = 0;
  for (const child of log.childSessions(id)) {
    if (child.cost_usd === null) return null;
    total += child.cost_usd;
  }
  return total;
}

function countOf(events: StoredEvent[], ...types: string[]): number {
  return events.filter((e) => types.includes(e.type)).length;
}

function canonical(path: string): string {
  try {
    return realpathSync.native(path);
  } catch {
    return path;
  }
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' && v ? v : undefined;
}

function num(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}
