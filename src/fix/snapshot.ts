/** The snapshot a fix works in: a git worktree on a new branch, or a copy; the user's checkout is never touched. */
import {
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readlinkSync,
  realpathSync,
  rmSync,
  symlinkSync,
} from 'node:fs';
import { isAbsolute, join, relative } from 'node:path';
import { RunError } from '../agent/terminal.js';
import { findRepo, GitError, git, gitTry, initRepo, KEEL_IDENT, openRepoAt } from '../policy/git.js';

/** Folders a project's tests need that git does not hold: linked (not copied) into the snapshot. */
const DEPENDENCY_DIRS = ['node_modules', '.venv', 'venv', 'env', 'vendor', '.tox'];

/**
 * Folders inside node_modules that tools write their caches to (xo and babel `.cache`, vite `.vite`). The
 * user's node_modules stays read-only, so the snapshot's own node_modules holds these, empty and writable:
 * a cache miss costs time, a read-only cache fails the run.
 */
const MODULE_CACHES = ['.cache', '.vite', '.vitest'];

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
  /** Dependency folders linked from the user's checkout, by name (relative to `dir`). */
  linked: string[];
  /** Where each linked folder really is in the user's checkout: visible to the tests, never writable. */
  linkedFrom: string[];
  /**
   * node_modules folders of the snapshot (absolute) that hold a link per package of the user's
   * node_modules plus writable, empty cache folders (`MODULE_CACHES`); rebuilt before each test run.
   */
  moduleShadows: string[];
  /**
   * Packages (`name` or `@scope/name`, per shadow) that a tool writes into (`vitest --typecheck`'s
   * `.tsbuildinfo`): copied into the shadow instead of linked, afresh before each run, so the tool can write
   * and the user's package never changes. Found at baseline (`writablePackage`).
   */
  writableCopies?: Map<string, Set<string>>;
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

/** The branch a snapshot of run `runId` is made on, in a git repository. */
export function snapshotBranch(slug: string, runId: string): string {
  return `keel/fix-${slug}-${runId.slice(-6)}`;
}

/** Create the snapshot for a fix of the project at `source`. */
export function createSnapshot(
  given: string,
  runId: string,
  slug: string,
  worktreesDir: string,
  /** The commit the branch starts at instead of HEAD (keel goal's); a git repository only. */
  from?: string,
): Snapshot {
  // git names the repository by its real path; the folder must be named the same way to lie inside it
  const source = realpathSync(given);
  const dir = join(worktreesDir, runId);
  mkdirSync(worktreesDir, { recursive: true });
  const repo = findRepo(source);
  if (!repo && from !== undefined)
    throw new RunError(
      'CONFIG_ERROR',
      `${source} is not a git repository: there is no commit ${from} to start from`,
    );
  if (!repo) {
    // not a git repository: copy it (without dependency folders, which are linked), then make it one
    cpSync(source, dir, {
      recursive: true,
      filter: (src) => !DEPENDENCY_DIRS.includes(relative(source, src)) && !src.endsWith('/.git'),
    });
    initRepo(dir);
    git(dir, ['add', '-A']);
    commitAll(dir, 'keel: snapshot of the folder before the fix');
    return { kind: 'copy', dir, top: dir, source, ...linkDependencies(source, dir) };
  }
  // the fix branch starts at HEAD: a repository without a commit has nothing to branch from
  if (from !== undefined && !gitTry(repo, ['rev-parse', '--verify', '-q', `${from}^{commit}`])?.trim())
    throw new RunError('CONFIG_ERROR', `--base ${from}: no such commit in ${repo}`);
  const base = gitTry(repo, ['rev-parse', '--verify', '-q', `${from ?? 'HEAD'}^{commit}`])?.trim();
  if (!base)
    throw new RunError(
      'ENVIRONMENT_ERROR',
      `${repo} has no commits yet: keel fix works on a branch from HEAD; commit your work first (git add -A && git commit)`,
    );
  const branch = snapshotBranch(slug, runId);
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
    ...linkDependencies(source, workDir),
  };
}

type Linked = Pick<Snapshot, 'linked' | 'linkedFrom' | 'moduleShadows'>;

/**
 * Link the dependency folders the user installed (untracked, usually ignored) so the snapshot runs the
 * same tests the user runs. Links, not copies: nothing is downloaded, and the sandbox keeps the user's
 * folders read-only. A node_modules becomes a folder of links (see `MODULE_CACHES`).
 */
function linkDependencies(source: string, dir: string): Linked {
  const out: Linked = { linked: [], linkedFrom: [], moduleShadows: [] };
  const link = (from: string, name: string): void => {
    const to = join(dir, name);
    if (!existsSync(from) || existsSync(to)) return;
    if (name === 'node_modules' || name.endsWith('/node_modules')) {
      shadowModules(from, to);
      out.moduleShadows.push(to);
    } else {
      symlinkSync(from, to, 'dir');
    }
    out.linked.push(name);
    out.linkedFrom.push(realpathSync(from));
  };
  for (const name of DEPENDENCY_DIRS) link(join(source, name), name);
  // a monorepo's packages keep their own node_modules one level down
  for (const group of ['packages', 'apps']) {
    const root = join(source, group);
    if (!existsSync(root)) continue;
    for (const pkg of readdirSync(root)) {
      if (existsSync(join(dir, group, pkg)))
        link(join(root, pkg, 'node_modules'), join(group, pkg, 'node_modules'));
    }
  }
  return out;
}

/**
 * Make `to` a node_modules of links to each entry of the user's `from`, with its own empty cache folders.
 * Node resolves a package through the link to its real folder, so its own dependencies resolve as they do
 * in the user's checkout; only what a tool writes at the top (a cache) lands in the snapshot.
 */
function shadowModules(from: string, to: string, copies: Set<string> = new Set()): void {
  rmSync(to, { recursive: true, force: true });
  mkdirSync(to, { recursive: true });
  const scopes = new Set(
    [...copies].filter((name) => name.startsWith('@')).map((name) => name.split('/')[0]),
  );
  for (const entry of readdirSync(from)) {
    if (MODULE_CACHES.includes(entry)) continue;
    if (copies.has(entry)) copyPackage(join(from, entry), join(to, entry));
    else if (scopes.has(entry)) shadowScope(join(from, entry), join(to, entry), entry, copies);
    // the programs link to `../pkg/...`: resolved in the shadow, they run the writable copy
    else if (entry === '.bin' && copies.size > 0) shadowLinks(join(from, entry), join(to, entry));
    else symlinkSync(join(from, entry), join(to, entry));
  }
  for (const cache of MODULE_CACHES) mkdirSync(join(to, cache));
}

/** A scope folder of links, with its packages in `copies` copied. */
function shadowScope(from: string, to: string, scope: string, copies: Set<string>): void {
  mkdirSync(to);
  for (const entry of readdirSync(from)) {
    if (copies.has(`${scope}/${entry}`)) copyPackage(join(from, entry), join(to, entry));
    else symlinkSync(join(from, entry), join(to, entry));
  }
}

/** A folder holding the same links as `from` (relative targets then resolve inside `to`'s parent). */
function shadowLinks(from: string, to: string): void {
  mkdirSync(to);
  for (const entry of readdirSync(from, { withFileTypes: true })) {
    const path = join(from, entry.name);
    symlinkSync(entry.isSymbolicLink() ? readlinkSync(path) : path, join(to, entry.name));
  }
}

/** A writable copy of a package; its own node_modules stays a link, since only the package is written to. */
function copyPackage(from: string, to: string): void {
  const real = realpathSync(from);
  cpSync(real, to, {
    recursive: true,
    dereference: true,
    filter: (src) => src !== join(real, 'node_modules'),
  });
  if (existsSync(join(real, 'node_modules')))
    symlinkSync(join(real, 'node_modules'), join(to, 'node_modules'));
}

/**
 * Make the package that holds `path` (a file a tool failed to write, in a linked node_modules of the
 * user's) a writable copy in the snapshot from the next run on. Returns its name, or undefined when the path
 * is in no linked node_modules or the package is a copy already.
 */
export function writablePackage(snapshot: Snapshot, path: string): string | undefined {
  for (const shadow of snapshot.moduleShadows) {
    const from = snapshot.linkedFrom[snapshot.linked.indexOf(relative(snapshot.dir, shadow))];
    if (from === undefined) continue;
    const rel = relative(from, path);
    if (rel === '' || rel.startsWith('..') || isAbsolute(rel)) continue;
    const parts = rel.split('/');
    const name = parts[0]?.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
    // a file at the top of node_modules, or in a package's own node_modules, is not one package's to copy
    // (pnpm's `.pnpm` store is many packages: not copied whole)
    if (name === undefined || name.startsWith('.') || parts.length < (name.startsWith('@') ? 3 : 2)) continue;
    // a package linked from elsewhere (`npm link`) is not in the folder the sandbox shows: never copied in
    const real = realOrUndefined(join(from, name));
    if (real === undefined || !`${real}/`.startsWith(`${from}/`)) continue;
    const copies = snapshot.writableCopies ?? new Map<string, Set<string>>();
    snapshot.writableCopies = copies;
    const set = copies.get(shadow) ?? new Set<string>();
    if (set.has(name)) return undefined;
    set.add(name);
    copies.set(shadow, set);
    return name;
  }
  return undefined;
}

/**
 * Rebuild the snapshot's node_modules from the user's before a test run: whatever a command or the model
 * put there (a package of its own, a link swapped, a warm cache) is gone, and the baseline and the verdict
 * see the same dependencies.
 */
export function refreshDependencies(snapshot: Snapshot): void {
  for (const shadow of snapshot.moduleShadows) {
    const from = snapshot.linkedFrom[snapshot.linked.indexOf(relative(snapshot.dir, shadow))];
    if (from !== undefined && existsSync(from))
      shadowModules(from, shadow, snapshot.writableCopies?.get(shadow));
  }
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
  const linked = (p: string) => snapshot.linked.some((name) => p === name || p.startsWith(`${name}/`));
  // intent-to-add makes new files show in the diff; reset afterwards leaves the index as it was
  const artifacts = TEST_ARTIFACTS.map((pattern) => `--exclude=${pattern}`);
  const untracked = (
    gitTry(snapshot.dir, ['ls-files', '--others', '--exclude-standard', ...artifacts, '-z']) ?? ''
  )
    .split('\0')
    .filter((p) => p && !linked(p));
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

function realOrUndefined(path: string): string | undefined {
  try {
    return realpathSync(path);
  } catch {
    return undefined;
  }
}
