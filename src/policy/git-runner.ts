/**
 * The one way keel starts git. git runs programs a repository configures (hooks, fsmonitor, filters, diff
 * drivers, pagers, helpers), and a downloaded repository or a model-made nested one is hostile, so every
 * call: runs against a repository found once (an explicit GIT_DIR and GIT_WORK_TREE, never discovery from a
 * subfolder), reads no system or global config, and overrides every setting that would start a program.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, realpathSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { ExecResult } from './effects.js';
import { runArgv } from './exec.js';
import { isInside } from './scope.js';

/** A git command that failed (or git that is missing), with git's own words. */
export class GitError extends Error {
  override name = 'GitError';
  constructor(
    message: string,
    readonly args: string[],
    readonly status: number | null,
  ) {
    super(message);
  }
}

/** A repository keel opened: the top of its work tree and its git dir, both absolute and canonical. */
export interface Repo {
  top: string;
  gitDir: string;
}

export interface GitRunOptions {
  /** A temporary index file to use instead of the repository's own. */
  index?: string;
  env?: Record<string, string>;
  input?: string | Buffer;
  /** Exit statuses that are answers, not failures: stdout is returned (`git merge-tree` exits 1 on a conflict). */
  tolerate?: number[];
}

// The user's own identity still names the commits the user owns; every other GIT_* of the caller could
// redirect git (GIT_DIR, GIT_INDEX_FILE, ...), configure it (GIT_CONFIG_*), or name a program (GIT_SSH, ...)
const KEPT_GIT_ENV = new Set([
  'GIT_AUTHOR_NAME',
  'GIT_AUTHOR_EMAIL',
  'GIT_AUTHOR_DATE',
  'GIT_COMMITTER_NAME',
  'GIT_COMMITTER_EMAIL',
  'GIT_COMMITTER_DATE',
]);
// programs git would otherwise take from the environment
const DROPPED_ENV = new Set(['SSH_ASKPASS', 'PAGER', 'EDITOR', 'VISUAL']);

const INERT_ENV: Record<string, string> = {
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_ATTR_NOSYSTEM: '1',
  GIT_TERMINAL_PROMPT: '0',
  // never let a read-only call rewrite the user's index as a side effect
  GIT_OPTIONAL_LOCKS: '0',
  GIT_PAGER: 'cat',
  GIT_EDITOR: 'true',
  GIT_SEQUENCE_EDITOR: 'true',
  GIT_SSH_COMMAND: 'false',
  GIT_PROTOCOL_FROM_USER: '0',
};

/** The environment of every git keel starts: the caller's without git's own variables, plus inert settings. */
export function gitEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (DROPPED_ENV.has(key) || (key.startsWith('GIT_') && !KEPT_GIT_ENV.has(key))) continue;
    env[key] = value;
  }
  return { ...env, ...INERT_ENV, ...extra };
}

// Every setting git 2.39 reads from a repository's config that starts a program, checked with a marker
// file (test/policy/git-runner.test.ts). Named drivers (filter.<x>, diff.<x>, merge.<x>) come from the
// repository's own config: see driverOverrides.
const STATIC_OVERRIDES = [
  'core.hooksPath=/dev/null',
  'core.fsmonitor=false',
  'core.pager=cat',
  'core.editor=true',
  'sequence.editor=true',
  'core.sshCommand=false',
  'core.askPass=',
  'core.gitProxy=none',
  'core.alternateRefsCommand=',
  'credential.helper=',
  'diff.external=',
  'interactive.diffFilter=',
  'gc.auto=0',
  'gc.autoDetach=false',
  'maintenance.auto=false',
  'commit.gpgSign=false',
  'tag.gpgSign=false',
  'tag.forceSignAnnotated=false',
  'push.gpgSign=false',
  'merge.verifySignatures=false',
  'log.showSignature=false',
  'gpg.program=false',
  'gpg.openpgp.program=false',
  'gpg.x509.program=false',
  'gpg.ssh.program=false',
  'gpg.ssh.defaultKeyCommand=',
  'protocol.allow=never',
  'submodule.recurse=false',
  'fetch.recurseSubmodules=false',
  'status.submoduleSummary=false',
  'fetch.writeCommitGraph=false',
].flatMap((setting) => ['-c', setting]);

// <section>.<subsection>.<key> settings that name a program, and the value that makes each inert
const DRIVER_KEYS: Record<string, Record<string, string>> = {
  filter: { clean: '', smudge: '', process: '', required: 'false' },
  diff: { textconv: '', command: '' },
  merge: { driver: '' },
  credential: { helper: '' },
  protocol: { allow: 'never' },
  trailer: { command: '', cmd: '' },
  remote: { uploadpack: 'false', receivepack: 'false', vcs: '', proxy: '' },
};
const DRIVER_NAME = new RegExp(`^(${Object.keys(DRIVER_KEYS).join('|')})\\.(.+)\\.[^.]+$`, 'i');
const INCLUDE_NAME = /^include(?:if\..+)?\.path$/i;

// subcommands that can show a diff, where textconv and external diff programs would run
const DIFF_COMMANDS = new Set([
  'diff',
  'diff-tree',
  'diff-index',
  'diff-files',
  'log',
  'show',
  'whatchanged',
]);

const driverCache = new Map<string, { key: string; args: string[] }>();

/**
 * An inert override for every driver the repository's config names (filter.<x>.clean, diff.<x>.textconv,
 * ...), read once per git dir and read again when its config file changes. A config with includes is read
 * on every call: an included file may lie in the work tree, where a session can change it.
 */
export function driverOverrides(repo: Repo): string[] {
  const key = fingerprint(repo);
  const cached = driverCache.get(repo.gitDir);
  if (cached && cached.key === key) return cached.args;
  // reading config runs nothing, and the static overrides keep even this call inert
  const names = spawnGit(repo.top, ['config', '-z', '--name-only', '--get-regexp', '.'], repoEnv(repo), {
    tolerate: [1],
  })
    .toString('utf8')
    .split('\0')
    .filter(Boolean);
  const settings = new Set<string>();
  let includes = false;
  for (const name of names) {
    if (INCLUDE_NAME.test(name)) includes = true;
    const m = DRIVER_NAME.exec(name);
    if (!m?.[1] || m[2] === undefined) continue;
    const section = m[1].toLowerCase();
    for (const [k, inert] of Object.entries(DRIVER_KEYS[section] ?? {}))
      settings.add(`${section}.${m[2]}.${k}=${inert}`);
  }
  const args = [...settings].flatMap((s) => ['-c', s]);
  if (includes) driverCache.delete(repo.gitDir);
  else driverCache.set(repo.gitDir, { key, args });
  return args;
}

// the config files git reads for this repository; a change to one means reading the drivers again
function fingerprint(repo: Repo): string {
  return [join(commonDir(repo), 'config'), join(repo.gitDir, 'config.worktree')]
    .map((file) => {
      try {
        const st = statSync(file);
        return `${st.ino}:${st.size}:${st.mtimeMs}`;
      } catch {
        return '-';
      }
    })
    .join('|');
}

// a linked worktree's git dir names the main one, which holds the shared config
function commonDir(repo: Repo): string {
  try {
    return resolve(repo.gitDir, readFileSync(join(repo.gitDir, 'commondir'), 'utf8').trim());
  } catch {
    return repo.gitDir;
  }
}

function repoEnv(repo: Repo, opts: GitRunOptions = {}): NodeJS.ProcessEnv {
  return gitEnv({
    ...opts.env,
    GIT_DIR: repo.gitDir,
    GIT_WORK_TREE: repo.top,
    ...(opts.index ? { GIT_INDEX_FILE: opts.index } : {}),
  });
}

/** `args` with --no-textconv --no-ext-diff after a diff-like subcommand, so no diff program runs. */
export function withDiffGuards(args: string[]): string[] {
  let i = 0;
  // skip the global options keel puts before a subcommand (-c NAME=VALUE, --literal-pathspecs)
  while (i < args.length && args[i]?.startsWith('-')) i += args[i] === '-c' ? 2 : 1;
  const sub = args[i];
  if (sub === undefined || !DIFF_COMMANDS.has(sub)) return args;
  return [...args.slice(0, i + 1), '--no-textconv', '--no-ext-diff', ...args.slice(i + 1)];
}

/** The argv after `git` for a call in `repo`: no pager, every override, then the caller's arguments. */
export function hardenedArgs(repo: Repo, args: string[]): string[] {
  return ['--no-pager', ...STATIC_OVERRIDES, ...driverOverrides(repo), ...withDiffGuards(args)];
}

/** Run git synchronously in `cwd` (inside `repo`'s work tree) and return stdout; throws GitError. */
export function runGit(repo: Repo, cwd: string, args: string[], opts: GitRunOptions = {}): Buffer {
  return spawnGit(
    cwd,
    hardenedArgs(repo, args),
    repoEnv(repo, opts),
    { input: opts.input ?? '', ...(opts.tolerate ? { tolerate: opts.tolerate } : {}) },
    args,
  );
}

/**
 * Run git asynchronously through the process runner, under an abort signal; resolves with its result.
 * Another git's lock is waited for as on the synchronous path (spawnGit), without blocking the loop.
 */
export async function runGitAsync(
  repo: Repo,
  cwd: string,
  args: string[],
  opts: { signal: AbortSignal; maxOutputBytes: number; timeoutS?: number },
): Promise<ExecResult> {
  const argv = ['git', ...hardenedArgs(repo, args)];
  let waited = 0;
  for (let pause = 25; ; pause = Math.min(pause * 2, 1_000)) {
    const result = await runArgv(argv, {
      cwd,
      env: repoEnv(repo),
      signal: opts.signal,
      maxOutputBytes: opts.maxOutputBytes,
      timeoutS: opts.timeoutS ?? 300,
    });
    if (result.exitCode === 0 || !LOCK_BUSY.test(result.stderr) || waited >= LOCK_WAIT_MS) return result;
    const ms = Math.round(pause * (0.5 + Math.random()));
    const slept = await new Promise<boolean>((resolve) => {
      if (opts.signal.aborted) return resolve(false);
      const timer = setTimeout(() => {
        opts.signal.removeEventListener('abort', onAbort);
        resolve(true);
      }, ms);
      const onAbort = () => {
        clearTimeout(timer);
        resolve(false);
      };
      opts.signal.addEventListener('abort', onAbort, { once: true });
    });
    if (!slept) return result;
    waited += ms;
  }
}

/** Run git outside any opened repository (discovery, `git init`): the same environment and static overrides. */
let gitMissingAnswer: boolean | undefined;

/** Whether git cannot be run at all (not on PATH): "not a repository" is then the wrong thing to say. */
export function gitMissing(): boolean {
  if (gitMissingAnswer === undefined) {
    try {
      execFileSync('git', ['--version'], { stdio: 'ignore' });
      gitMissingAnswer = false;
    } catch (err) {
      gitMissingAnswer = (err as { code?: string }).code === 'ENOENT';
    }
  }
  return gitMissingAnswer;
}

/** Why a folder has no repository keel can use: git is missing, or the folder is not in one. */
export function noRepoReason(dir: string, purpose: string): string {
  return gitMissing()
    ? `git is not installed (not found on PATH): ${purpose}`
    : `${dir} is not in a git repository: ${purpose}`;
}

export function runGitUnpinned(cwd: string, args: string[]): Buffer {
  return spawnGit(cwd, ['--no-pager', ...STATIC_OVERRIDES, ...args], gitEnv(), {}, args);
}

/**
 * Clone `url` into `dest` (a new folder) for `keel plugin install`: the static overrides (no hooks, no
 * helpers, no signing), only https and file transports, no submodules, one commit, and LFS's filters inert
 * (a pointer file stays a pointer). Throws GitError with git's words.
 */
export function cloneInert(url: string, dest: string): void {
  const args = [
    '--no-pager',
    ...STATIC_OVERRIDES,
    ...['-c', 'protocol.https.allow=always', '-c', 'protocol.file.allow=always'],
    ...['-c', 'filter.lfs.smudge=', '-c', 'filter.lfs.process=', '-c', 'filter.lfs.required=false'],
    'clone',
    '--quiet',
    '--depth=1',
    '--no-recurse-submodules',
    '--no-tags',
    '--template=',
    '--end-of-options',
    url,
    dest,
  ];
  spawnGit(process.cwd(), args, gitEnv({ GIT_LFS_SKIP_SMUDGE: '1' }), {}, ['clone', url]);
}

/**
 * git's answer when another git process holds a lock it needs (a ref, the index, the config, packed-refs):
 * `Unable to create '…/x.lock': File exists.` or `could not lock config file …`. git changed nothing
 * then, so the same command may simply run again.
 */
const LOCK_BUSY = /\.lock'?:? File exists|could not lock config file/i;

/** How long a command waits in all for another git's lock before its failure stands (a stale lock stays). */
const LOCK_WAIT_MS = 10_000;

/**
 * Run git; when another git process holds a lock (concurrent fixes on one repository each add a worktree
 * and a branch), wait with a growing, jittered backoff and run it again, up to LOCK_WAIT_MS in all.
 */
function spawnGit(
  cwd: string,
  argv: string[],
  env: NodeJS.ProcessEnv,
  opts: { input?: string | Buffer; tolerate?: number[] },
  shown: string[] = argv,
): Buffer {
  let waited = 0;
  for (let pause = 25; ; pause = Math.min(pause * 2, 1_000)) {
    try {
      return spawnGitOnce(cwd, argv, env, opts, shown);
    } catch (err) {
      if (!(err instanceof GitError) || !LOCK_BUSY.test(err.message) || waited >= LOCK_WAIT_MS) throw err;
      const ms = Math.round(pause * (0.5 + Math.random()));
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
      waited += ms;
    }
  }
}

function spawnGitOnce(
  cwd: string,
  argv: string[],
  env: NodeJS.ProcessEnv,
  opts: { input?: string | Buffer; tolerate?: number[] },
  shown: string[],
): Buffer {
  try {
    return execFileSync('git', argv, {
      cwd,
      env,
      input: opts.input ?? '',
      maxBuffer: 1 << 30,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
  } catch (err) {
    const e = err as { code?: string; status?: number | null; stderr?: Buffer; stdout?: Buffer };
    if (e.code === 'ENOENT') throw new GitError('git is not installed (not found on PATH)', shown, null);
    if (e.status != null && opts.tolerate?.includes(e.status)) return e.stdout ?? Buffer.alloc(0);
    const said = e.stderr?.toString('utf8').trim();
    throw new GitError(
      `git ${shown.join(' ')} failed: ${said || `exit ${e.status}`}`,
      shown,
      e.status ?? null,
    );
  }
}

// Repositories keel opened, by top; and what each session's workspace root was pinned to at its start
const opened = new Map<string, Repo>();
// PENDING: pinned, discovery not run yet
const PENDING = 'pending';
const workspaces = new Map<string, Repo | null | typeof PENDING>();

/**
 * Find the repository that holds `dir` (git's discovery, run once per workspace or command at its start)
 * and remember it; throws GitError when git refuses (missing, dubious ownership), undefined outside one.
 */
export function discoverRepo(dir: string): Repo | undefined {
  const revParse = ['rev-parse', '--is-inside-work-tree', '--show-toplevel', '--absolute-git-dir'];
  let out: string;
  try {
    out = runGitUnpinned(dir, revParse).toString('utf8');
  } catch (err) {
    if (!(err instanceof GitError)) throw err;
    if (/not a git repository/i.test(err.message)) return undefined;
    // a repository owned by someone else: the user's own safe.directory entries decide, as for plain git.
    // Read only then, so the common case costs one git process, not two
    if (!/dubious ownership/i.test(err.message) || !safeDirectories().length) throw err;
    out = runGitUnpinned(dir, [...safeDirectories(), ...revParse]).toString('utf8');
  }
  const [inside, top, gitDir] = out.split('\n');
  if (inside !== 'true' || !top || !gitDir) return undefined;
  const repo = { top: realpathSync.native(top), gitDir: realpathSync.native(gitDir) };
  opened.set(repo.top, repo);
  return repo;
}

/** Open the repository whose top is exactly `top` (a path keel recorded, or a folder it just made one). */
export function openRepo(top: string): Repo | undefined {
  const known = opened.get(top);
  if (known) return known;
  try {
    const repo = discoverRepo(top);
    // a folder that is no longer a repository's top must not lead keel into the repository above it
    if (repo && repo.top === realpathSync.native(top)) return repo;
  } catch (err) {
    if (!(err instanceof GitError)) throw err;
  }
  return undefined;
}

/**
 * Pin a session's workspace root at session start: from then on git runs only against the repository
 * discovery finds from that root, never from a subfolder. Discovery itself waits for the first git call
 * (a read-only session that lists nothing starts no git); it still starts at the root, whose own `.git`
 * no tool may write and the sandbox's sweep removes if a command creates one.
 */
export function pinWorkspace(root: string): void {
  if (!workspaces.has(root)) workspaces.set(root, PENDING);
}

function discoverPinned(root: string): Repo | null {
  let repo: Repo | undefined;
  try {
    repo = discoverRepo(root);
  } catch (err) {
    if (!(err instanceof GitError)) throw err;
  }
  workspaces.set(root, repo ?? null);
  return repo ?? null;
}

/**
 * The repository pinned for the workspace that holds `dir` (the deepest pinned root): null when that
 * workspace had none at its start, undefined when `dir` lies in no pinned workspace.
 */
export function workspaceRepo(dir: string): Repo | null | undefined {
  let best: string | undefined;
  for (const root of workspaces.keys()) {
    if (isInside(dir, root) && (best === undefined || root.length > best.length)) best = root;
  }
  if (best === undefined) return undefined;
  const pinned = workspaces.get(best);
  return pinned === PENDING ? discoverPinned(best) : (pinned ?? null);
}

/** The opened repository whose work tree holds `cwd` (the deepest), or undefined. */
export function repoAt(cwd: string): Repo | undefined {
  const pinned = workspaceRepo(cwd);
  if (pinned !== undefined) return pinned ?? undefined;
  let best: Repo | undefined;
  for (const repo of opened.values()) {
    if (isInside(cwd, repo.top) && (best === undefined || repo.top.length > best.top.length)) best = repo;
  }
  return best;
}

const userConfigCache = new Map<string, Map<string, string[]>>();

/**
 * The user's own settings from their global git config (~/.gitconfig, XDG), read as data: user.name,
 * user.email and safe.directory. Reading config runs nothing.
 */
export function userConfig(): Map<string, string[]> {
  // keyed on where the files are, so a change of HOME (tests, a server per user) reads them anew
  const where = [process.env.HOME, process.env.XDG_CONFIG_HOME, process.env.GIT_CONFIG_GLOBAL].join('\0');
  const cached = userConfigCache.get(where);
  if (cached) return cached;
  const env: NodeJS.ProcessEnv = { ...gitEnv(), GIT_CONFIG_GLOBAL: process.env.GIT_CONFIG_GLOBAL ?? '' };
  if (!env.GIT_CONFIG_GLOBAL) delete env.GIT_CONFIG_GLOBAL;
  const config = new Map<string, string[]>();
  try {
    const out = spawnGit(
      '/',
      ['config', '--global', '--includes', '-z', '--get-regexp', '^(user\\.(name|email)|safe\\.directory)$'],
      env,
      { tolerate: [1] },
    ).toString('utf8');
    for (const entry of out.split('\0')) {
      const nl = entry.indexOf('\n');
      if (!entry) continue;
      const name = (nl === -1 ? entry : entry.slice(0, nl)).toLowerCase();
      config.set(name, [...(config.get(name) ?? []), nl === -1 ? '' : entry.slice(nl + 1)]);
    }
  } catch (err) {
    if (!(err instanceof GitError)) throw err;
  }
  userConfigCache.set(where, config);
  return config;
}

// safe.directory is honoured only from protected config (the command line among it): pass the user's own
function safeDirectories(): string[] {
  return (userConfig().get('safe.directory') ?? []).flatMap((dir) => ['-c', `safe.directory=${dir}`]);
}
