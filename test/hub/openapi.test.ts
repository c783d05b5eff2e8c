/**
 * The hub's OpenAPI document lists every route its Hono app serves, with the workflows mounted (webhooks,
 * signals, approvals), and says how the signed routes are called: the headers they verify, the raw body,
 * the receipts and the error codes.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { startHub } from '../../src/hub/server.js';
import { openStore } from '../../src/store/engine.js';
import { tempDir } from '../helpers/tmp.js';

interface Operation {
  parameters: { in: string; name: string }[];
  requestBody: { description: string };
  responses: Record<
    string,
    {
      description: string;
      content?: { 'application/json': { schema: { properties: { code: { enum: string[] } } } } };
    }
  >;
  security?: unknown;
}

it('the hub document lists every route the app serves, and the signed routes say how they are verified', async () => {
  const dir = tempDir('keel-hub-openapi-');
  const store = await openStore({ engine: 'sqlite', path: join(dir, 'keel.db') });
  const hub = await startHub({
    store,
    host: '127.0.0.1',
    port: 0,
    adminToken: 'admin',
    version: 'test',
    workflows: {
      root: dir,
      trustFile: join(dir, 'trust.json'),
      project: 'demo',
      key: randomBytes(32),
      env: {},
    },
  });
  if (typeof hub === 'string') throw new Error(hub);
  try {
    const doc = (await (await fetch(`${hub.url}/v1/openapi.json`)).json()) as {
      paths: Record<string, Record<string, Operation>>;
    };
    const documented = Object.entries(doc.paths).flatMap(([path, ops]) =>
      Object.keys(ops).map((m) => `${m.toUpperCase()} ${path.replace(/\{([a-z]+)\}/g, ':$1')}`),
    );
    const served = hub.routes.map((r) => `${r.method} ${r.path}`);
    expect(served).toContain('POST /v1/webhooks/:name');
    expect([...new Set(served)].sort()).toEqual([...new Set(documented)].sort());

    const webhook = doc.paths['/v1/webhooks/{name}']?.post as Operation;
    const headers = webhook.parameters
      .filter((p: { in: string }) => p.in === 'header')
      .map((p: { name: string }) => p.name);
    expect(headers).toEqual(
      expect.arrayContaining([
        'X-Hub-Signature-256',
        'X-GitHub-Delivery',
        'webhook-id',
        'webhook-timestamp',
        'webhook-signature',
      ]),
    );
    expect(webhook.requestBody.description).toContain('raw');
    expect(Object.keys(webhook.responses)).toEqual(
      expect.arrayContaining(['200', '202', '401', '409', '422']),
    );
    expect(webhook.responses['401']?.content?.['application/json'].schema.properties.code.enum).toEqual(
      expect.arrayContaining(['missing_signature', 'bad_signature', 'stale_timestamp']),
    );
    expect(webhook.security).toBeUndefined();
    const signal = doc.paths['/v1/runs/{run}/signals/{name}']?.post as Operation;
    expect(signal.responses['202']?.description).toContain('signal_id');
    expect(signal.responses['409']?.description).toContain('signal_id_conflict');
  } finally {
    await hub.close();
    await store.close();
  }
});
