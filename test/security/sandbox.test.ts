/** The shell sandbox against the real bubblewrap, on real temporary folders. */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cgroupBases } from '../../src/policy/cgroup.js';
import { runArgv } from '../../src/policy/exec.js';
import {
  createSandbox,
  proveSandbox,
  type Sandbox,
  SandboxError,
  type SandboxLimits,
  type SandboxOptions,
} from '../../src/policy/sandbox.js';
import { bwrapArgs, protectedPaths } from '../../src/policy/sandbox-bwrap.js';
import { dockerExecArgs, dockerKillArgs, dockerRunArgs } from '../../src/policy/sandbox-docker.js';
import { findProgram } from '../../src/policy/sandbox-limits.js';
import { git, gitRepo, tempDir, writeFiles } from '../helpers/tmp.js';

const BWRAP = findProgram('bwrap', process.env.PATH);
const LIMITS: SandboxLimits = { cpu_s: 60, memory_mb: 1024, processes: 128, file_size_mb: 64, output_kb: 64 };
const never = new AbortController().signal;

if (!BWRAP)
  console.warn('SKIPPED: bubblewrap (bwrap) is not installed; the sandbox tests need it (CI installs it)');

const opened: Sandbox[] = [];
afterAll(async () => {
  for (const sandbox of opened) await sandbox.close();
});

async function sandbox(root: string, extra: Partial<SandboxOptions> = {}): Promise<Sandbox> {
  const made = await createSandbox({
    kind: 'bwrap',
    root,
    writable: [root],
    network: false,
    limits: LIMITS,
    ...extra,
  });
  opened.push(made);
  return made;
}

function run(box: Sandbox, command: string, timeoutS = 20) {
  return box.run(command, { timeoutS, signal: never });
}

async function loopbackServer(): Promise<{ server: Server; port: number; accepted: () => number }> {
  let count = 0;
  const server = createServer((socket) => {
    count++;
    // the client may reset the connection first
    socket.on('error', () => {});
    socket.end('hello\n');
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return { server, port, accepted: () => count };
}

const CONNECT = `const s=require('net').connect(Number(process.argv[1]),'127.0.0.1');
s.on('connect',()=>{console.log('connected');s.destroy()});s.on('error',(e)=>{console.log(e.code);process.exitCode=3});`;

describe.skipIf(!BWRAP)('bwrap sandbox', () => {
  it('streams the output of a command to a listener through bwrap and its limits', async () => {
    const box = await sandbox(tempDir());
    const pieces: string[] = [];
    const result = await box.run('echo first; sleep 0.2; echo second', {
      timeoutS: 20,
      signal: never,
      onOutput: (text) => pieces.push(text),
    });
    expect(result.stdout).toBe('first\nsecond\n');
    expect(pieces).toEqual(['first\n', 'second\n']);
  });

  let root: string;
  let box: Sandbox;

  beforeAll(async () => {
    root = gitRepo({ 'README.md': '# demo\n', 'src/a.txt': 'a\n' });
    box = await sandbox(root);
  });

  it('runs a command in the workspace root', async () => {
    const result = await run(box, 'echo hi; pwd');
    expect(result).toMatchObject({ exitCode: 0, timedOut: false });
    expect(result.stdout).toBe(`hi\n${root}\n`);
    expect(box.kind).toBe('bwrap');
  });

  it('lets a command write inside the scope', async () => {
    const result = await run(box, 'echo made > src/new.txt && cat README.md');
    expect(result.exitCode).toBe(0);
    expect(readFileSync(join(root, 'src/new.txt'), 'utf8')).toBe('made\n');
  });

  it('refuses writes outside the scope, visible or not', async () => {
    const sibling = tempDir('keel-sibling-');
    // /var does not exist inside (only system folders are bound), a sibling under /tmp is hidden by the
    // private /tmp, and /usr is visible but read-only
    const visible = mkdtempSync('/var/tmp/keel-outside-');
    try {
      const result = await run(box, `echo x > ${sibling}/f; echo y > ${visible}/f; echo z > /usr/keel-f`);
      expect(existsSync(join(sibling, 'f'))).toBe(false);
      expect(existsSync(join(visible, 'f'))).toBe(false);
      expect(existsSync('/usr/keel-f')).toBe(false);
      expect(result.stderr).toMatch(/Read-only file system/);
    } finally {
      rmSync(visible, { recursive: true, force: true });
    }
  });

  it('keeps .git read-only inside a writable scope', async () => {
    const result = await run(
      box,
      'echo evil > .git/hooks/pre-commit; git config user.name hacked; echo ok > x.txt',
    );
    expect(existsSync(join(root, '.git/hooks/pre-commit'))).toBe(false);
    expect(readFileSync(join(root, '.git/config'), 'utf8')).not.toContain('hacked');
    expect(result.stderr).toMatch(/Read-only file system|could not lock config file/);
    expect(existsSync(join(root, 'x.txt'))).toBe(true);
  });

  it("keeps a worktree's .git file and its git dirs read-only, and git still works", async () => {
    const tree = join(tempDir('keel-wt-'), 'tree');
    git(root, 'worktree', 'add', '-q', tree);
    const wt = await sandbox(tree);
    const result = await run(
      wt,
      'git status --short >/dev/null && echo git-ok; echo x > .git; git branch evil',
    );
    expect(result.stdout).toContain('git-ok');
    expect(readFileSync(join(tree, '.git'), 'utf8')).toMatch(/^gitdir:/);
    expect(git(root, 'branch', '--list', 'evil')).toBe('');
  });

  it('keeps /tmp private and HOME on it', async () => {
    const name = `keel-private-${randomBytes(4).toString('hex')}`;
    const result = await run(
      box,
      `echo x > /tmp/${name} && ls /tmp && echo "home=$HOME" && touch "$HOME/.cache"`,
    );
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toContain(name);
    expect(result.stdout).toContain('home=/tmp/home');
    expect(existsSync(join('/tmp', name))).toBe(false);
  });

  it('passes only an allowlisted environment, so secrets never reach the command', async () => {
    const env = {
      ...process.env,
      KEEL_API_KEY: 'sk-keel-secret',
      OPENAI_API_KEY: 'sk-openai-secret',
      GITHUB_TOKEN: 'ghp-secret',
      AWS_SECRET_ACCESS_KEY: 'aws-secret',
    };
    const leaky = await sandbox(root, { env });
    const result = await run(leaky, 'env');
    expect(result.exitCode).toBe(0);
    expect(result.stdout).not.toMatch(/secret/);
    expect(result.stdout).toMatch(/^PATH=/m);
    expect(leaky.describe()).toContain('environment: only');
  });

  it('blocks the network, including the host loopback, unless sandbox_network is on', async () => {
    const { server, port, accepted } = await loopbackServer();
    try {
      const blocked = await box.run([process.execPath, '-e', CONNECT, String(port)], {
        timeoutS: 20,
        signal: never,
      });
      expect(blocked.stdout).toMatch(/ECONNREFUSED|ENETUNREACH/);
      expect(accepted()).toBe(0);
      const open = await sandbox(root, { network: true });
      const allowed = await open.run([process.execPath, '-e', CONNECT, String(port)], {
        timeoutS: 20,
        signal: never,
      });
      expect(allowed.stdout).toContain('connected');
      expect(accepted()).toBe(1);
    } finally {
      server.close();
    }
  });

  it('proves itself for keel doctor', async () => {
    const proof = await proveSandbox(box);
    expect(proof).toMatchObject({ writeOutsideBlocked: true, networkBlocked: true });
    expect(proof.detail).toMatch(/refused|never reached the host/);
  });

  it('kills a command that ignores SIGTERM at the timeout, with its whole tree', async () => {
    const started = Date.now();
    const result = await run(box, 'trap "" TERM; (trap "" TERM; sleep 60) & sleep 60', 1);
    expect(result.timedOut).toBe(true);
    expect(Date.now() - started).toBeLessThan(4500);
  });

  it('does not let background jobs outlive the command', async () => {
    const marker = `keel-bg-${randomBytes(4).toString('hex')}`;
    // the trailing `:` keeps sh (and the marker in its argv) alive while sleep runs
    const result = await run(
      box,
      `sh -c 'sleep 30; : ${marker}' & sleep 0.2; ps -eo args | grep -c '^sh -c sleep 30; : ${marker}'`,
    );
    expect(result.stdout).toBe('1\n');
    expect(execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' })).not.toContain(marker);
  });

  // 200 MB is 3000 times the cap, and more than the memory bound: kept whole, the output alone would break it
  it('caps a 200 MB output at 64 KB and keeps memory bounded', async () => {
    const before = process.memoryUsage().rss;
    const result = await run(box, "head -c 200000000 /dev/zero | tr '\\0' a", 30);
    expect(result.exitCode).toBe(0);
    expect(result.truncated).toBe(true);
    expect(result.stdout.length).toBeLessThan(LIMITS.output_kb * 1024 + 200);
    // every byte went through: all but the 64 KB kept are counted
    expect(result.stdout).toContain(`[... ${200_000_000 - LIMITS.output_kb * 1024} bytes omitted ...]`);
    expect(process.memoryUsage().rss - before).toBeLessThan(128 * 1024 * 1024);
  });

  it('contains a fork bomb', async (ctx) => {
    const small = await sandbox(root, { limits: { ...LIMITS, processes: 50 } });
    const { mechanism, note } = small.limits().processes;
    // say which mechanism is in force rather than pass without one
    console.info(`process limit mechanism: ${mechanism} (${note ?? ''})`);
    if (mechanism === 'none') ctx.skip(`no process limit can be enforced here: ${note ?? ''}`);
    const result = await run(
      small,
      'i=0; while [ $i -lt 2000 ]; do sleep 5 & i=$((i+1)); done; echo spawned-all',
      20,
    );
    expect(result.stderr).toMatch(/fork|Resource temporarily unavailable/i);
    expect(result.stdout).not.toContain('spawned-all');
    expect(result.timedOut).toBe(false);
  });

  it('enforces the cpu, file size and memory limits', async () => {
    const tight = await sandbox(root, { limits: { ...LIMITS, cpu_s: 1, file_size_mb: 1, memory_mb: 64 } });
    const cpu = await run(tight, 'while :; do :; done', 20);
    expect(cpu.timedOut).toBe(false);
    expect(cpu.exitCode).not.toBe(0);
    const file = await run(tight, 'head -c 3000000 /dev/zero > big.bin', 20);
    expect(file.exitCode).not.toBe(0);
    expect(readFileSync(join(root, 'big.bin')).length).toBeLessThanOrEqual(1024 * 1024);
    const memory = await run(tight, 'x=$(head -c 300000000 /dev/zero | tr "\\0" a); echo survived', 20);
    expect(memory.stdout).not.toContain('survived');
    expect(tight.describe()).toMatch(/memory 64 MB via (cgroup v[12]|rlimit)/);
  });

  it('removes its per-command cgroups', async () => {
    await run(box, 'true');
    for (const base of Object.values(cgroupBases())) {
      const left = readdirSync(base.dir).filter(
        (e) => e.startsWith('keel-') && e.includes(`-${process.pid}-`),
      );
      expect(left).toEqual([]);
    }
  });

  it('chooses bwrap for auto', async () => {
    const auto = await createSandbox({
      kind: 'auto',
      root,
      writable: [root],
      network: false,
      limits: LIMITS,
    });
    opened.push(auto);
    expect(auto.kind).toBe('bwrap');
    expect(auto.describe()).toMatch(/^bwrap \(sandbox = "auto"/);
  });
});

describe('protected names a command creates', () => {
  const kinds: Array<'none' | 'bwrap'> = BWRAP ? ['none', 'bwrap'] : ['none'];
  it.each(kinds)('are removed after the command in %s, while ones that existed before stay', async (kind) => {
    const root = gitRepo({ 'keel.toml': 'model = "m"\n' });
    const scratch = tempDir('keel-scratch-');
    const box = await sandbox(root, { kind, writable: [root, scratch] });
    const result = await run(
      box,
      `mkdir .GIT && echo x > .keel && echo y > '${scratch}/keel.toml' && mkdir -p deep/.keel && echo made`,
    );
    expect(result.stdout).toContain('made');
    expect(result.violations?.sort()).toEqual(['.GIT', '.keel', join(scratch, 'keel.toml')].sort());
    expect(existsSync(join(root, '.GIT'))).toBe(false);
    expect(existsSync(join(root, '.keel'))).toBe(false);
    expect(existsSync(join(scratch, 'keel.toml'))).toBe(false);
    // what was there before, and what lies deeper than the top of a writable folder, is not the sweep's
    expect(readFileSync(join(root, 'keel.toml'), 'utf8')).toBe('model = "m"\n');
    expect(existsSync(join(root, 'deep/.keel'))).toBe(true);
    expect((await run(box, 'true')).violations).toBeUndefined();
  });
});

describe('sandbox selection fails closed', () => {
  const root = tempDir();
  const base = { root, writable: [root], network: false, limits: LIMITS };

  it('throws when bwrap is required but missing', async () => {
    const made = createSandbox({ ...base, kind: 'bwrap', env: { PATH: '/nonexistent' } });
    await expect(made).rejects.toThrow(SandboxError);
    await expect(made).rejects.toThrow(
      /sandbox = "bwrap" is required but bubblewrap \(bwrap\) is not installed/,
    );
  });

  it('throws when docker is required and no daemon answers', async (ctx) => {
    const docker = findProgram('docker', process.env.PATH);
    if (docker) {
      const daemon = (() => {
        try {
          execFileSync(docker, ['info'], { stdio: 'ignore', timeout: 5000 });
          return true;
        } catch {
          return false;
        }
      })();
      if (daemon) ctx.skip('a Docker daemon answers on this machine');
    }
    await expect(createSandbox({ ...base, kind: 'docker' })).rejects.toThrow(
      /sandbox = "docker" is required but (no Docker daemon answers|docker is not installed)/,
    );
  });

  it('falls back to none for auto and says why', async () => {
    const none = await createSandbox({ ...base, kind: 'auto', env: { PATH: '/nonexistent' } });
    expect(none.kind).toBe('none');
    expect(none.describe()).toMatch(
      /found none: bubblewrap \(bwrap\) is not installed.*; docker is not installed/,
    );
    const proof = await proveSandbox(none);
    expect(proof).toMatchObject({ writeOutsideBlocked: false, networkBlocked: false });
  });
});

describe('argv builders', () => {
  it('binds the scope, then re-binds protected paths read-only on top', () => {
    const none = { host: [], hidden: [], tmpBytes: 1024 };
    const args = bwrapArgs(
      { root: '/w', writable: ['/'], readOnly: ['/w/.git'], network: false, dropCaps: true, ...none },
      ['/bin/sh', '-c', 'true'],
    );
    expect(args.slice(0, 5)).toEqual([
      '--unshare-all',
      '--die-with-parent',
      '--new-session',
      '--cap-drop',
      'ALL',
    ]);
    expect(args).not.toContain('--share-net');
    const bind = args.indexOf('--bind');
    const gitRo = args.lastIndexOf('--ro-bind');
    expect(args.slice(gitRo, gitRo + 3)).toEqual(['--ro-bind', '/w/.git', '/w/.git']);
    // a scope at / is bound first, so the private /tmp lands on top of it
    expect(bind).toBeLessThan(args.indexOf('--tmpfs'));
    expect(gitRo).toBeGreaterThan(bind);
    expect(args.slice(-6)).toEqual(['--chdir', '/w', '--', '/bin/sh', '-c', 'true']);
    const net = bwrapArgs(
      { root: '/w', writable: [], readOnly: [], network: true, dropCaps: false, ...none },
      ['true'],
    );
    expect(net.slice(0, 2)).toEqual(['--unshare-all', '--share-net']);
    expect(net).not.toContain('--cap-drop');
    // an empty root: only what is bound exists, and the root itself is read-only
    expect(net.join(' ')).not.toContain('--ro-bind / /');
    expect(net.slice(net.indexOf('--remount-ro'), net.indexOf('--remount-ro') + 2)).toEqual([
      '--remount-ro',
      '/',
    ]);
  });

  it('pins the writable folders above a protected file (no rename swaps it out), never one inside .git', () => {
    const none = { host: [], hidden: ['/w/state'], tmpBytes: 1024, network: false, dropCaps: false };
    const readOnly = ['/w/.git', '/w/tools/sub/hook.cjs', '/w/.git/hooks/pre-commit', '/w/state/x/run.cjs'];
    const args = bwrapArgs({ root: '/w', writable: ['/w'], readOnly, ...none }, ['true']);
    const binds = args.flatMap((a, i) => (a === '--bind' ? [args[i + 1]] : []));
    expect(binds).toEqual(['/w/tools', '/w/tools/sub']);
    // each pinned folder is bound before the file's read-only bind on top of it
    expect(args.indexOf('/w/tools/sub')).toBeLessThan(args.indexOf('/w/tools/sub/hook.cjs'));
  });

  it('orders mounts outer first, so the workspace inside a hidden KEEL_HOME still shows', () => {
    const state = tempDir('keel-state-');
    const tree = join(state, 'worktrees', 'run-1');
    writeFiles(tree, { 'a.txt': 'a' });
    writeFiles(state, { 'keel.db': 'db' });
    const args = bwrapArgs(
      {
        root: tree,
        writable: [tree],
        readOnly: [],
        network: false,
        dropCaps: false,
        host: [{ kind: 'ro-bind', path: state, layer: 0 }],
        hidden: [state],
        tmpBytes: 1024,
      },
      ['true'],
    );
    const hide = args.findIndex((a, i) => a === '--tmpfs' && args[i + 1] === state);
    const bindTree = args.findIndex((a, i) => a === '--bind' && args[i + 1] === tree);
    expect(hide).toBeGreaterThan(0);
    expect(bindTree).toBeGreaterThan(hide);
    expect(args).toContain('--remount-ro');
  });

  it('finds .git, keel config and extra protected folders that exist', () => {
    const root = gitRepo({ 'keel.toml': 'sandbox = "bwrap"\n', '.keel/state': 'x' });
    expect(protectedPaths(root, [root], [join(root, 'missing')])).toEqual([
      join(root, '.git'),
      join(root, '.keel'),
      join(root, 'keel.toml'),
    ]);
    expect(protectedPaths(root, [join(root, 'src')])).toEqual([join(root, '.keel'), join(root, 'keel.toml')]);
  });

  it('builds a locked-down docker run and exec (no daemon here to run them)', () => {
    const run = dockerRunArgs({
      image: 'debian:12-slim',
      name: 'keel-1-ab',
      root: '/w',
      writable: ['/w'],
      readOnly: ['/w/.git'],
      network: false,
      limits: LIMITS,
      user: '1000:1000',
      env: { HOME: '/tmp', LANG: 'C.UTF-8' },
    });
    const pairs = (flag: string) => run.flatMap((a, i) => (a === flag ? [run[i + 1]] : []));
    expect(run.slice(0, 3)).toEqual(['run', '--detach', '--rm']);
    expect(pairs('--network')).toEqual(['none']);
    expect(run).toContain('--read-only');
    expect(pairs('--tmpfs')).toEqual(['/tmp:rw,exec,nosuid,nodev']);
    expect(pairs('--cap-drop')).toEqual(['ALL']);
    expect(pairs('--user')).toEqual(['1000:1000']);
    expect(pairs('--pids-limit')).toEqual(['128']);
    expect(pairs('--memory')).toEqual(['1024m']);
    expect(pairs('--ulimit')).toEqual(['cpu=60:60', `fsize=${64 * 1024 * 1024}:${64 * 1024 * 1024}`]);
    expect(pairs('--env')).toEqual(['HOME=/tmp', 'LANG=C.UTF-8']);
    expect(pairs('--workdir')).toEqual(['/w']);
    expect(pairs('--mount')).toEqual([
      'type=bind,source=/w,target=/w',
      'type=bind,source=/w/.git,target=/w/.git,readonly',
    ]);
    expect(run.slice(-3)).toEqual(['debian:12-slim', 'sleep', 'infinity']);

    const withNet = dockerRunArgs({
      image: 'i',
      name: 'n',
      root: '/a,b',
      writable: [],
      readOnly: [],
      network: true,
      limits: LIMITS,
      env: {},
    });
    expect(withNet[withNet.indexOf('--network') + 1]).toBe('bridge');
    expect(withNet).toContain('type=bind,"source=/a,b","target=/a,b",readonly');

    const exec = dockerExecArgs('cid', ['/bin/sh', '-c', 'make test'], {
      root: '/w',
      env: { HOME: '/tmp' },
      timeoutS: 30,
      pidFile: '/tmp/.keel-exec-1.pid',
    });
    expect(exec.slice(0, 5)).toEqual(['exec', '--workdir', '/w', '--env', 'HOME=/tmp']);
    expect(exec.slice(5, 8)).toEqual(['cid', '/bin/sh', '-c']);
    expect(exec.slice(-6)).toEqual(['/tmp/.keel-exec-1.pid', '2s', '30s', '/bin/sh', '-c', 'make test']);
    // the script must hand timeout exactly the command, not the pid file or durations again
    const script = exec[8] ?? '';
    const pidFile = join(tempDir(), 'pid');
    const shown = execFileSync(
      '/bin/sh',
      ['-c', script.replace('exec timeout', 'printf "%s|"'), 'keel-exec', pidFile, ...exec.slice(11)],
      { encoding: 'utf8' },
    );
    expect(readFileSync(pidFile, 'utf8')).toMatch(/^\d+\n$/);
    expect(shown).toBe('--kill-after=2s|30s|/bin/sh|-c|make test|');
  });

  it("runs the container's exec and kill scripts correctly (on the host: they are plain sh and coreutils)", async () => {
    const dir = tempDir();
    const pidFile = join(dir, 'pid');
    const marker = `keel-dk-${randomBytes(4).toString('hex')}`;
    const inner = ['/bin/sh', '-c', `trap "" TERM; sh -c 'sleep 60; : ${marker}' & wait`];
    const exec = dockerExecArgs('cid', inner, { root: dir, env: {}, timeoutS: 60, pidFile });
    const execCut = exec.slice(exec.indexOf('cid') + 1);
    const started = Date.now();
    const running = runArgv(execCut, { cwd: dir, timeoutS: 30, signal: never, maxOutputBytes: 4096 });
    while (!existsSync(pidFile) || readFileSync(pidFile, 'utf8') === '')
      await new Promise((r) => setTimeout(r, 20));
    await new Promise((r) => setTimeout(r, 200));
    expect(execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' })).toContain(marker);
    const kill = dockerKillArgs('cid', pidFile);
    await runArgv(kill.slice(kill.indexOf('cid') + 1), {
      cwd: dir,
      timeoutS: 30,
      signal: never,
      maxOutputBytes: 4096,
    });
    const result = await running;
    expect(result.exitCode === 137 || result.signal === 'SIGKILL').toBe(true);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' })).not.toContain(marker);
  });
});
