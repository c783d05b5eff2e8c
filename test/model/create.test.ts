import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config/load.js';
import { configSchema } from '../../src/config/schema.js';
import { createModelClient } from '../../src/model/create.js';
import { type ScriptServer, startScriptServer } from '../../src/model/script-server.js';
import { collect, signal, textOf, user } from './support.js';

const ask = { messages: [user('hi')], tools: [] };

describe('createModelClient', () => {
  let server: ScriptServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it('builds an openai primary with an ollama fallback, key from the environment', async () => {
    server = await startScriptServer({
      turns: [
        { model: 'primary', error: { status: 500 } },
        { model: 'local', text: 'from ollama' },
      ],
    });
    const config = configSchema.parse({
      provider: 'openai',
      model: 'primary',
      base_url: server.url,
      api_key_env: 'MY_KEY',
      context_window: 8192,
      retries: { max: 0 },
      fallback_models: [
        { provider: 'ollama', model: 'local', base_url: server.ollamaUrl, context_window: 4096 },
      ],
    });
    const client = createModelClient(config, { MY_KEY: 'secret' });
    expect(client.provider).toBe('openai');
    expect(await client.contextWindow()).toBe(8192);
    const deltas = await collect(client.stream(ask, signal()));
    expect(textOf(deltas)).toBe('from ollama');
    expect(client.provider).toBe('ollama');
    expect(server.requests[0]?.headers.authorization).toBe('Bearer secret');
    expect(server.requests[1]).toMatchObject({ path: '/api/chat', body: { options: { num_ctx: 4096 } } });
  });

  it('builds the scripted provider from a script path relative to cwd', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'keel-create-'));
    writeFileSync(join(dir, 'demo.json'), JSON.stringify({ turns: [{ text: 'offline demo' }] }));
    const config = configSchema.parse({ provider: 'scripted', script: 'demo.json' });
    const client = createModelClient(config, {}, { cwd: dir });
    expect(textOf(await collect(client.stream(ask, signal())))).toBe('offline demo');
  });

  it('refuses a config it cannot use', () => {
    expect(() => createModelClient(configSchema.parse({ provider: 'scripted' }), {})).toThrow(ConfigError);
    expect(() => createModelClient(configSchema.parse({ provider: 'openai' }), {})).toThrow(
      'no model configured',
    );
  });
});
