/**
 * One runtime, many sessions: what chat, `keel serve` and a fix run rely on. The sessions run against the
 * scripted OpenAI-compatible server on 127.0.0.1, in real git repositories, with the real store and audit chain.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openRuntime, type Runtime } from '../../src/agent/runtime.js';
import { RunError } from '../../src/agent/terminal.js';
import { loadConfig } from '../../src/config/load.js';
import { baseEnv, keel, keelHome, model } from '../e2e/harness.js';
import { gitRepo } from '../helpers/tmp.js';

const opened: Runtime[] = [];
afterEach(() => {
  for (const runtime of opened.splice(0)) runtime.close();
});

function setUp(url: string, config = '') {
  const home = keelHome(config);
  const env = baseEnv(home);
  const runtime = openRuntime(env);
  opened.push(runtime);
  const loadedIn = (cwd: string, flags: Record<string, unknown> = {}) =>
    loadConfig({ cwd, env, flags: { provider: 'openai', base_url: url, model: 'test-model', ...flags } });
  return { home, env, runtime, loadedIn };
}

describe('runtime', () => {
  it('runs sessions of two projects at once, each under its own policy, into one log and one audit chain', async () => {
    const server = await model([
      { task: 'WRITE', tool_calls: [{ name: 'write_file', arguments: { path: 'w.txt', content: 'w\n' } }] },
      { task: 'ASK', tool_calls: [{ name: 'write_file', arguments: { path: 'a.txt', content: 'a\n' } }] },
      { task: 'WRITE', text: 'wrote it' },
      { task: 'ASK', text: 'could not', expect: { last_tool_result_contains: 'mode' } },
    ]);
    const { home, runtime, loadedIn } = setUp(server.url);
    const [one, two] = [gitRepo({ 'x.txt': 'x\n' }), gitRepo({ 'y.txt': 'y\n' })];
    const signal = new AbortController().signal;
    const [edit, ask] = await Promise.all([
      runtime.start({ mode: 'edit', prompt: 'WRITE w.txt', loaded: loadedIn(one), cwd: one, signal }),
      runtime.start({ mode: 'ask', prompt: 'ASK to write a.txt', loaded: loadedIn(two), cwd: two, signal }),
    ]);
    expect([edit.code, ask.code]).toEqual(['COMPLETED', 'COMPLETED']);
    expect(readFileSync(join(one, 'w.txt'), 'utf8')).toBe('w\n');
    expect(ask.filesChanged).toEqual([]);
    const rows = runtime.log.listSessions(10);
    expect(rows.map((r) => r.id).sort()).toEqual([edit.sessionId, ask.sessionId].sort());
    expect(rows.find((r) => r.id === ask.sessionId)?.cwd).toBe(two);
    const verified = await keel(['audit', 'verify', '--json'], { cwd: one, home });
    expect(verified.code).toBe(0);
    expect(JSON.parse(verified.stdout).ok).toBe(true);
  });

  it('a session that cannot start leaves the runtime open: its failure is logged and the next session runs', async () => {
    const server = await model([{ text: 'fine' }]);
    const { home, runtime, loadedIn } = setUp(server.url);
    const repo = gitRepo({ 'x.txt': 'x\n' });
    const signal = new AbortController().signal;
    // a sandbox named explicitly that cannot run here is refused, never replaced by no sandbox
    const failed = await runtime
      .start({
        mode: 'edit',
        prompt: 'needs docker',
        loaded: loadedIn(repo, { sandbox: 'docker' }),
        cwd: repo,
        signal,
      })
      .catch((err: unknown) => err);
    expect(failed).toBeInstanceOf(RunError);
    expect((failed as RunError).code).toBe('ENVIRONMENT_ERROR');
    const next = await runtime.start({
      mode: 'ask',
      prompt: 'then this',
      loaded: loadedIn(repo),
      cwd: repo,
      signal,
    });
    expect(next.code).toBe('COMPLETED');
    const codes = runtime.log.listSessions(10).map((r) => r.code);
    expect(codes.sort()).toEqual(['COMPLETED', 'ENVIRONMENT_ERROR']);
    const verified = await keel(['audit', 'verify', '--json'], { cwd: repo, home });
    expect(JSON.parse(verified.stdout).ok).toBe(true);
  });

  it('a closed runtime refuses to start a session', async () => {
    const server = await model([{ text: 'never' }]);
    const { runtime, loadedIn } = setUp(server.url);
    const repo = gitRepo();
    runtime.close();
    runtime.close();
    await expect(
      runtime.start({
        mode: 'ask',
        prompt: 'late',
        loaded: loadedIn(repo),
        cwd: repo,
        signal: new AbortController().signal,
      }),
    ).rejects.toThrow(/closed/);
  });
});
