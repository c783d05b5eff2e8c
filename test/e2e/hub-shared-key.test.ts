/**
 * Hubs on several machines share one PostgreSQL and one audit key (KEEL_HUB_AUDIT_KEY_FILE): each has its
 * own KEEL_HOME, a run's events written by both verify with `keel hub runs verify`, and a hub holding
 * another key refuses to append to a run sealed with the shared one (409 foreign_audit_key) instead of
 * breaking its chain.
 */
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { trustFile } from '../../src/config/trust.js';
import { freshPgDatabase, skipReason } from '../helpers/pg.js';
import { tempDir } from '../helpers/tmp.js';
import {
  githubWebhook,
  HUB_ENV,
  projectWithAgents,
  QUORUM,
  type RunningHub,
  startHub,
  workflowProject,
} from './hub-harness.js';

const pgUrl = await freshPgDatabase();

function keyFile(): string {
  const path = join(tempDir('keel-hub-key-'), 'hub-audit.key');
  writeFileSync(path, `${randomBytes(32).toString('hex')}\n`, { mode: 0o600 });
  return path;
}

describe('hubs sharing an audit key on one PostgreSQL', () => {
  it.skipIf(!pgUrl)(
    `a run written by two hubs verifies; a hub with another key cannot append to it ${pgUrl ? '' : `(${skipReason})`}`,
    async () => {
      const shared = keyFile();
      const homes = [tempDir('keel-hub-k1-'), tempDir('keel-hub-k2-'), tempDir('keel-hub-k3-')] as const;
      const cwd = workflowProject(homes[0], { pr: QUORUM });
      for (const home of homes.slice(1)) trustFile(`${cwd}/.keel/workflows/pr.yaml`, `${home}/trust.json`);
      const env = {
        ...HUB_ENV,
        KEEL_STORE: pgUrl as string,
        KEEL_HUB_ADMIN_TOKEN: 'one-admin-token-for-all',
      };
      const start = (home: string, key: string) =>
        startHub({
          home,
          cwd,
          env: { ...env, KEEL_HUB_AUDIT_KEY_FILE: key },
          args: ['--workflow-project', 'demo'],
        });
      const one = await start(homes[0], shared);
      const two = await start(homes[1], shared);
      const other = await start(homes[2], keyFile());
      const { keys } = await projectWithAgents(one, 'demo', 'rev-a', 'rev-b', 'rev-c');
      const requestOf = async (hub: RunningHub, name: string, runId: string) =>
        (
          (await hub.api('GET', '/v1/inbox', keys[name])).body.messages as { id: string; body: string }[]
        ).find((m) => m.body.includes(runId)) as { id: string };
      const events = async (runId: string) => {
        const shown = await one.cli(['runs', 'show', runId, '--json'], {
          env: { KEEL_HUB_AUDIT_KEY_FILE: shared },
        });
        expect(shown.code, shown.stderr).toBe(0);
        return JSON.parse(shown.stdout).events.map((e: { type: string }) => e.type) as string[];
      };

      // one starts the run and takes rev-a's reply; two takes rev-b's (the quorum) and the approval
      const started = await githubWebhook(one, 'pr', { pull_request: { number: 1 } });
      expect(started.status).toBe(202);
      const { run_id: runId } = (await started.json()) as { run_id: string };
      const forA = await requestOf(one, 'rev-a', runId);
      const forB = await requestOf(two, 'rev-b', runId);
      expect(
        (await one.api('POST', `/v1/messages/${forA.id}/reply`, keys['rev-a'], { body: 'ok' })).status,
      ).toBe(201);
      expect(
        (await two.api('POST', `/v1/messages/${forB.id}/reply`, keys['rev-b'], { body: 'ok' })).status,
      ).toBe(201);
      const approved = await two.api('POST', `/v1/runs/${runId}/stages/sign-off/approval`, two.adminToken, {
        decision: 'approve',
      });
      expect(approved.status, JSON.stringify(approved.body)).toBe(200);
      expect(await events(runId)).toEqual(
        expect.arrayContaining(['reply_received', 'stage_approved', 'run_succeeded']),
      );
      for (const [hub, home] of [
        [one, homes[0]],
        [two, homes[1]],
      ] as const) {
        const verified = await hub.cli(['runs', 'verify', runId], {
          env: { KEEL_HUB_AUDIT_KEY_FILE: shared },
        });
        expect(verified.code, `${home}: ${verified.stdout}${verified.stderr}`).toBe(0);
      }

      // a hub with another key: rev-c's reply to a run sealed with the shared key is refused, the chain holds
      const next = await githubWebhook(one, 'pr', { pull_request: { number: 2 } });
      const { run_id: nextId } = (await next.json()) as { run_id: string };
      const forC = await requestOf(other, 'rev-c', nextId);
      const before = await events(nextId);
      const refused = await other.api('POST', `/v1/messages/${forC.id}/reply`, keys['rev-c'], { body: 'ok' });
      expect([refused.status, refused.body.code]).toEqual([409, 'foreign_audit_key']);
      const decided = await other.api('POST', `/v1/runs/${nextId}/stages/review/approval`, other.adminToken, {
        decision: 'approve',
      });
      expect(decided.status).toBe(409);
      expect(await events(nextId)).toEqual(before);
      const verified = await one.cli(['runs', 'verify', nextId], {
        env: { KEEL_HUB_AUDIT_KEY_FILE: shared },
      });
      expect(verified.code, verified.stdout).toBe(0);
      // the reply was not taken either: rev-c can still answer through a hub with the key
      expect(
        (await two.api('POST', `/v1/messages/${forC.id}/reply`, keys['rev-c'], { body: 'ok' })).status,
      ).toBe(201);
    },
    120_000,
  );
});
