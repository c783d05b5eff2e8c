/**
 * vitest global setup: a private PostgreSQL cluster for the tests that ask for one (test/helpers/pg.ts).
 *
 * Nothing starts unless a test file asks: the setup only opens a small broker on a unix socket, and the
 * first request runs initdb in a temporary folder and starts the server on a free loopback port (its own
 * socket inside that folder). One cluster serves the whole run; each test file makes its own database.
 * As root, initdb and postgres run as the `postgres` user (they refuse root), which then owns the folder.
 * Without the server binaries the broker answers "skip", unless KEEL_TEST_PG=require: then the run fails.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The broker's unix socket: GET / answers `PgAnswer` as JSON. */
    keelPgBroker: string;
  }
}

/** What the broker answers: a URL of the cluster's maintenance database, or why PostgreSQL tests skip. */
export type PgAnswer = { url: string } | { skip: string } | { error: string };

/** The server binaries: KEEL_TEST_PG_BIN, else the newest Debian postgresql under /usr/lib/postgresql. */
function findBinaries(): string | undefined {
  const chosen = process.env.KEEL_TEST_PG_BIN;
  if (chosen) return existsSync(join(chosen, 'postgres')) ? chosen : undefined;
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, 'bin', 'postgres')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] === undefined ? undefined : join(root, versions[0], 'bin');
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createNetServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

interface Cluster {
  url: string;
  stop(): Promise<void>;
}

async function startCluster(bin: string, dir: string): Promise<Cluster> {
  const asRoot = process.getuid?.() === 0;
  // as root, the server runs as postgres and must own its folder (and reach it)
  const run = (file: string, args: string[]) =>
    asRoot ? (['runuser', ['-u', 'postgres', '--', file, ...args]] as const) : ([file, args] as const);
  if (asRoot) {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    chownSync(dir, uid, gid);
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
      // a throwaway cluster: durability buys nothing here
      '-c',
      'fsync=off',
      '-c',
      'synchronous_commit=off',
      '-c',
      'full_page_writes=off',
      '-c',
      'max_connections=300',
      '-c',
      'shared_buffers=32MB',
    ]);
    const child = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let log = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      log += chunk.toString();
    });
    const ready = await waitReady(child, () => log);
    if (ready) {
      const url = `postgres://keel:${password}@127.0.0.1:${port}/postgres`;
      return { url, stop: () => stopServer(child, data) };
    }
    lastError = log.trim().split('\n').slice(-3).join(' | ');
  }
  throw new Error(`PostgreSQL did not start (${bin}/postgres): ${lastError}`);
}

/** Wait for the server to say it accepts connections; false when it exits first. */
function waitReady(child: ChildProcess, log: () => string): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setInterval(() => {
      if (log().includes('ready to accept connections')) done(true);
    }, 25);
    const done = (ok: boolean) => {
      clearInterval(timer);
      child.off('exit', onExit);
      resolve(ok);
    };
    const onExit = () => done(false);
    child.once('exit', onExit);
  });
}

/** Immediate shutdown (SIGQUIT) of the postmaster, whose pid heads postmaster.pid: runuser does not pass signals on. */
function stopServer(child: ChildProcess, data: string): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    const pid = Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
    process.kill(Number.isInteger(pid) && pid > 0 ? pid : (child.pid ?? 0), 'SIGQUIT');
  });
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const bin = findBinaries();
  const required = process.env.KEEL_TEST_PG === 'require';
  if (!bin && required)
    throw new Error(
      'KEEL_TEST_PG=require but no PostgreSQL server was found (/usr/lib/postgresql/*/bin/postgres); install the postgresql package',
    );
  const dir = mkdtempSync(join(tmpdir(), 'keel-pg-'));
  let cluster: Promise<Cluster> | undefined;
  const answer = async (): Promise<PgAnswer> => {
    if (!bin)
      return {
        skip: 'no PostgreSQL server (/usr/lib/postgresql/*/bin/postgres); set KEEL_TEST_PG=require to fail',
      };
    cluster ??= startCluster(bin, dir);
    try {
      return { url: (await cluster).url };
    } catch (err) {
      return { error: (err as Error).message };
    }
  };
  // the broker's socket lives beside the cluster, in a folder only root (or this user) reaches
  const brokerDir = mkdtempSync(join(tmpdir(), 'keel-pg-broker-'));
  const socket = join(brokerDir, 'broker.sock');
  const broker: Server = createHttpServer((_req, res) => {
    void answer().then((body) => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify(body));
    });
  });
  await new Promise<void>((resolve) => broker.listen(socket, resolve));
  project.provide('keelPgBroker', socket);
  return async () => {
    await new Promise<void>((resolve) => broker.close(() => resolve()));
    if (cluster) await (await cluster.catch(() => undefined))?.stop();
    rmSync(dir, { recursive: true, force: true });
    rmSync(brokerDir, { recursive: true, force: true });
  };
}
