/**
 * A model server that streams one answer without end (it ignores max_tokens) must not keep an unattended
 * run alive and growing: every request carries an output limit, keel cuts an answer that runs past it,
 * and the run ends MODEL_ERROR saying why. Through the real binary, against the scripted server.
 */
import { describe, expect, it } from 'vitest';
import { chatBodies, keel, keelHome, lastSessionEvents, model, modelFlags } from '../e2e/harness.js';
import { gitRepo } from '../helpers/tmp.js';

const endOf = (home: string) =>
  lastSessionEvents(home).find((e) => e.type === 'session_end')?.data as
    | { code: string; reason: string }
    | undefined;

describe('an answer without end', () => {
  it('keel run sends max_tokens, stops an endless answer and ends MODEL_ERROR; endless tool-call arguments, an endless line and Ollama too', async () => {
    const repo = gitRepo({ 'a.txt': 'a\n' });

    // the attack: `keel run` (unattended) against a server that streams text forever
    const home = keelHome();
    const server = await model([{ endless: 'text' }]);
    const run = await keel(['run', ...modelFlags(server), '--json', 'say something'], {
      cwd: repo,
      home,
      timeoutMs: 30_000,
    });
    expect(run.signal, 'keel was still running when the test gave up').toBeNull();
    expect(run.code, run.stderr).toBe(4);
    const doc = JSON.parse(run.stdout);
    expect(doc.code).toBe('MODEL_ERROR');
    expect(doc.reason).toMatch(/answer .* without end.*max_output_tokens = 8192/);
    // the default limit went with the request, the way Chat Completions takes it
    expect(chatBodies(server)[0]).toMatchObject({ max_tokens: 8192 });
    expect(endOf(home)?.code).toBe('MODEL_ERROR');
    // nothing of the endless answer went into the log
    expect(lastSessionEvents(home).some((e) => e.type === 'assistant_message')).toBe(false);

    // a tool call whose arguments never end (they grow inside the provider, not as answer text), under
    // the user's own max_output_tokens
    const small = keelHome('max_output_tokens = 300\n');
    const args = await model([{ endless: 'arguments' }]);
    const second = await keel(['ask', ...modelFlags(args), '--json', 'read something'], {
      cwd: repo,
      home: small,
      timeoutMs: 60_000,
    });
    expect(second.code, second.stderr).toBe(4);
    expect(JSON.parse(second.stdout).reason).toMatch(/max_output_tokens = 300/);
    expect(chatBodies(args)[0]).toMatchObject({ max_tokens: 300 });

    // one line of the stream that never ends: it would grow inside the SDK's parser, never seen as text
    const line = await model([{ endless: 'line' }]);
    const fourth = await keel(['ask', ...modelFlags(line), '--json', 'one long line'], {
      cwd: repo,
      home: keelHome(),
      timeoutMs: 60_000,
    });
    expect(fourth.code, fourth.stderr).toBe(4);
    expect(JSON.parse(fourth.stdout).reason).toMatch(/a line of the answer's stream ran past 4 MB/);

    // Ollama's native API: num_predict is its limit, and its stream is cut the same way
    const ollama = await model([{ endless: 'text' }]);
    const third = await keel(
      ['ask', '--provider', 'ollama', '--base-url', ollama.ollamaUrl, '--model', 'm', '--json', 'hi'],
      { cwd: repo, home: keelHome('context_window = 32768\n'), timeoutMs: 60_000 },
    );
    expect(third.code, third.stderr).toBe(4);
    expect(JSON.parse(third.stdout).code).toBe('MODEL_ERROR');
    const body = ollama.requests.find((r) => r.path === '/api/chat')?.body;
    expect(body).toMatchObject({ options: { num_predict: 8192, num_ctx: 32768 } });
  }, 200_000);
});
