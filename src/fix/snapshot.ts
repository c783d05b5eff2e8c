/** The snapshot a fix works in: a git worktree on a new branch, or a copy; the user's checkout is never touched. */
import { cpSync, existsSync, mkdirSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { join, relative } from 'node:path';
import { findRepo, GitError, git, gitTry, initRepo, KEEL_IDENT, openRepoAt } from '../policy/git.js';

/** Folders a project's tests need that git does not hold: linked (not copied) into the snapshot. */
const DEPENDENCY_DIRS = ['node_modules', '.venv', 'venv', 'env', 'vendor', '.tox'];

/** What running the tests leaves behind: never part of a fix, even in a project that does not ignore it. */
const TEST_ARTIFACTS = ['__pycache__/', '*.py[cod]', '.pytest_cache/'];

export interface Snapshot {
  kind: 'worktree' | 'copy';
  /** Where the fix works. */
  dir: string;
  /** The top of the snapshot (the worktree or the copy); `dir` may be a subfolder of it. */
  top: string;
  /** The user's repository (or folder). */
  source: string;
  /** The top of the user's repository, for a worktree: where the branch lives. */
  repo?: string;
  branch?: string;
  /** The commit the branch starts from. */
  base?: string;
  /** Dependency folders linked from the user's checkout, by name. */
  linked: string[];
}

/** A short slug from an issue text, for the branch name. */
export function slugify(text: string): string {
  const slug = text
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 32)
    .replace(/-+$/g, '');
  return slug || 'issue';
}

/** Create the snapshot for a fix of the project at `source`. */
export function createSnapshot(source: string, runId: string, slug: string, worktreesDir: string): Snapshot {
  const dir = join(worktreesDir, runId);
  mkdirSync(worktreesDir, { recursive: true });
  const repo = findRepo(source);
  if (!repo) {
    // not a git repository: copy it (without dependency folders, which are linked), then make it one
    cpSync(source, dir, {
      recursive: true,
      filter: (src) => !DEPENDENCY_DIRS.includes(relative(source, src)) && !src.endsWith('/.git'),
    });
    initRepo(dir);
    git(dir, ['add', '-A']);
    commitAll(dir, 'keel: snapshot of the folder before the fix');
    return { kind: 'copy', dir, top: dir, source, linked: linkDependencies(source, dir) };
  }
  const base = git(repo, ['rev-parse', 'HEAD']).trim();
  const short = runId.slice(-6);
  const branch = `keel/fix-${slug}-${short}`;
  // the runner's overrides keep the repository's post-checkout hook and smudge filters from running here
  git(repo, ['worktree', 'add', '-q', '-b', branch, dir, base]);
  if (!openRepoAt(dir)) throw new GitError(`git worktree add made no worktree at ${dir}`, ['worktree'], null);
  // the fix works where the user asked (a subfolder of a repo stays a subfolder)
  const sub = relative(repo, source);
  const workDir = sub ? join(dir, sub) : dir;
  return {
    kind: 'worktree',
    dir: workDir,
    top: dir,
    source,
    repo,
    branch,
    base,
    linked: linkDependencies(source, workDir),
  };
}

/**
 * Link the dependency folders the user installed (untracked, usually ignored) so the snapshot runs the
 * same tests the user runs. A link, not a copy: nothing is downloaded, and the sandbox keeps them read-only.
 */
function linkDependencies(source: string, dir: string): string[] {
  const linked: string[] = [];
  for (const name of DEPENDENCY_DIRS) {
    const from = join(source, name);
    const to = join(dir, name);
    if (!existsSync(from) || existsSync(to)) continue;
    symlinkSync(from, to, 'dir');
    linked.push(name);
  }
  // a monorepo's packages keep their own node_modules one level down
  for (const group of ['packages', 'apps']) {
    const root = join(source, group);
    if (!existsSync(root)) continue;
    for (const pkg of readdirSync(root)) {
      const from = join(root, pkg, 'node_modules');
      const to = join(dir, group, pkg, 'node_modules');
      if (existsSync(from) && existsSync(join(dir, group, pkg)) && !existsSync(to)) {
        symlinkSync(from, to, 'dir');
        linked.push(join(group, pkg, 'node_modules'));
      }
    }
  }
  return linked;
}

function commitAll(dir: string, message: string): string {
  const identity = ['-c', `user.name=${KEEL_IDENT.name}`, '-c', `user.email=${KEEL_IDENT.email}`];
  git(dir, [
    ...identity,
    '-c',
    'core.hooksPath=/dev/null',
    'commit',
    '-q',
    '--allow-empty',
    '--no-verify',
    '-m',
    message,
  ]);
  return git(dir, ['rev-parse', 'HEAD']).trim();
}

/** Throw away an attempt: back to the last commit, untracked files removed, linked dependencies kept. */
export function rollback(snapshot: Snapshot): void {
  git(snapshot.dir, ['reset', '-q', '--hard', 'HEAD']);
  const keep = snapshot.linked.flatMap((name) => ['-e', name]);
  git(snapshot.dir, ['clean', '-q', '-fd', ...keep]);
}

/** The diff of the attempt against the last commit, including new files (without staging them for good). */
export function attemptDiff(snapshot: Snapshot): { patch: string; files: string[] } {
  const keep = new Set(snapshot.linked);
  // intent-to-add makes new files show in the diff; reset afterwards leaves the index as it was
  const artifacts = TEST_ARTIFACTS.map((pattern) => `--exclude=${pattern}`);
  const untracked = (
    gitTry(snapshot.dir, ['ls-files', '--others', '--exclude-standard', ...artifacts, '-z']) ?? ''
  )
    .split('\0')
    .filter((p) => p && !keep.has(p));
  if (untracked.length) git(snapshot.dir, ['add', '-N', '--', ...untracked]);
  const patch = git(snapshot.dir, ['diff', '--no-color', '--no-ext-diff', 'HEAD', '--', '.']);
  const files = git(snapshot.dir, ['diff', '--name-only', 'HEAD', '--', '.']).split('\n').filter(Boolean);
  if (untracked.length) git(snapshot.dir, ['reset', '-q', '--', ...untracked]);
  return { patch, files };
}

/** Commit the attempt on the fix branch (git hooks disabled: the repository's hooks are not keel's to run). */
export function commitAttempt(snapshot: Snapshot, files: string[], message: string): string {
  git(snapshot.dir, ['add', '-A', '--', ...files]);
  return commitAll(snapshot.dir, message);
}

/** Remove the worktree folder (the branch and its commits stay in the user's repository). */
export function removeWorktree(snapshot: Snapshot): void {
  if (snapshot.kind !== 'worktree') return;
  const repo = snapshot.repo;
  if (repo) gitTry(repo, ['worktree', 'remove', '--force', snapshot.top]);
  rmSync(snapshot.top, { recursive: true, force: true });
  if (repo) gitTry(repo, ['worktree', 'prune']);
}

/** Throw away a snapshot nothing was attempted in: its worktree and its (empty) branch. */
export function discardSnapshot(snapshot: Snapshot): void {
  if (snapshot.kind !== 'worktree') {
    rmSync(snapshot.top, { recursive: true, force: true });
    return;
  }
  removeWorktree(snapshot);
  const repo = snapshot.repo;
  if (repo && snapshot.branch) gitTry(repo, ['branch', '-q', '-D', snapshot.branch]);
}
