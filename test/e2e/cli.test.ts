import { describe, expect, it } from 'vitest';
import { gitRepo } from '../helpers/tmp.js';
import { keel, keelHome, lastSessionEvents, model, modelFlags } from './harness.js';

/** Resolve once `check` is true, polling; fail after `ms`. */
async function until(check: () => boolean, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('the keel command line', () => {
  it('prints its version and help', async () => {
    const home = keelHome();
    const version = await keel(['--version'], { cwd: home, home });
    expect(version.stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
    const help = await keel(['--help'], { cwd: home, home });
    expect(help.code).toBe(0);
    for (const verb of [
      'ask',
      'plan',
      'edit',
      'run',
      'doctor',
      'config',
      'sessions',
      'undo',
      'audit',
      'trust',
      'check',
    ]) {
      expect(help.stdout).toContain(verb);
    }
    const editHelp = await keel(['edit', '--help'], { cwd: home, home });
    expect(editHelp.stdout).toContain('--max-rounds');
    const bad = await keel(['ask', '--max-rounds', 'lots', 'hi'], { cwd: home, home });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('expected a positive integer');
  });

  it('Ctrl+C in the middle of a tool ends the run CANCELLED with exit 130 and a complete log', async () => {
    const repo = gitRepo();
    const home = keelHome('allow_shell = true\nsandbox = "none"\n');
    const server = await model([
      { tool_calls: [{ name: 'shell', arguments: { command: 'sleep 30' } }] },
      { text: 'never' },
    ]);
    const run = keel(['edit', ...modelFlags(server), '--json', 'wait'], {
      cwd: repo,
      home,
      onSpawn: (child) => {
        until(() => {
          try {
            return lastSessionEvents(home).some((e) => e.type === 'tool_start');
          } catch {
            return false;
          }
        })
          .then(() => child.kill('SIGINT'))
          .catch(() => child.kill('SIGKILL'));
      },
    });
    const done = await run;
    expect(done.code).toBe(130);
    expect(done.ms).toBeLessThan(10_000);
    expect(JSON.parse(done.stdout)).toMatchObject({ code: 'CANCELLED', exit_code: 130 });
    const events = lastSessionEvents(home);
    expect(events.at(-1)?.data).toMatchObject({ code: 'CANCELLED' });
    expect(events.map((e) => e.type)).toContain('tool_result');
  });

  it('a session killed with SIGKILL leaves a readable log up to its last event', async () => {
    const repo = gitRepo();
    const home = keelHome();
    const server = await model([{ text: 'slow', delay_ms: 20_000 }]);
    const run = keel(['ask', ...modelFlags(server), 'hi'], {
      cwd: repo,
      home,
      onSpawn: (child) => {
        until(() => server.requests.some((r) => r.method === 'POST'))
          .then(() => child.kill('SIGKILL'))
          .catch(() => child.kill('SIGKILL'));
      },
    });
    expect((await run).signal).toBe('SIGKILL');
    const show = await keel(['sessions', 'show', '--json', lastSessionEvents(home)[0]?.session_id ?? ''], {
      cwd: repo,
      home,
    });
    expect(show.code).toBe(0);
    const doc = JSON.parse(show.stdout);
    expect(doc.session.code).toBeNull();
    expect(doc.events.map((e: { type: string }) => e.type)).toEqual([
      'session_start',
      'user_message',
      'model_request',
    ]);
    const human = await keel(['sessions', 'show', doc.session.id], { cwd: repo, home });
    expect(human.stdout).toContain('UNFINISHED');
  });

  it('sessions list and show read the log back', async () => {
    const repo = gitRepo();
    const home = keelHome();
    const server = await model([{ text: 'first' }, { text: 'second' }]);
    await keel(['ask', ...modelFlags(server), 'one'], { cwd: repo, home });
    await keel(['ask', ...modelFlags(server), 'two'], { cwd: repo, home });
    const list = await keel(['sessions', 'list', '--json'], { cwd: repo, home });
    const sessions = JSON.parse(list.stdout).sessions as Array<{ id: string; prompt: string; code: string }>;
    expect(sessions.map((s) => s.prompt)).toEqual(['two', 'one']);
    expect(sessions.every((s) => s.code === 'COMPLETED')).toBe(true);
    const prefix = sessions[0]?.id.slice(0, -2) ?? '';
    const show = await keel(['sessions', 'show', prefix], { cwd: repo, home });
    expect(show.stdout).toContain('user: two');
    const missing = await keel(['sessions', 'show', 'nope'], { cwd: repo, home });
    expect(missing.code).toBe(2);
  });

  it('config show prints each value with its source and masks the API key', async () => {
    const repo = gitRepo({ 'keel.toml': 'model = "qwen3-coder"\n' });
    const home = keelHome('api_key_env = "MY_LLM_KEY"\n[budgets]\nmax_rounds = 9\n');
    const env = { MY_LLM_KEY: 'sk-very-secret-value', KEEL_BASE_URL: 'http://127.0.0.1:8000/v1' };
    const run = await keel(['config', 'show'], { cwd: repo, home, env });
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/model\s+= "qwen3-coder"\s+# .*keel\.toml/);
    expect(run.stdout).toMatch(/base_url\s+= "http:\/\/127\.0\.0\.1:8000\/v1"\s+# env/);
    expect(run.stdout).toMatch(/budgets\.max_rounds\s+= 9\s+# .*config\.toml/);
    expect(run.stdout).not.toContain('sk-very-secret-value');
    const json = await keel(['config', 'show', '--json'], { cwd: repo, home, env });
    expect(json.stdout).not.toContain('sk-very-secret-value');
    expect(JSON.parse(json.stdout).api_key).toEqual({ env: 'MY_LLM_KEY', set: true, value: '********' });
  });

  it('never puts the API key in events, the audit log or --json output', async () => {
    const repo = gitRepo();
    const home = keelHome();
    const server = await model([{ text: 'OK' }]);
    const secret = 'sk-live-do-not-leak-123456'; // keel-allow: secret-assignment
    const run = await keel(['ask', ...modelFlags(server), '--json', 'hi'], {
      cwd: repo,
      home,
      env: { KEEL_API_KEY: secret },
    });
    expect(run.code).toBe(0);
    // it was sent to the server, where it belongs
    expect(server.requests.some((r) => r.headers.authorization === `Bearer ${secret}`)).toBe(true);
    expect(run.stdout + run.stderr).not.toContain(secret);
    expect(JSON.stringify(lastSessionEvents(home))).not.toContain(secret);
    const tail = await keel(['audit', 'tail', '--json', '-n', '100'], { cwd: repo, home });
    expect(tail.stdout).not.toContain(secret);
  });

  it('doctor checks the endpoint, the model, tool calling and the context window', async () => {
    const repo = gitRepo();
    const home = keelHome();
    const server = await model(
      [
        {
          tool_calls: [{ name: 'read_file', arguments: { path: 'README.md' } }],
          expect: { tools: ['read_file'] },
        },
      ],
      { models: ['test-model'] },
    );
    const run = await keel(['doctor', ...modelFlags(server), '--json'], {
      cwd: repo,
      home,
      env: { KEEL_PROVIDER: 'openai' },
    });
    const doc = JSON.parse(run.stdout);
    const status = Object.fromEntries(
      doc.checks.map((c: { name: string; status: string }) => [c.name, c.status]),
    );
    expect(status).toMatchObject({
      config: 'ok',
      sandbox: 'ok',
      endpoint: 'ok',
      model: 'ok',
      'tool calling': 'ok',
    });
    expect(run.code).toBe(0);

    const unconfigured = await keel(['doctor', '--json'], { cwd: repo, home });
    expect(unconfigured.code).toBe(2);
    expect(JSON.parse(unconfigured.stdout).checks[0]).toMatchObject({ name: 'config', status: 'fail' });

    const wrong = await keel(['doctor', ...modelFlags(server, 'absent-model'), '--json'], {
      cwd: repo,
      home,
    });
    expect(wrong.code).toBe(4); // a model error, as DESIGN's exit codes say
    expect(wrong.stdout).toContain('absent-model is not among');
  });
});

describe('keel -m without a verb', () => {
  it('runs in the configured permission mode, and a typo of a verb is not taken for a prompt', async () => {
    const repo = gitRepo();
    const home = keelHome('permission = "plan"\n');
    const server = await model([{ text: '1. do it' }]);
    const run = await keel(['-m', 'make a plan', ...modelFlags(server), '--json'], { cwd: repo, home });
    expect(JSON.parse(run.stdout)).toMatchObject({ mode: 'plan', code: 'COMPLETED' });
    const typo = await keel(['aks', 'hi'], { cwd: repo, home });
    expect(typo.code).toBe(2);
    expect(typo.stderr).toContain('unknown command "aks"');
  });

  it('a project keel.toml cannot raise the mode without trust', async () => {
    const repo = gitRepo({ 'keel.toml': 'permission = "auto"\n' });
    const home = keelHome();
    const server = await model([{ text: 'ok' }]);
    const run = await keel(['-m', 'go', ...modelFlags(server), '--json'], { cwd: repo, home });
    expect(JSON.parse(run.stdout).mode).toBe('ask');
    expect(run.stderr).toContain('ignoring permission');
  });
});
