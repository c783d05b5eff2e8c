/**
 * PostgreSQL for tests: a fresh database of the run's private cluster (test/helpers/pg-global-setup.ts)
 * for each test file that asks. Without a server the PostgreSQL cases skip, unless KEEL_TEST_PG=require.
 */

import { request } from 'node:http';
import { inject } from 'vitest';
import { freshDatabase } from './pg-cluster.mjs';
import type { PgAnswer } from './pg-global-setup.js';

function askBroker(socketPath: string): Promise<PgAnswer> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath, path: '/', method: 'GET' }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
      });
      res.on('end', () => resolve(JSON.parse(body) as PgAnswer));
    });
    req.on('error', reject);
    req.end();
  });
}

/**
 * The URL of a new, empty database for this test file, or undefined when PostgreSQL tests skip here
 * (the reason is in `skipReason`). Throws when the cluster failed, or is missing under KEEL_TEST_PG=require.
 */
export async function freshPgDatabase(): Promise<string | undefined> {
  const answer = await askBroker(inject('keelPgBroker'));
  if ('error' in answer) throw new Error(answer.error);
  if ('skip' in answer) {
    if (process.env.KEEL_TEST_PG === 'require') throw new Error(`KEEL_TEST_PG=require: ${answer.skip}`);
    skipReason = answer.skip;
    return undefined;
  }
  return freshDatabase(answer.url, 'keel_');
}

/** Why PostgreSQL cases skip in this file (set by freshPgDatabase). */
export let skipReason = '';
