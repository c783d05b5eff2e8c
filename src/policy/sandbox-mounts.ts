/**
 * The bubblewrap mount plan: what of the host a sandboxed command sees. The sandbox starts from an empty
 * root; only the system folders, the toolchains on PATH and the workspace are bound into it, and
 * credentials, home folders and keel's own state that lie inside a visible folder are covered again.
 */
import { existsSync, lstatSync, readdirSync, readlinkSync, realpathSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, delimiter, dirname, isAbsolute, join } from 'node:path';
import { isInside } from './scope.js';

/** Which group a mount belongs to; at the same path a later layer wins. */
export const LAYER = { host: 0, root: 1, writable: 2, readOnly: 3, hidden: 4 } as const;
export type Layer = (typeof LAYER)[keyof typeof LAYER];

/** One bubblewrap mount operation. `hide` covers a folder with an empty read-only tmpfs, a file with /dev/null. */
export type Mount =
  | { kind: 'ro-bind' | 'bind' | 'dev' | 'proc' | 'dir' | 'hide'; path: string; layer: Layer }
  | { kind: 'symlink'; path: string; target: string; layer: Layer }
  | { kind: 'tmpfs'; path: string; sizeBytes: number; layer: Layer };

// Top-level folders a build needs; anything else at / (/srv, /mnt, /var, /work, ...) does not exist inside
const SYSTEM_DIRS = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32', '/etc', '/opt', '/nix'];

// Credentials that sit inside the visible folders: /etc is needed whole (passwd, ssl certs, alternatives)
const ETC_SECRETS = [
  'shadow',
  'shadow-',
  'gshadow',
  'gshadow-',
  'sudoers',
  'sudoers.d',
  'security/opasswd',
  'ssl/private',
  'krb5.keytab',
];
// A toolchain's own folder may keep a registry token (cargo's credentials, an npm prefix's npmrc)
const TOOLCHAIN_SECRETS = ['credentials', 'credentials.toml', 'etc/npmrc'];
// Only matters when a home is visible (a workspace that is, or contains, a home folder)
const HOME_SECRETS = [
  '.ssh',
  '.gnupg',
  '.aws',
  '.azure',
  '.docker',
  '.kube',
  '.netrc',
  '.npmrc',
  '.pypirc',
  '.git-credentials',
  '.password-store',
  '.config',
  '.local/share',
  '.local/state',
  '.cache',
];

/**
 * Variables that name a toolchain's home: passed into the sandbox, and the folder bound read-only, so
 * rustup, pyenv, nvm, a virtualenv, conda, a JDK, Go's module cache and corepack's package managers work
 * there as they do in the user's shell.
 */
const TOOLCHAIN_HOMES = [
  'RUSTUP_HOME',
  'CARGO_HOME',
  'PYENV_ROOT',
  'NVM_DIR',
  'NVM_BIN',
  'VIRTUAL_ENV',
  'CONDA_PREFIX',
  'JAVA_HOME',
  'GOROOT',
  'GOPATH',
  'GOMODCACHE',
  'COREPACK_HOME',
];
/** Variables that pick a toolchain's version without naming a folder. */
const TOOLCHAIN_CHOICES = ['PYENV_VERSION', 'RUSTUP_TOOLCHAIN', 'VIRTUAL_ENV_PROMPT'];

/** What of the host this machine's sandboxes show and cover, decided once per sandbox. */
export interface HostView {
  /** Read-only binds and symlinks for the system folders and toolchains. */
  mounts: Mount[];
  /** Host paths that must not show through any visible folder (checked per command: they may appear later). */
  hidden: string[];
  /** The toolchain folders bound besides the system folders, for `keel doctor`. */
  toolchains: string[];
  /** Variables for toolchains that find themselves through HOME, which the sandbox moves (rustup). */
  env: Record<string, string>;
  /** The host's home folders, canonical. */
  homes: string[];
}

/** The system folders as they are here: a merged-usr `/bin -> usr/bin` stays a symlink. */
export function systemMounts(): Mount[] {
  const mounts: Mount[] = [];
  for (const dir of SYSTEM_DIRS) {
    const stat = lstatOrUndefined(dir);
    if (!stat) continue;
    // keep a link as written (`usr/bin`), so paths read inside the sandbox as they do on the host
    if (stat.isSymbolicLink())
      mounts.push({ kind: 'symlink', path: dir, target: readlinkSync(dir), layer: 0 });
    else if (stat.isDirectory()) mounts.push({ kind: 'ro-bind', path: dir, layer: 0 });
  }
  return mounts;
}

/**
 * Build the host view for a sandbox over `visible` (the workspace and scope): system folders, each PATH
 * entry outside them bound read-only with its toolchain's prefix (`~/.pyenv/shims` binds `~/.pyenv`), and
 * the list of things to cover: homes, XDG folders, /run, keel's state, /etc and toolchain credentials.
 */
export function hostView(env: NodeJS.ProcessEnv, stateDirs: string[], visible: string[]): HostView {
  const mounts = systemMounts();
  const homes = unique([env.HOME, homedir()].filter(isAbsolutePath).map(real));
  const shown = (dir: string) => mounts.some((m) => m.kind === 'ro-bind' && isInside(dir, m.path));
  const toolchains: string[] = [];
  // node itself: keel's own probes and many test runners call process.execPath
  for (const entry of [...(env.PATH ?? '').split(delimiter), dirname(process.execPath)]) {
    if (!isAbsolute(entry) || !existsSync(entry)) continue;
    const dir = toolchainRoot(real(entry), homes);
    if (!dir || shown(dir) || visible.some((v) => isInside(dir, v))) continue;
    if (toolchains.some((t) => isInside(dir, t))) continue;
    for (let i = toolchains.length - 1; i >= 0; i--)
      if (isInside(toolchains[i] ?? '', dir)) toolchains.splice(i, 1);
    toolchains.push(dir);
  }
  const extra: Record<string, string> = {};
  for (const dir of [...toolchains]) {
    // rustup's proxies (~/.cargo/bin/cargo) look for their toolchains in $HOME/.rustup
    const rustup = join(dirname(dir), '.rustup');
    if (basename(dir) === '.cargo' && existsSync(rustup)) {
      toolchains.push(rustup);
      extra.RUSTUP_HOME = rustup;
    }
  }
  const homesView = toolchainHomes(env, homes, stateDirs);
  Object.assign(extra, homesView.env);
  for (const dir of homesView.dirs) {
    if (shown(dir) || visible.some((v) => isInside(dir, v)) || toolchains.some((t) => isInside(dir, t)))
      continue;
    toolchains.push(dir);
  }
  for (const dir of toolchains) mounts.push({ kind: 'ro-bind', path: dir, layer: 0 });
  const uid = process.getuid?.();
  const xdg = [
    env.XDG_CONFIG_HOME,
    env.XDG_DATA_HOME,
    env.XDG_STATE_HOME,
    env.XDG_CACHE_HOME,
    env.XDG_RUNTIME_DIR,
    uid === undefined ? undefined : `/run/user/${uid}`,
  ].filter(isAbsolutePath);
  const hidden = [
    '/root',
    '/home',
    '/run',
    '/var/run',
    ...homes,
    ...homes.flatMap((h) => HOME_SECRETS.map((s) => join(h, s))),
    ...xdg,
    ...stateDirs,
    ...ETC_SECRETS.map((s) => join('/etc', s)),
    ...sshHostKeys(),
    ...toolchains.flatMap((t) => TOOLCHAIN_SECRETS.map((s) => join(t, s))),
  ];
  return { mounts, hidden: unique(hidden), toolchains, env: extra, homes };
}

/**
 * The toolchain homes keel's environment names (`TOOLCHAIN_HOMES`), and corepack's cache of package
 * managers where it is by default. A value that would show a home, a home's credentials or keel's state
 * (`JAVA_HOME=$HOME`, `GOPATH=/`) is not bound and not passed.
 */
export function toolchainHomes(
  env: NodeJS.ProcessEnv,
  homes: string[],
  stateDirs: string[],
): { dirs: string[]; env: Record<string, string> } {
  const dirs: string[] = [];
  const out: Record<string, string> = {};
  const bindable = (dir: string): boolean =>
    dir !== '/' &&
    !homes.some((h) => isInside(h, dir)) &&
    !stateDirs.some((d) => isInside(d, dir) || isInside(dir, d)) &&
    !homes.some(
      (h) =>
        HOME_SECRETS.some((secret) => isInside(dir, join(h, secret))) &&
        !isInside(dir, join(h, '.cache', 'node', 'corepack')),
    ) &&
    !['/root', '/home', '/run', '/var/run'].some((top) => isInside(top, dir));
  const candidates: Array<[string, string | undefined]> = TOOLCHAIN_HOMES.map((name) => [name, env[name]]);
  // corepack keeps the managers it downloaded in ~/.cache/node/corepack, which the moved HOME would lose
  if (env.COREPACK_HOME === undefined) {
    const cached = homes.map((h) => join(h, '.cache', 'node', 'corepack')).find((dir) => existsSync(dir));
    if (cached !== undefined) candidates.push(['COREPACK_HOME', cached]);
  }
  for (const [name, value] of candidates) {
    if (!isAbsolutePath(value) || !existsSync(value)) continue;
    const dir = real(value);
    if (!bindable(dir)) continue;
    dirs.push(dir);
    out[name] = dir;
  }
  for (const name of TOOLCHAIN_CHOICES) {
    const value = env[name];
    if (value !== undefined && /^[\w.@+-]+$/.test(value)) out[name] = value;
  }
  return { dirs: unique(dirs), env: out };
}

/** The bwrap arguments for a set of mounts: outer paths first, so a deeper mount always lands on top. */
export function mountArgs(mounts: Mount[]): string[] {
  const ordered = mounts
    .map((m, i) => ({ m, i, depth: depth(m.path) }))
    .sort((a, b) => a.depth - b.depth || a.m.layer - b.m.layer || a.i - b.i)
    .map((x) => x.m);
  const args: string[] = [];
  // remounting read-only must wait until every mount below has its mount point
  const readOnlyLater: string[] = [];
  for (const m of ordered) {
    if (m.kind === 'symlink') args.push('--symlink', m.target, m.path);
    else if (m.kind === 'tmpfs') args.push('--size', String(m.sizeBytes), '--tmpfs', m.path);
    else if (m.kind === 'dev' || m.kind === 'proc' || m.kind === 'dir') args.push(`--${m.kind}`, m.path);
    else if (m.kind === 'hide') {
      if (isDirectory(m.path)) {
        args.push('--size', '4096', '--tmpfs', m.path);
        readOnlyLater.push(m.path);
      } else {
        args.push('--ro-bind', '/dev/null', m.path);
      }
    } else args.push(`--${m.kind}`, m.path, m.path);
  }
  // the empty root itself: a command cannot fill it (no size cap) or plant files at the top
  if (!mounts.some((m) => m.path === '/')) readOnlyLater.push('/');
  for (const path of readOnlyLater) args.push('--remount-ro', path);
  return args;
}

/**
 * The `hidden` paths that exist and would show through a bind in `mounts`, as hide mounts. The workspace
 * and scope themselves are never hidden (keel's state files inside them still are, one by one).
 */
export function hideMounts(hidden: string[], mounts: Mount[], keep: string[]): Mount[] {
  const binds = mounts.filter((m) => m.kind === 'ro-bind' || m.kind === 'bind').map((m) => m.path);
  // the deepest bind that shows a path's host content; undefined when nothing does
  const shownBy = (path: string) =>
    binds.filter((b) => isInside(path, b)).sort((a, b) => b.length - a.length)[0];
  const paths = hidden
    .filter((c) => shownBy(c) !== undefined && lstatOrUndefined(c) !== undefined)
    .map(real)
    .sort((a, b) => depth(a) - depth(b));
  const out: Mount[] = [];
  for (const path of unique(paths)) {
    const bind = shownBy(path);
    if (bind === undefined || keep.includes(path)) continue;
    // already covered by a hidden folder, unless a bind inside that folder shows it again
    if (out.some((h) => isInside(path, h.path) && isInside(h.path, bind))) continue;
    out.push({ kind: 'hide', path, layer: LAYER.hidden });
  }
  return out;
}

// `~/.pyenv/shims` and `~/.cargo/bin` need their prefix (versions, libexec); a home's own bin does not
function toolchainRoot(dir: string, homes: string[]): string | undefined {
  if (dir === '/' || homes.some((h) => isInside(h, dir))) return undefined;
  if (!['bin', 'sbin', 'shims'].includes(basename(dir))) return dir;
  const parent = dirname(dir);
  const isHome = homes.includes(parent) || parent === '/root' || dirname(parent) === '/home';
  if (isHome || parent === '/' || basename(parent) === '.local') return dir;
  return parent;
}

function sshHostKeys(): string[] {
  try {
    return readdirSync('/etc/ssh')
      .filter((name) => name.endsWith('_key'))
      .map((name) => join('/etc/ssh', name));
  } catch {
    return [];
  }
}

function depth(path: string): number {
  return path.split('/').filter(Boolean).length;
}

function isAbsolutePath(path: string | undefined): path is string {
  return path !== undefined && isAbsolute(path);
}

function unique(paths: string[]): string[] {
  return [...new Set(paths)];
}

function real(path: string): string {
  try {
    return realpathSync.native(path);
  } catch {
    return path;
  }
}

function lstatOrUndefined(path: string): ReturnType<typeof lstatSync> | undefined {
  try {
    return lstatSync(path);
  } catch {
    return undefined;
  }
}

function isDirectory(path: string): boolean {
  return lstatOrUndefined(path)?.isDirectory() ?? false;
}
