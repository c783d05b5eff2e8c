/**
 * vitest global setup: a private PostgreSQL cluster for the tests that ask for one (test/helpers/pg.ts).
 *
 * Nothing starts unless a test file asks: the setup only opens a small broker on a unix socket, and the
 * first request runs initdb in a temporary folder and starts the server on a free loopback port (its own
 * socket inside that folder). One cluster serves the whole run; each test file makes its own database.
 * As root, initdb and postgres run as the `postgres` user (they refuse root), which then owns the folder.
 * Without the server binaries the broker answers "skip", unless KEEL_TEST_PG=require: then the run fails.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer as createHttpServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { type Cluster, findBinaries, startCluster, THROWAWAY } from './pg-cluster.mjs';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The broker's unix socket: GET / answers `PgAnswer` as JSON. */
    keelPgBroker: string;
  }
}

/** What the broker answers: a URL of the cluster's maintenance database, or why PostgreSQL tests skip. */
export type PgAnswer = { url: string } | { skip: string } | { error: string };

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  // KEEL_TEST_PG_BIN names the server binaries, else the newest Debian postgresql under /usr/lib/postgresql
  const bin = findBinaries(process.env.KEEL_TEST_PG_BIN)?.bin;
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
    cluster ??= startCluster(bin, dir, { ...THROWAWAY, max_connections: 300, shared_buffers: '32MB' });
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
