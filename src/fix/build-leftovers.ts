/**
 * The worktree and branch a build writes its tests in, named before they are made, so a server killed
 * mid-build (kill -9, no `finally`) leaves a record of them; the next server removes them as the build
 * itself would have (discardSnapshot). A record is only a name: a worktree goes only when it is a folder
 * right inside keel's worktrees folder that this project's repository holds as a worktree on that branch.
 */
import { existsSync, lstatSync, realpathSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { findRepo, gitTry } from '../policy/git.js';
import { discardSnapshot, slugify, snapshotBranch } from './snapshot.js';

export interface TestsSnapshotNames {
  worktree: string;
  branch: string;
}

/** The slug of a build's tests branch (`keel/fix-tests-<feature>-<id>`). */
export function testsSlug(feature: string): string {
  return `tests-${slugify(feature)}`;
}

/** Where the tests of build `feature` with snapshot id `id` are written, and on which branch. */
export function testsSnapshotNames(feature: string, id: string, worktreesDir: string): TestsSnapshotNames {
  return { worktree: join(worktreesDir, id), branch: snapshotBranch(testsSlug(feature), id) };
}

/**
 * Remove the tests worktree and branch a killed build left in the repository of `project`; returns what
 * was removed (`worktree …`, `branch …`), nothing when the names are not a keel tests worktree of it.
 */
export function discardLeftTests(project: string, worktreesDir: string, left: unknown): string[] {
  const named = left as Partial<Record<keyof TestsSnapshotNames, unknown>> | null;
  const { worktree, branch } = named ?? {};
  if (typeof worktree !== 'string' || typeof branch !== 'string') return [];
  if (!branch.startsWith('keel/fix-tests-') || !/^[A-Za-z0-9_-]+$/.test(basename(worktree))) return [];
  const repo = findRepo(project);
  if (!repo) return [];
  // right inside keel's worktrees folder, and a folder itself (a link there could point anywhere)
  const dir = placed(worktree);
  if (dirname(dir) !== canonical(worktreesDir)) return [];
  if (existsSync(worktree) && !lstatSync(worktree).isDirectory()) return [];
  // and a worktree of this repository, on that branch
  const listed = (gitTry(repo, ['worktree', 'list', '--porcelain']) ?? '').split('\n\n');
  const entry = listed
    .map((block) => block.split('\n'))
    .find((lines) => lines.some((l) => l.startsWith('worktree ') && placed(l.slice(9)) === dir));
  if (!entry?.includes(`branch refs/heads/${branch}`)) return [];
  discardSnapshot({
    kind: 'worktree',
    dir,
    top: dir,
    source: repo,
    repo,
    branch,
    linked: [],
    linkedFrom: [],
    moduleShadows: [],
  });
  const gone = gitTry(repo, ['rev-parse', '--verify', '-q', `refs/heads/${branch}`]) === undefined;
  return [`worktree ${dir}`, ...(gone ? [`branch ${branch} in ${repo}`] : [])];
}

/** A path with its folder's links resolved, the last name kept as it is (it may be gone, or a link). */
function placed(path: string): string {
  return join(canonical(dirname(path)), basename(path));
}

function canonical(path: string): string {
  try {
    return realpathSync.native(path);
  } catch {
    return path;
  }
}
