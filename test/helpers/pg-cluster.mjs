// A private, throwaway PostgreSQL cluster: the vitest global setup (pg-global-setup.ts) and the benches
// (bench/batch.mjs, bench/hub.mjs) start theirs here. initdb runs in a folder the caller made, the server
// listens on a free loopback port (its unix socket inside that folder) with a random password for the
// role `keel`. As root, initdb and postgres run as the `postgres` user (they refuse root), which then owns
// the folder. Plain JavaScript so that the benches run it without a build; types in pg-cluster.d.mts.
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import pg from 'pg';

/** Settings for a cluster whose data may be lost: durability buys nothing in a test run. */
export const THROWAWAY = { fsync: 'off', synchronous_commit: 'off', full_page_writes: 'off' };

/**
 * The server binaries: `chosen` when it holds `postgres` (else undefined), otherwise the newest Debian
 * postgresql under /usr/lib/postgresql, as { bin, version } (no version for a chosen folder).
 */
export function findBinaries(chosen) {
  if (chosen) return existsSync(join(chosen, 'postgres')) ? { bin: chosen } : undefined;
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, 'bin', 'postgres')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] === undefined
    ? undefined
    : { bin: join(root, versions[0], 'bin'), version: versions[0] };
}

/** A loopback port nobody listened on a moment ago. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/**
 * initdb in `dir` (an empty folder the caller made and later removes) and start the server with the
 * given `-c` settings. Resolves to { url, stop }: the URL of the maintenance database `postgres`, and an
 * immediate shutdown. Throws, with the server's last log lines, when it does not start.
 */
export async function startCluster(bin, dir, settings = {}) {
  const asRoot = process.getuid?.() === 0;
  // as root, the server runs as postgres and must own its folder (and reach it)
  const run = (file, args) => (asRoot ? ['runuser', ['-u', 'postgres', '--', file, ...args]] : [file, args]);
  if (asRoot) {
    const id = (flag) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
    chownSync(dir, id('-u'), id('-g'));
  }
  chmodSync(dir, 0o700);
  const data = join(dir, 'data');
  const password = randomBytes(12).toString('hex');
  const pwfile = join(dir, 'pw');
  execFileSync('sh', ['-c', 'umask 077; printf %s "$1" > "$2"', 'sh', password, pwfile]);
  if (asRoot) execFileSync('chown', ['postgres', pwfile]);
  const [initCmd, initArgs] = run(join(bin, 'initdb'), [
    '-D',
    data,
    '-U',
    'keel',
    '-A',
    'scram-sha-256',
    `--pwfile=${pwfile}`,
    '--no-sync',
    '--no-instructions',
    '-E',
    'UTF8',
    '--locale=C',
  ]);
  execFileSync(initCmd, initArgs, { stdio: ['ignore', 'ignore', 'pipe'] });
  rmSync(pwfile, { force: true });
  const options = Object.entries(settings).flatMap(([key, value]) => ['-c', `${key}=${value}`]);
  let lastError = '';
  // the free port can be taken between asking and listening: try another once or twice
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort();
    const [cmd, args] = run(join(bin, 'postgres'), [
      '-D',
      data,
      '-p',
      String(port),
      '-k',
      dir,
      '-c',
      'listen_addresses=127.0.0.1',
      ...options,
    ]);
    const child = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let log = '';
    child.stderr.on('data', (chunk) => {
      log += chunk.toString();
    });
    if (await waitReady(child, () => log)) {
      const url = `postgres://keel:${password}@127.0.0.1:${port}/postgres`;
      return { url, stop: () => stopServer(child, data) };
    }
    lastError = log.trim().split('\n').slice(-3).join(' | ');
  }
  throw new Error(`PostgreSQL did not start (${bin}/postgres): ${lastError}`);
}

/** Wait for the server to say it accepts connections; false when it exits first. */
function waitReady(child, log) {
  return new Promise((resolve) => {
    const timer = setInterval(() => {
      if (log().includes('ready to accept connections')) done(true);
    }, 25);
    const done = (ok) => {
      clearInterval(timer);
      child.off('exit', onExit);
      resolve(ok);
    };
    const onExit = () => done(false);
    child.once('exit', onExit);
  });
}

/** Immediate shutdown (SIGQUIT) of the postmaster, whose pid heads postmaster.pid: runuser does not pass signals on. */
function stopServer(child, data) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    const pid = Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
    process.kill(Number.isInteger(pid) && pid > 0 ? pid : (child.pid ?? 0), 'SIGQUIT');
  });
}

/** A new, empty database named `prefix` + random hex on the server at `serverUrl`; resolves to its URL. */
export async function freshDatabase(serverUrl, prefix) {
  const name = `${prefix}${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.toString();
}
