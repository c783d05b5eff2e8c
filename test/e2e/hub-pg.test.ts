/** Two hub processes on one PostgreSQL database serve the same project: a message sent through one reaches a stream on the other. */
import { describe, expect, it } from 'vitest';
import { freshPgDatabase, skipReason } from '../helpers/pg.js';
import { tempDir } from '../helpers/tmp.js';
import { readEvents, startHub } from './hub-harness.js';

const pgUrl = await freshPgDatabase();

describe('two hubs on one PostgreSQL', () => {
  it.skipIf(!pgUrl)(
    `route, ack, reply and retry across processes ${pgUrl ? '' : `(${skipReason})`}`,
    async () => {
      const env = { KEEL_STORE: pgUrl as string, KEEL_HUB_ADMIN_TOKEN: 'one-admin-token-for-both' };
      const one = await startHub({ home: tempDir('keel-hub-pg1-'), cwd: tempDir('keel-hub-pg-'), env });
      const two = await startHub({ home: tempDir('keel-hub-pg2-'), cwd: tempDir('keel-hub-pg-'), env });
      const token = (await one.api('POST', '/v1/projects/team/tokens', env.KEEL_HUB_ADMIN_TOKEN)).body.token;
      const a = (await one.api('POST', '/v1/agents', token, { name: 'a' })).body.agent_key;
      const b = (await two.api('POST', '/v1/agents', token, { name: 'b' })).body.agent_key;

      // b listens on the second process; a sends through the first after b's stream is open
      const stream = readEvents(two.url, b, (e) => e.length >= 1);
      await new Promise((r) => setTimeout(r, 300));
      const sent = await one.api('POST', '/v1/messages', a, {
        to: 'b',
        body: 'across',
        idempotency_key: 'x1',
      });
      expect(sent.status).toBe(201);
      const [event] = await stream;
      expect(event).toMatchObject({ id: '1', data: { id: sent.body.message.id, body: 'across', from: 'a' } });

      expect((await two.api('POST', `/v1/messages/${sent.body.message.id}/ack`, b)).body.message.state).toBe(
        'acked',
      );
      const reply = await one.api('POST', `/v1/messages/${sent.body.message.id}/reply`, b, { body: 'back' });
      expect(reply.status).toBe(201);
      const seen = await two.api('GET', `/v1/messages/${sent.body.message.id}`, a);
      expect(seen.body).toMatchObject({ message: { state: 'replied' }, reply: { body: 'back' } });
      // a retry through the other process is the original; another request under the key is refused there too
      const retry = await two.api('POST', '/v1/messages', a, {
        to: 'b',
        body: 'across',
        idempotency_key: 'x1',
      });
      expect([retry.status, retry.body.created, retry.body.message.id]).toEqual([
        200,
        false,
        sent.body.message.id,
      ]);
      const conflict = await two.api('POST', '/v1/messages', a, {
        to: 'b',
        body: 'changed',
        idempotency_key: 'x1',
      });
      expect([conflict.status, conflict.body.code]).toEqual([409, 'IDEMPOTENCY_CONFLICT']);
    },
  );
});
