/**
 * Undo: from what the safety net saved (its records, safety-net.ts), work out the steps back to the state
 * before a session, name them for people, and carry them out, never through a link.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, parse, relative } from 'node:path';
import {
  changedPaths,
  checkoutPaths,
  commitsSince,
  commitTree,
  currentBranch,
  diffTrees,
  git,
  gitTry,
  headCommit,
  KEEL_IDENT,
  repoPath,
  resetIndexPaths,
} from './git.js';
import type { CopiedFile, GitRecord, SafetyNetRecord } from './safety-net.js';
import { isInside } from './scope.js';
import { snapshotTree } from './snapshot-tree.js';
import {
  checkParents,
  LinkedPath,
  lstatOrUndefined,
  type ParentCache,
  removeNoFollow,
  restoreNoFollow,
} from './undo-paths.js';

/** Undo will not guess: it refuses when it cannot restore the pre-session state safely. */
export class UndoRefused extends Error {
  override name = 'UndoRefused';
}

/** One thing undo will do. `root` is the folder the path must stay inside, with no link on the way. */
export type UndoStep =
  | {
      op: 'reset-branch';
      repo: string;
      branch: string | null;
      from: string;
      to: string | null;
      commits: number;
      paths: string[];
    }
  | {
      op: 'remove';
      path: string;
      /** Folders the removal leaves empty are removed up to this one (exclusive). */
      stop: string;
      root: string;
    }
  | { op: 'restore-git'; path: string; repo: string; commit: string; gitPath: string }
  | { op: 'restore-copy'; path: string; copy: string; mode: number; root: string }
  /** A path the safety net could not save: undo says so and leaves it as it is. */
  | { op: 'leave'; path: string; reason: string };

/** What undo will do, in order, and where it keeps the session's work first. */
export interface UndoPlan {
  root: string;
  steps: UndoStep[];
  /** The session's work, kept under refs/keel/undone/<id> before anything is changed. */
  keep: Array<{ repo: string; ref: string; tree: string; parent: string | null }>;
}

/** Work out how to return to the state before the session; throws UndoRefused when that is not safe. */
export function planUndo(records: SafetyNetRecord[], root: string): UndoPlan {
  const plan: UndoPlan = { root, steps: [], keep: [] };
  const leave: UndoStep[] = [];
  const repos = new Set<string>();
  for (const record of records) {
    if (record.kind !== 'git' || repos.has(record.repo)) continue;
    // the first snapshot of a repository is the state before the session
    repos.add(record.repo);
    planGit(record, plan);
    for (const s of record.skipped ?? []) {
      if (!s.path.endsWith('/')) leave.push({ op: 'leave', path: s.path, reason: s.reason });
    }
  }
  const seen = new Set(plan.steps.flatMap((s) => (s.op === 'reset-branch' ? [] : [s.path])));
  for (const record of records) {
    if (record.kind !== 'copy') continue;
    const skipped = new Map((record.skipped ?? []).map((s) => [s.path, s.reason]));
    for (const file of record.files) {
      if (seen.has(file.path)) continue;
      seen.add(file.path);
      const reason = skipped.get(file.path);
      const step = reason
        ? { op: 'leave' as const, path: file.path, reason }
        : planCopy(record.dir, file, root);
      if (step?.op === 'leave') leave.push(step);
      else if (step) plan.steps.push(step);
    }
  }
  // a path that now leads elsewhere (a folder above it swapped for a link) stops the whole undo
  const parents: ParentCache = new Map();
  for (const step of plan.steps) {
    if (step.op === 'remove' || step.op === 'restore-copy')
      refuseLinked(() => checkParents(step.path, step.root, parents));
    if (step.op === 'restore-git') refuseLinked(() => checkParents(step.path, step.repo, parents));
  }
  // what was never saved is named, beside the steps that undo the rest
  if (plan.steps.length) plan.steps.push(...leave);
  return plan;
}

function refuseLinked<T>(fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    if (err instanceof LinkedPath)
      throw new UndoRefused(`undo refused: ${err.message}; nothing there was touched`);
    throw err;
  }
}

function planGit(record: GitRecord, plan: UndoPlan): void {
  const { repo } = record;
  if (!existsSync(repo)) throw new UndoRefused(`the repository ${repo} is gone`);
  if (gitTry(repo, ['cat-file', '-e', `${record.commit}^{commit}`]) === undefined) {
    throw new UndoRefused(
      `the snapshot ${record.commit.slice(0, 12)} is no longer in ${repo} (was ${record.ref} deleted?)`,
    );
  }
  const before = plan.steps.length;
  const now = headCommit(repo);
  if (now !== record.head) plan.steps.push(planReset(record, now));
  const current = snapshotTree(repo, now);
  // what the snapshot could not save is left as it is now: neither restored (to what?) nor removed
  const unsaved = (record.skipped ?? []).map((s) => repoPath(repo, s.path) ?? s.path);
  const isUnsaved = (p: string) => unsaved.some((u) => p === u || p.startsWith(`${u}/`));
  const changed = new Set<string>();
  for (const change of diffTrees(repo, `${record.commit}^{tree}`, current.tree)) {
    // nested repositories (gitlinks) are the user's to manage; undo never deletes or rewrites one
    if (change.oldMode === '160000' || change.newMode === '160000') continue;
    if (isUnsaved(change.path)) continue;
    changed.add(change.path);
    const path = join(repo, change.path);
    if (change.status === 'A') plan.steps.push({ op: 'remove', path, stop: repo, root: repo });
    else plan.steps.push({ op: 'restore-git', path, repo, commit: record.commit, gitPath: change.path });
  }
  // too big (or special) to hash now, and not there before: the session made it; a nested repository stays
  for (const s of current.skipped) {
    if (s.path.endsWith('/') || isUnsaved(s.path) || changed.has(s.path)) continue;
    if (lstatOrUndefined(join(repo, s.path))) {
      plan.steps.push({ op: 'remove', path: join(repo, s.path), stop: repo, root: repo });
    }
  }
  if (plan.steps.length === before) return;
  const ref = record.ref.replace('refs/keel/sessions/', 'refs/keel/undone/');
  plan.keep.push({ repo, ref, tree: current.tree, parent: now });
}

function planReset(record: GitRecord, now: string | null): UndoStep {
  const { repo } = record;
  const where = `HEAD in ${repo}`;
  if (!now) throw new UndoRefused(`${where} no longer points at a commit; undo cannot tell what happened`);
  const branch = currentBranch(repo);
  if (branch !== record.branch) {
    throw new UndoRefused(
      `${where} moved from ${record.branch ?? 'a detached HEAD'} to ${branch ?? 'a detached HEAD'}; switch back first`,
    );
  }
  if (record.head && gitTry(repo, ['merge-base', '--is-ancestor', record.head, now]) === undefined) {
    throw new UndoRefused(
      `${where} moved to ${now.slice(0, 12)}, which no longer contains ${record.head.slice(0, 12)}`,
    );
  }
  const commits = commitsSince(repo, record.head, now);
  // keel's own commits: authored by keel (older --commit), or naming this very session in their trailer
  // a later run's snapshot is under <id>.run-…: its commits name the session itself
  const session = record.ref.replace('refs/keel/sessions/', '').replace(/\.run-[0-9a-z]+$/, '');
  const foreign = commits.filter(
    (c) => (c.name !== KEEL_IDENT.name || c.email !== KEEL_IDENT.email) && c.session !== session,
  );
  if (foreign.length) {
    const list = foreign.slice(0, 5).map((c) => `${c.sha.slice(0, 12)} ${c.name}: ${c.subject}`);
    throw new UndoRefused(
      `${where} moved past commits that are not keel's; undo will not rewrite them:\n  ${list.join('\n  ')}`,
    );
  }
  const paths = changedPaths(repo, record.head, now);
  return { op: 'reset-branch', repo, branch, from: now, to: record.head, commits: commits.length, paths };
}

function planCopy(dir: string, file: CopiedFile, root: string): UndoStep | undefined {
  // a file outside the workspace (a wider scope) still may not be reached through a link
  const within = isInside(file.path, root) ? root : parse(file.path).root;
  refuseLinked(() => checkParents(file.path, within));
  const now = lstatOrUndefined(file.path);
  if (!file.existed) {
    return now
      ? { op: 'remove', path: file.path, stop: dirname(file.created_dir ?? dirname(file.path)), root: within }
      : undefined;
  }
  if (!file.copy) return undefined;
  const copy = join(dir, file.copy);
  if (!existsSync(copy)) throw new UndoRefused(`the saved copy of ${file.path} is missing (${copy})`);
  const mode = file.mode ?? 0o644;
  const same =
    now?.isFile() && (now.mode & 0o7777) === mode && readFileSync(copy).equals(readFileSync(file.path));
  return same ? undefined : { op: 'restore-copy', path: file.path, copy, mode, root: within };
}

/** One line for people: `remove src/new.ts`, `restore src/a.ts`, `reset branch main to abc1234`. */
export function describeStep(step: UndoStep, root: string): string {
  const shown = (p: string) => (isInside(p, root) ? relative(root, p) || '.' : p);
  if (step.op === 'remove') return `remove ${shown(step.path)}`;
  if (step.op === 'leave') return `leave ${shown(step.path)} as it is (not saved: ${step.reason})`;
  if (step.op !== 'reset-branch') return `restore ${shown(step.path)}`;
  const branch = step.branch ? `branch ${step.branch.replace(/^refs\/heads\//, '')}` : 'HEAD';
  const undone = `${step.commits} keel commit${step.commits === 1 ? '' : 's'}`;
  return step.to
    ? `reset ${branch} to ${step.to.slice(0, 12)} (drops ${undone})`
    : `delete ${branch} (drops ${undone})`;
}

/** Carry out a plan; returns what was done, in order. Throws on the first step that fails. */
export function applyUndo(plan: UndoPlan): string[] {
  return refuseLinked(() => apply(plan));
}

function apply(plan: UndoPlan): string[] {
  const done: string[] = [];
  for (const keep of plan.keep) {
    // the session's work stays reachable, so an undo can itself be undone
    const commit = commitTree(keep.repo, keep.tree, keep.parent, 'keel: work tree before undo', {
      committer: 'keel',
    });
    git(keep.repo, ['update-ref', '-m', 'keel: undo', keep.ref, commit]);
  }
  const restores = new Map<string, { repo: string; commit: string; paths: string[] }>();
  for (const step of plan.steps) {
    if (step.op === 'reset-branch') resetBranch(step);
    else if (step.op === 'remove') removeNoFollow(step.path, step.stop, step.root);
    else if (step.op === 'restore-copy') restoreNoFollow(step.path, step.copy, step.mode, step.root);
    else if (step.op === 'restore-git') {
      const key = `${step.repo}\0${step.commit}`;
      const batch = restores.get(key) ?? { repo: step.repo, commit: step.commit, paths: [] };
      batch.paths.push(step.gitPath);
      restores.set(key, batch);
    }
    if (step.op !== 'restore-git') done.push(describeStep(step, plan.root));
  }
  for (const batch of restores.values()) {
    // checked again just before git writes: checkout-index replaces a linked folder rather than follow it,
    // but undo names such a path instead of silently turning a link into a folder
    const parents: ParentCache = new Map();
    for (const p of batch.paths) checkParents(join(batch.repo, p), batch.repo, parents);
    checkoutPaths(batch.repo, `${batch.commit}^{tree}`, batch.paths);
  }
  for (const step of plan.steps) if (step.op === 'restore-git') done.push(describeStep(step, plan.root));
  return done;
}

function resetBranch(step: Extract<UndoStep, { op: 'reset-branch' }>): void {
  if (step.to) {
    // --soft moves only the branch; the files are put back by the steps after this one
    git(step.repo, ['reset', '-q', '--soft', step.to]);
  } else if (step.branch) {
    git(step.repo, ['update-ref', '-m', 'keel: undo', '-d', step.branch, step.from]);
  }
  // the index entries keel's commits set go back to the old HEAD's; the user's other entries stay
  resetIndexPaths(step.repo, step.to, step.paths);
}
