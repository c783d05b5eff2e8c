/** Rough edges a new user found, each through the real binary: huge prompts, stacks, bad URLs, missing folders, doctor. */
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { gitRepo, tempDir } from '../helpers/tmp.js';
import {
  baseEnv,
  chatBodies,
  KEEL_BIN,
  keel,
  keelHome,
  lastSessionEvents,
  model,
  modelFlags,
} from './harness.js';

const FIVE_MB_OF_A = 'a'.repeat(5 * 1024 * 1024);

/** No stack trace: no "    at fn (file:line)" lines and no Node error banner. */
function noStack(stderr: string): void {
  expect(stderr).not.toMatch(/\n\s+at .+[:(]/);
  expect(stderr).not.toContain('node:internal');
}

describe('a prompt larger than the context window', () => {
  it('5 MB of "a" on stdin is refused at once with the numbers, before any request', async () => {
    const server = await model([{ text: 'never sent' }]);
    const run = await keel(['ask', ...modelFlags(server), '--context-window', '32768', '--json'], {
      cwd: gitRepo(),
      home: keelHome(),
      input: FIVE_MB_OF_A,
      timeoutMs: 15_000,
    });
    expect(run.signal).toBeNull();
    expect(run.code).toBe(2);
    const doc = JSON.parse(run.stdout);
    expect(doc).toMatchObject({ code: 'CONFIG_ERROR', exit_code: 2 });
    expect(doc.error).toMatch(
      /the prompt is about [\d,]+ tokens, more than the context window of 32,768 tokens/,
    );
    expect(doc.error).toContain('context_window from flag');
    expect(chatBodies(server)).toHaveLength(0);
  });

  it('the window an Ollama server reports counts too', async () => {
    const server = await model([{ text: 'never sent' }], { contextLength: 8192 });
    const run = await keel(['ask', '--provider', 'ollama', '--base-url', server.ollamaUrl, '--model', 'm'], {
      cwd: gitRepo(),
      home: keelHome(),
      input: FIVE_MB_OF_A,
      timeoutMs: 15_000,
    });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/more than the context window of 8,192 tokens \(as .+ reports it for m\)/);
    expect(server.requests.filter((r) => r.path === '/api/chat')).toHaveLength(0);
  });

  it('5 MB with no window known is refused with the way to proceed; 200 KB is sent with a warning', async () => {
    const repo = gitRepo();
    const home = keelHome();
    const line = 'npm ERR! code ELIFECYCLE at /home/user/project/node_modules/pkg/lib/index.js:123:45\n';
    const server = await model([{ text: 'read it' }]);
    const huge = await keel(['ask', ...modelFlags(server)], {
      cwd: repo,
      home,
      input: line.repeat(Math.ceil((5 * 1024 * 1024) / line.length)),
      timeoutMs: 30_000,
    });
    expect(huge.code).toBe(2);
    expect(huge.stderr).toMatch(
      /^keel: the prompt is about [\d,]+ tokens and the context window is unknown \(http:\/\/127\.0\.0\.1:\d+\/v1 does not report one for test-model\); few models take more than 131,072 tokens, so it is not sent: if the model takes it, give its window with --context-window N or context_window in keel\.toml/,
    );
    expect(chatBodies(server)).toHaveLength(0);
    noStack(huge.stderr);

    const large = await keel(['ask', ...modelFlags(server)], {
      cwd: repo,
      home,
      input: line.repeat(2000),
      timeoutMs: 30_000,
    });
    expect(large.code, large.stderr).toBe(0);
    expect(large.stderr).toMatch(
      /keel: warning: the prompt is about [\d,]+ tokens and the context window is unknown .*; sending it/,
    );
    expect(large.stdout).toBe('read it\n');
    expect(chatBodies(server)).toHaveLength(1);
  });

  it('a 5 MB prompt that fits is counted in bounded time, and SIGTERM is heard', async () => {
    const repo = gitRepo();
    const home = keelHome();
    // the server reports no usage, so keel counts the 5 MB request itself after the answer
    const server = await model([{ text: 'read it' }]);
    const run = await keel(['ask', ...modelFlags(server), '--context-window', '2000000', '--json'], {
      cwd: repo,
      home,
      input: FIVE_MB_OF_A,
      timeoutMs: 30_000,
      onSpawn: (child) => {
        const poll = setInterval(() => {
          if (chatBodies(server).length === 0) return;
          clearInterval(poll);
          setTimeout(() => child.kill('SIGTERM'), 200);
        }, 20);
        child.on('close', () => clearInterval(poll));
      },
    });
    expect(run.signal).not.toBe('SIGKILL'); // not the harness's SIGKILL: keel ended by itself
    if (run.signal === 'SIGTERM') {
      // the signal came after the session had ended and its answer was printed: the default, dying by it
      expect(JSON.parse(run.stdout)).toMatchObject({ code: 'COMPLETED' });
    } else expect([0, 130]).toContain(run.code);
    expect(lastSessionEvents(home).at(-1)?.type).toBe('session_end');
  });
});

describe('one-line errors instead of stack traces', () => {
  it('doctor -C /nonexistent says the workspace is not a folder, exit 2', async () => {
    const home = keelHome();
    const run = await keel(['doctor', '-C', '/nonexistent', '--model', 'm'], { cwd: home, home });
    expect(run.code).toBe(2);
    expect(run.stdout).toContain('workspace /nonexistent is not a folder');
    noStack(run.stderr);
    const json = await keel(['doctor', '-C', '/nonexistent', '--model', 'm', '--json'], { cwd: home, home });
    expect(JSON.parse(json.stdout)).toMatchObject({
      code: 'CONFIG_ERROR',
      exit_code: 2,
      error: expect.stringContaining('/nonexistent'),
    });
  });

  it('a missing, non-JSON or wrongly shaped --script is exit 2 naming the file and the problem', async () => {
    const repo = gitRepo();
    const home = keelHome();
    const dir = tempDir();
    writeFileSync(join(dir, 'broken.json'), '{"turns": [');
    writeFileSync(join(dir, 'shape.json'), '{"turn": []}');
    const cases: Array<[string, RegExp]> = [
      [join(dir, 'absent.json'), /cannot read script .*absent\.json: ENOENT/],
      [join(dir, 'broken.json'), /invalid JSON in script .*broken\.json/],
      [join(dir, 'shape.json'), /invalid script .*shape\.json/],
    ];
    for (const [file, message] of cases) {
      const run = await keel(['ask', '--provider', 'scripted', '--script', file, 'hi'], { cwd: repo, home });
      expect(run.code, file).toBe(2);
      expect(run.stderr).toMatch(message);
      noStack(run.stderr);
      const json = await keel(['ask', '--provider', 'scripted', '--script', file, '--json', 'hi'], {
        cwd: repo,
        home,
      });
      expect(JSON.parse(json.stdout)).toMatchObject({
        code: 'CONFIG_ERROR',
        exit_code: 2,
        error: expect.stringMatching(message),
      });
    }
  });

  // Root ignores the folder's mode, so as root the same case runs as user nobody (setpriv) when it can;
  // without setpriv, root has no way to meet a read-only folder and the case is skipped.
  const root = process.getuid?.() === 0;
  const setpriv = spawnSync('sh', ['-c', 'command -v setpriv']).stdout.toString().trim();
  it.skipIf(root && !setpriv)(
    'a read-only KEEL_HOME is an environment error naming the folder, exit 3',
    async () => {
      const base = tempDir();
      chmodSync(base, 0o755);
      const home = join(base, 'home');
      const repo = join(base, 'repo');
      mkdirSync(home);
      mkdirSync(repo);
      chmodSync(home, 0o555);
      chmodSync(repo, 0o777);
      const argv = [process.execPath, KEEL_BIN, 'ask', '--model', 'm', 'hi'];
      const command = root ? [setpriv, '--reuid=65534', '--regid=65534', '--clear-groups', ...argv] : argv;
      const run = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
        const child = spawn(command[0] as string, command.slice(1), { cwd: repo, env: baseEnv(home) });
        let stderr = '';
        child.stderr.on('data', (d: Buffer) => {
          stderr += d.toString();
        });
        child.on('close', (code) => resolve({ code, stderr }));
      });
      expect(run.code).toBe(3);
      expect(run.stderr).toContain(home);
      expect(run.stderr.trim().split('\n')).toHaveLength(1);
      noStack(run.stderr);
    },
  );
});

describe('config errors name the key, where it came from, and what was meant', () => {
  it('a base_url without a scheme is a config error naming the key and the file, never a request', async () => {
    const repo = gitRepo();
    const home = keelHome('model = "m"\nbase_url = "127.0.0.1:18001/v1"\n');
    const run = await keel(['ask', '--json', 'hi'], { cwd: repo, home, timeoutMs: 10_000 });
    expect(run.code).toBe(2);
    const doc = JSON.parse(run.stdout);
    expect(doc.code).toBe('CONFIG_ERROR');
    expect(doc.error).toContain(
      `${join(home, 'config.toml')}: "base_url": expected a URL with http:// or https://`,
    );
    expect(doc.error).toContain('"127.0.0.1:18001/v1"');
    expect(run.stderr).not.toContain('retrying');
    const flag = await keel(['ask', '--model', 'm', '--base-url', 'localhost:8000', 'hi'], {
      cwd: repo,
      home: keelHome(),
    });
    expect(flag.code).toBe(2);
    expect(flag.stderr).toContain('flag: "base_url"');
    const env = await keel(['ask', '--model', 'm', 'hi'], {
      cwd: repo,
      home: keelHome(),
      env: { KEEL_BASE_URL: 'x:1' },
    });
    expect(env.code).toBe(2);
    expect(env.stderr).toContain('KEEL_BASE_URL: expected a URL');
  });

  it('an unknown key names the file, the key and the closest known key', async () => {
    const repo = gitRepo({ 'keel.toml': 'max_round = 3\n[budgets]\nmax_roundz = 2\n[timeouts]\nidle = 5\n' });
    const run = await keel(['ask', 'hi'], { cwd: repo, home: keelHome() });
    expect(run.code).toBe(2);
    const file = join(repo, 'keel.toml');
    expect(run.stderr).toContain(`${file}: unknown key "max_round" (did you mean "budgets.max_rounds"?)`);
    expect(run.stderr).toContain(
      `${file}: unknown key "budgets.max_roundz" (did you mean "budgets.max_rounds"?)`,
    );
    expect(run.stderr).toContain(`${file}: unknown key "timeouts.idle" (did you mean "timeouts.idle_s"?)`);
  });

  it('a bad KEEL_* value names the variable, not the key', async () => {
    const run = await keel(['-m', 'hi', '--model', 'm'], {
      cwd: gitRepo(),
      home: keelHome(),
      env: { KEEL_PERMISSION: 'bogus' },
    });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('KEEL_PERMISSION: expected one of "ask", "plan", "edit", "auto"');
    expect(run.stderr).not.toContain('"permission"');
  });
});

describe('a -C folder that does not exist', () => {
  it('config show, trust, trust diff and trust check say so, exit 2', async () => {
    const home = keelHome();
    const missing = join(tempDir(), 'nope');
    for (const args of [['config', 'show'], ['trust'], ['trust', 'diff'], ['trust', 'check']]) {
      const run = await keel([...args, '-C', missing], { cwd: home, home });
      expect(run.code, args.join(' ')).toBe(2);
      expect(run.stderr).toContain(`workspace ${missing} is not a folder`);
      const json = await keel([...args, '-C', missing, '--json'], { cwd: home, home });
      expect(JSON.parse(json.stdout)).toMatchObject({
        code: 'CONFIG_ERROR',
        exit_code: 2,
        error: `workspace ${missing} is not a folder`,
      });
    }
  });
});

describe('keel doctor', () => {
  it('reports how the sandbox limits are enforced, even with no config at all', async () => {
    const repo = gitRepo();
    const run = await keel(['doctor', '--json'], { cwd: repo, home: keelHome() });
    expect(run.code).toBe(2); // no model configured
    const doc = JSON.parse(run.stdout);
    expect(doc).toMatchObject({ code: 'CONFIG_ERROR', exit_code: 2 });
    const byName = Object.fromEntries(doc.checks.map((c: { name: string }) => [c.name, c]));
    expect(byName.config).toMatchObject({ status: 'fail' });
    expect(byName.sandbox?.status).toMatch(/ok|warn/);
    expect(byName.limits?.detail).toMatch(/processes 256 via (cgroup v[12]|rlimit)/);
    expect(byName.limits?.detail).toMatch(/cpu 300 s via rlimit/);
    expect(Object.keys(byName.limits?.mechanisms ?? {})).toEqual([
      'processes',
      'memory',
      'cpu',
      'fileSize',
      'output',
    ]);
  });

  it('a model the server does not have is a model error, exit 4', async () => {
    const server = await model([{ text: 'x' }], { models: ['test-model'] });
    const run = await keel(['doctor', ...modelFlags(server, 'absent-model'), '--json'], {
      cwd: gitRepo(),
      home: keelHome(),
    });
    expect(run.code).toBe(4);
    expect(JSON.parse(run.stdout)).toMatchObject({
      code: 'MODEL_ERROR',
      exit_code: 4,
      error: expect.stringContaining('absent-model is not among'),
    });
  });
});

describe('the shell denial with sandbox = "none"', () => {
  it('says sandbox is "none" and how to allow shell, not to install bubblewrap', async () => {
    const home = keelHome('sandbox = "none"\n');
    const server = await model([
      { tool_calls: [{ name: 'shell', arguments: { command: 'ls' } }] },
      { text: 'ok' },
    ]);
    const run = await keel(['edit', ...modelFlags(server), '--json', 'list files'], { cwd: gitRepo(), home });
    expect(run.code).toBe(0);
    const denial = lastSessionEvents(home).find(
      (e) => e.type === 'gate_decision' && e.data.decision === 'deny',
    );
    const reason = String(denial?.data.reason);
    expect(reason).toContain('sandbox = "none"');
    expect(reason).toContain('allow_shell = true');
    expect(reason).toContain('approver = true');
    expect(reason).not.toContain('bubblewrap');
  });
});

describe('an id prefix that matches several sessions', () => {
  it('is ambiguous, lists candidates and exits 2, in sessions show and wherever an id is taken', async () => {
    const repo = gitRepo();
    const home = keelHome();
    const server = await model([{ text: 'one' }, { text: 'two' }, { text: 'three' }]);
    for (const prompt of ['one', 'two', 'three'])
      expect((await keel(['ask', ...modelFlags(server), prompt], { cwd: repo, home })).code).toBe(0);
    const year = String(new Date().getUTCFullYear());
    const show = await keel(['sessions', 'show', year], { cwd: repo, home });
    expect(show.code).toBe(2);
    expect(show.stderr).toMatch(
      new RegExp(`"${year}" is ambiguous: it matches 3 sessions \\(${year}\\d{4}-`),
    );
    expect(show.stderr).not.toContain('no session matches');
    for (const args of [
      ['sessions', 'show', year, '--tree', '--json'],
      ['sessions', 'fork', year, '--json'],
      ['sessions', 'resume', year, '-m', 'again', '--json'],
      ['undo', year, '--json'],
    ]) {
      const run = await keel(args, { cwd: repo, home });
      expect(run.code, args.join(' ')).toBe(2);
      expect(JSON.parse(run.stdout).error, args.join(' ')).toContain('is ambiguous');
      noStack(run.stderr);
    }
  });
});
