/** keel's own git calls, all through the hardened runner: a pinned repository, a committer, temporary indexes. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { isAbsolute, join, relative, resolve, sep } from 'node:path';
import {
  discoverRepo,
  GitError,
  type GitRunOptions,
  openRepo,
  type Repo,
  repoAt,
  runGit,
  runGitUnpinned,
  userConfig,
  workspaceRepo,
} from './git-runner.js';

export { GitError, gitEnv, noRepoReason, pinWorkspace } from './git-runner.js';

/** The author of every commit keel makes; undo trusts only commits by this author. */
export const KEEL_IDENT = { name: 'keel', email: 'keel@localhost' } as const;

export type GitOptions = GitRunOptions;

// keel addresses a repository by a folder inside a work tree it opened; nothing else is ever discovered
function opened(cwd: string, args: string[]): Repo {
  const repo = repoAt(cwd);
  if (!repo)
    throw new GitError(
      `keel runs git only in a repository it opened first; ${cwd} is not in one`,
      args,
      null,
    );
  return repo;
}

/** Run git in `cwd` (inside an opened repository) and return its stdout as bytes; throws GitError on failure. */
export function gitBuffer(cwd: string, args: string[], opts: GitOptions = {}): Buffer {
  return runGit(opened(cwd, args), cwd, args, opts);
}

/** Run git in `cwd` and return its stdout; throws GitError on failure. */
export function git(cwd: string, args: string[], opts: GitOptions = {}): string {
  return gitBuffer(cwd, args, opts).toString('utf8');
}

/** Run git and return its stdout, or undefined when it exits non-zero (or git is missing). */
export function gitTry(cwd: string, args: string[], opts: GitOptions = {}): string | undefined {
  try {
    return git(cwd, args, opts);
  } catch (err) {
    if (err instanceof GitError) return undefined;
    throw err;
  }
}

/**
 * The top of the work tree that holds `dir`, or undefined outside one (or without git). Inside a workspace
 * pinned at session start that is the pinned repository (or none); elsewhere git's discovery, run once.
 */
export function findRepo(dir: string): string | undefined {
  const pinned = workspaceRepo(dir);
  if (pinned !== undefined) return pinned?.top;
  try {
    return discoverRepo(dir)?.top;
  } catch (err) {
    if (err instanceof GitError) return undefined;
    throw err;
  }
}

/** Make `dir` a new repository (`git init`) and open it. */
export function initRepo(dir: string, args: string[] = []): string {
  runGitUnpinned(dir, ['init', '-q', ...args]);
  const repo = openRepo(dir);
  if (!repo) throw new GitError(`git init made no repository at ${dir}`, ['init'], null);
  return repo.top;
}

/** Open a repository by its exact top (a path keel recorded or just created); undefined when it is not one. */
export function openRepoAt(top: string): string | undefined {
  return openRepo(top)?.top;
}

/** A repository as a session first finds it: its top, HEAD's commit and branch, and whether a ref exists. */
export interface RepoState {
  repo: string;
  /** null on an unborn branch. */
  head: string | null;
  /** refs/heads/..., or null when detached. */
  branch: string | null;
  /** Whether the ref asked about exists. */
  hasRef: boolean;
}

const OBJECT_ID = /^[0-9a-f]{40}(?:[0-9a-f]{24})?$/;

/**
 * findRepo, headCommit, currentBranch and whether `ref` exists: the repository, then one git process (three
 * on an unborn branch). With --revs-only, rev-parse prints what resolves in argument order and, at the first
 * name that does not, drops it and everything after it without failing; so `ref` goes last, after HEAD.
 */
export function repoState(dir: string, ref?: string): RepoState | undefined {
  const repo = findRepo(dir);
  if (!repo) return undefined;
  const out = gitTry(repo, [
    'rev-parse',
    '--revs-only',
    'HEAD^{commit}',
    '--symbolic-full-name',
    'HEAD',
    ...(ref ? [ref] : []),
  ]);
  const [head, name, found] = (out ?? '').split('\n');
  if (!head || !OBJECT_ID.test(head)) {
    // unborn: nothing after HEAD printed
    const hasRef = ref !== undefined && gitTry(repo, ['rev-parse', '-q', '--verify', ref]) !== undefined;
    return { repo, head: null, branch: currentBranch(repo), hasRef };
  }
  // HEAD's full name: its branch, or HEAD itself when detached
  const branch = name?.startsWith('refs/') ? name : null;
  return { repo, head, branch, hasRef: ref !== undefined && found === ref };
}

/** The commit HEAD points at, or null on an unborn branch. */
export function headCommit(repo: string): string | null {
  return gitTry(repo, ['rev-parse', '-q', '--verify', 'HEAD^{commit}'])?.trim() || null;
}

/** The branch HEAD is on (refs/heads/...), or null when detached. */
export function currentBranch(repo: string): string | null {
  return gitTry(repo, ['symbolic-ref', '-q', 'HEAD'])?.trim() || null;
}

/** A path relative to the repository, or undefined when it lies outside it. */
export function repoPath(repo: string, path: string): string | undefined {
  const rel = relative(repo, resolve(repo, path));
  if (!rel || rel === '..' || rel.startsWith(`..${sep}`) || isAbsolute(rel)) return undefined;
  return rel.split(sep).join('/');
}

/** NUL-separated paths for git's `-z --stdin` and `--pathspec-file-nul` inputs. */
export function nul(paths: string[]): string {
  return paths.map((p) => `${p}\0`).join('');
}

/**
 * The committer for a commit the user owns, as environment variables: the user's GIT_COMMITTER_* (or
 * EMAIL), else the repository's user.name/email, else the user's global ones (read as data, since global
 * config is off for git itself), else keel.
 */
function committerEnv(repo: string): Record<string, string> {
  const local = new Map<string, string>();
  // a later value wins, as with --get
  for (const line of (gitTry(repo, ['config', '--get-regexp', '^user\\.(name|email)$']) ?? '').split('\n')) {
    const space = line.indexOf(' ');
    if (line)
      local.set(space === -1 ? line : line.slice(0, space), space === -1 ? '' : line.slice(space + 1));
  }
  const pick = (key: 'name' | 'email'): string | undefined => {
    const fromLocal = local.get(`user.${key}`)?.trim();
    if (fromLocal) return fromLocal;
    return userConfig().get(`user.${key}`)?.at(-1)?.trim() || undefined;
  };
  const env: Record<string, string> = {};
  if (!process.env.GIT_COMMITTER_NAME) env.GIT_COMMITTER_NAME = pick('name') ?? KEEL_IDENT.name;
  if (!process.env.GIT_COMMITTER_EMAIL && !process.env.EMAIL)
    env.GIT_COMMITTER_EMAIL = pick('email') ?? KEEL_IDENT.email;
  return env;
}

/**
 * Make a commit of `tree` without hooks or signing prompts; returns its sha. With `committer: 'keel'` (for
 * commits only keel's own refs hold) keel authors and commits it, and the user's identity is not looked up;
 * otherwise the committer is the user's (keel where the user has none), and so is the author with
 * `author: 'user'` (a commit on the user's branch: DCO and CLA checks look at its author).
 */
export function commitTree(
  repo: string,
  tree: string,
  parent: string | null,
  message: string,
  opts: { committer?: 'keel' | 'user'; author?: 'keel' | 'user' } = {},
): string {
  const keel = opts.committer === 'keel';
  // hooks and signing are off for every call the runner makes; --no-gpg-sign says so here too
  const args = ['commit-tree', '--no-gpg-sign', tree];
  if (parent) args.push('-p', parent);
  args.push('-m', message);
  const committer: Record<string, string> = keel
    ? { GIT_COMMITTER_NAME: KEEL_IDENT.name, GIT_COMMITTER_EMAIL: KEEL_IDENT.email }
    : committerEnv(repo);
  const env: Record<string, string> = { ...committer };
  if (opts.author === 'user' && !keel) {
    // the user's identity, as git would take it: their GIT_AUTHOR_* first, else what names the committer
    const name =
      process.env.GIT_AUTHOR_NAME || committer.GIT_COMMITTER_NAME || process.env.GIT_COMMITTER_NAME;
    const email =
      process.env.GIT_AUTHOR_EMAIL || committer.GIT_COMMITTER_EMAIL || process.env.GIT_COMMITTER_EMAIL;
    env.GIT_AUTHOR_NAME = name || KEEL_IDENT.name;
    env.GIT_AUTHOR_EMAIL = email || process.env.EMAIL || KEEL_IDENT.email;
  } else {
    env.GIT_AUTHOR_NAME = KEEL_IDENT.name;
    env.GIT_AUTHOR_EMAIL = KEEL_IDENT.email;
  }
  return git(repo, args, { env }).trim();
}

/** The trailer naming the keel session a commit on the user's branch came from (`keel undo` trusts it). */
export const SESSION_TRAILER = 'Keel-Session';

/** Run `fn` with the path of a fresh index file in a temporary folder that is removed afterwards. */
export function withTempIndex<T>(fn: (index: string) => T): T {
  const dir = mkdtempSync(join(tmpdir(), 'keel-index-'));
  try {
    return fn(join(dir, 'index'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Fill a temporary index with `base` (a commit or tree), or leave it empty when there is none. */
export function readTree(repo: string, index: string, base: string | null): void {
  git(repo, base ? ['read-tree', base] : ['read-tree', '--empty'], { index });
}

/**
 * The tree of the whole work tree as `git add -A` sees it: tracked and untracked files, not ignored
 * ones. Built in a temporary index, so the user's index, stash and files are not touched.
 */
export function worktreeTree(repo: string, base: string | null): string {
  return withTempIndex((index) => {
    // a temporary index file that does not exist yet reads as empty: an unborn HEAD needs no read-tree
    if (base) readTree(repo, index, base);
    git(repo, ['-c', 'core.fsmonitor=false', 'add', '-A'], { index });
    return git(repo, ['write-tree'], { index }).trim();
  });
}

/** The paths among `paths` (repo-relative) that git ignores; tracked files in `index` are never ignored. */
export function ignoredPaths(repo: string, paths: string[], index?: string): string[] {
  if (!paths.length) return [];
  const out = gitTry(repo, ['check-ignore', '-z', '--stdin'], {
    input: nul(paths),
    ...(index ? { index } : {}),
  });
  return (out ?? '').split('\0').filter(Boolean);
}

export interface TreeChange {
  status: string;
  /** The mode in the first tree and in the second (000000 when absent). */
  oldMode: string;
  newMode: string;
  path: string;
}

/** What differs between two trees, file by file, without rename detection. */
export function diffTrees(repo: string, from: string, to: string): TreeChange[] {
  const out = git(repo, ['diff-tree', '-r', '-z', '--no-renames', from, to]);
  const parts = out.split('\0');
  const changes: TreeChange[] = [];
  for (let i = 0; i + 1 < parts.length; i += 2) {
    const [oldMode = '', newMode = '', , , status = ''] = (parts[i] ?? '').slice(1).split(' ');
    changes.push({ status, oldMode, newMode, path: parts[i + 1] ?? '' });
  }
  return changes;
}

/** The ref name `<prefix>/<UTC timestamp>`, with `-<n>` from the second try on. */
export function stampedRefName(prefix: string, at: Date, n = 1): string {
  const stamp = at.toISOString().replace(/[-:]/g, '').replace(/\.\d+/, '');
  return `${prefix}/${stamp}${n > 1 ? `-${n}` : ''}`;
}

/** Point a new ref `<prefix>/<UTC timestamp>` (a full name) at `commit`, with a suffix if that name is taken. */
export function createStampedRef(repo: string, prefix: string, commit: string, at = new Date()): string {
  for (let i = 1; i <= 100; i++) {
    const name = stampedRefName(prefix, at, i);
    // an empty old value creates the ref only if it does not exist yet
    if (gitTry(repo, ['update-ref', name, commit, '']) !== undefined) return name;
  }
  throw new GitError(`could not create ${stampedRefName(prefix, at)} in ${repo}`, ['update-ref'], null);
}

/** Create refs that must not exist yet (full name -> sha) in one transaction: all of them, or none and false. */
export function createRefs(repo: string, refs: Record<string, string>, message: string): boolean {
  const input = Object.entries(refs)
    .map(([ref, sha]) => `create ${ref}\0${sha}\0`)
    .join('');
  return gitTry(repo, ['update-ref', '-m', message, '--stdin', '-z'], { input }) !== undefined;
}

export interface CommitInfo {
  sha: string;
  name: string;
  email: string;
  subject: string;
  /** The session its `Keel-Session:` trailer names, if any. */
  session?: string;
}

/** The commits reachable from `head` but not from `base` (all of them when base is null), newest first. */
export function commitsSince(repo: string, base: string | null, head: string): CommitInfo[] {
  const range = base ? `${base}..${head}` : head;
  // -z ends each commit with NUL and %x00 separates its fields: five fields per commit
  const trailer = `%(trailers:key=${SESSION_TRAILER},valueonly,separator=%x20)`;
  const f = git(repo, ['log', '-z', `--format=%H%x00%an%x00%ae%x00%s%x00${trailer}`, range]).split('\0');
  const commits: CommitInfo[] = [];
  for (let i = 0; i + 4 < f.length; i += 5) {
    const session = (f[i + 4] ?? '').trim();
    commits.push({
      sha: f[i] ?? '',
      name: f[i + 1] ?? '',
      email: f[i + 2] ?? '',
      subject: f[i + 3] ?? '',
      ...(session ? { session } : {}),
    });
  }
  return commits;
}

/** The paths that differ between two commits (every path of `to` when `from` is null). */
export function changedPaths(repo: string, from: string | null, to: string): string[] {
  const args = from
    ? ['diff-tree', '-r', '-z', '--name-only', '--no-renames', from, to]
    : ['ls-tree', '-r', '-z', '--name-only', to];
  return git(repo, args).split('\0').filter(Boolean);
}

/** Write `paths` from `tree` into the work tree (content, mode, filters), without touching the user's index. */
export function checkoutPaths(repo: string, tree: string, paths: string[]): void {
  if (!paths.length) return;
  withTempIndex((index) => {
    readTree(repo, index, tree);
    git(repo, ['checkout-index', '-f', '-z', '--stdin'], { index, input: nul(paths) });
  });
}

/** Set the user's index entries for `paths` to their state in `tree` (HEAD when null), leaving every other entry. */
export function resetIndexPaths(repo: string, tree: string | null, paths: string[]): void {
  if (!paths.length) return;
  const args = ['--literal-pathspecs', 'reset', '-q', '--pathspec-from-file=-', '--pathspec-file-nul'];
  if (tree) args.push(tree);
  git(repo, args, { input: nul(paths) });
}

/**
 * Commit only `files` (absolute, or relative to `root`) on the current branch, authored by the user (the
 * message carries a `Keel-Session:` trailer) with hooks disabled. The commit is built in a temporary index from HEAD, so the user's other staged changes stay
 * staged; afterwards only these files' index entries are set to the new commit. Ignored files are left out.
 * Returns the commit sha, or undefined outside git or when there is nothing to commit.
 */
export function commitSessionFiles(root: string, files: string[], message: string): string | undefined {
  const repo = findRepo(root);
  if (!repo) return undefined;
  const wanted = [
    ...new Set(
      files.map((f) => repoPath(repo, resolve(root, f))).filter((p): p is string => p !== undefined),
    ),
  ];
  if (!wanted.length) return undefined;
  const head = headCommit(repo);
  return withTempIndex((index) => {
    readTree(repo, index, head);
    const ignored = new Set(ignoredPaths(repo, wanted, index));
    const paths = wanted.filter((p) => !ignored.has(p));
    if (!paths.length) return undefined;
    git(repo, ['update-index', '--add', '--remove', '-z', '--stdin'], { index, input: nul(paths) });
    const tree = git(repo, ['write-tree'], { index }).trim();
    const before = head ? git(repo, ['rev-parse', `${head}^{tree}`]).trim() : emptyTree(repo);
    if (tree === before) return undefined;
    const commit = commitTree(repo, tree, head, message, { author: 'user' });
    // the old value makes this fail, rather than lose work, if the branch moved meanwhile
    git(repo, ['update-ref', '-m', `keel: ${message.split('\n')[0] ?? ''}`, 'HEAD', commit, head ?? '']);
    resetIndexPaths(repo, null, paths);
    return commit;
  });
}

/** The empty tree's id in this repository's hash format. */
export function emptyTree(repo: string): string {
  return withTempIndex((index) => git(repo, ['write-tree'], { index }).trim());
}
