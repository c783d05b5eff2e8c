import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  baseEnv,
  chatBodies,
  KEEL_BIN,
  keel,
  keelHome,
  lastSessionEvents,
  model,
  modelFlags,
  requestMessages,
} from '../e2e/harness.js';
import { git, gitRepo, tempDir } from '../helpers/tmp.js';

/** Write a small Node hook script; it gets the event on stdin. */
function hookScript(body: string): string {
  const dir = tempDir('keel-hook-');
  const path = join(dir, 'hook.mjs');
  writeFileSync(
    path,
    `let input = '';\nprocess.stdin.on('data', (d) => (input += d));\nprocess.stdin.on('end', async () => {\n  const event = JSON.parse(input);\n${body}\n});\n`,
  );
  return path;
}

function hooksToml(event: string, script: string, extra = ''): string {
  return `[[hooks]]\nevent = "${event}"\ncommand = ["${process.execPath}", "${script}"]\n${extra}`;
}

describe('hooks', () => {
  it('a PreToolUse hook that exits 2 denies the call, and the model sees its stderr', async () => {
    const repo = gitRepo();
    const script = hookScript(
      `  if (event.tool === 'write_file' && event.args.path.endsWith('.env')) { process.stderr.write('no writing .env files'); process.exit(2); }\n  process.exit(0);`,
    );
    const home = keelHome(hooksToml('PreToolUse', script, 'matcher = "write_file|edit_file"\n'));
    const server = await model([
      { tool_calls: [{ name: 'write_file', arguments: { path: 'prod.env', content: 'X=1' } }] },
      { text: 'understood', expect: { last_tool_result_contains: 'no writing .env files' } },
    ]);
    const run = await keel(['edit', ...modelFlags(server), 'write env'], { cwd: repo, home });
    expect(run.code).toBe(0);
    expect(existsSync(join(repo, 'prod.env'))).toBe(false);
    const gate = lastSessionEvents(home).find((e) => e.type === 'gate_decision');
    expect(gate?.data).toMatchObject({ decision: 'deny', deny: 'hook' });
  });

  it('tool arguments reach a hook only on stdin: shell metacharacters stay inert', async () => {
    const repo = gitRepo();
    const marker = join(tempDir(), 'pwned');
    const script = hookScript('  process.exit(0);');
    const home = keelHome(hooksToml('PreToolUse', script));
    const evil = `$(touch ${marker}); \`touch ${marker}\`; echo "x" > ${marker}`;
    const server = await model([
      { tool_calls: [{ name: 'grep', arguments: { pattern: evil } }] },
      { text: 'done' },
    ]);
    const run = await keel(['ask', ...modelFlags(server), 'search'], { cwd: repo, home });
    expect(run.code).toBe(0);
    expect(existsSync(marker)).toBe(false);
  });

  it('a hook that crashes or times out denies', async () => {
    const repo = gitRepo();
    const crash = hookScript('  throw new Error("hook bug");');
    const slow = hookScript('  setTimeout(() => process.exit(0), 10_000);');
    const home = keelHome(
      `${hooksToml('PreToolUse', crash, 'matcher = "read_file"\n')}\n${hooksToml('PreToolUse', slow, 'matcher = "list_dir"\ntimeout_s = 0.5\n')}`,
    );
    const server = await model([
      {
        tool_calls: [
          { name: 'read_file', arguments: { path: 'README.md' } },
          { name: 'list_dir', arguments: {} },
        ],
      },
      { text: 'done' },
    ]);
    const run = await keel(['ask', ...modelFlags(server), 'look'], { cwd: repo, home });
    expect(run.code).toBe(0);
    const denials = lastSessionEvents(home)
      .filter((e) => e.type === 'gate_decision' && e.data.decision === 'deny')
      .map((e) => String(e.data.reason));
    expect(denials).toHaveLength(2);
    expect(denials[0]).toMatch(/exited 1/);
    expect(denials[1]).toMatch(/timed out after 0.5 s/);
  });

  it('a hook that asks is denied in an unattended session', async () => {
    const repo = gitRepo();
    const script = hookScript(
      `  process.stdout.write(JSON.stringify({ decision: 'ask', reason: 'delete files?' }));`,
    );
    const home = keelHome(hooksToml('PreToolUse', script, 'matcher = "write_file"\n'));
    const server = await model([
      { tool_calls: [{ name: 'write_file', arguments: { path: 'a.txt', content: 'x' } }] },
      { text: 'ok', expect: { last_tool_result_contains: 'no one to ask' } },
    ]);
    const run = await keel(['run', ...modelFlags(server), 'go'], { cwd: repo, home });
    expect(run.code).toBe(0);
    expect(existsSync(join(repo, 'a.txt'))).toBe(false);
  });

  it('an approver hook naming shell lets shell run when there is no sandbox', async () => {
    const repo = gitRepo();
    const script = hookScript(`  process.exit(event.args.command.startsWith('echo ') ? 0 : 2);`);
    const home = keelHome(
      `sandbox = "none"\n${hooksToml('PreToolUse', script, 'matcher = "edit_file|shell"\napprover = true\n')}`,
    );
    const server = await model([
      { tool_calls: [{ name: 'shell', arguments: { command: 'echo allowed-by-hook' } }] },
      { text: 'ok', expect: { last_tool_result_contains: 'allowed-by-hook' } },
    ]);
    const run = await keel(['edit', ...modelFlags(server), 'go'], { cwd: repo, home });
    expect(run.code).toBe(0);
    const start = lastSessionEvents(home).find((e) => e.type === 'tool_start');
    expect(start?.data.sandboxed).toBe(false);
  });

  it('a hook that only logs (exits 0, matches shell) does not stand in for the sandbox', async () => {
    const repo = gitRepo();
    const script = hookScript('  process.exit(0);');
    // `.*` matches shell, and `shell` names it, but neither hook says it approves commands
    const home = keelHome(
      `sandbox = "none"\n${hooksToml('PreToolUse', script, 'matcher = ".*"\napprover = true\n')}\n${hooksToml('PreToolUse', script, 'matcher = "shell"\n')}`,
    );
    const server = await model([
      { tool_calls: [{ name: 'shell', arguments: { command: 'touch made-by-shell' } }] },
      { text: 'ok', expect: { last_tool_result_contains: 'approver = true' } },
    ]);
    const run = await keel(['edit', ...modelFlags(server), '--json', 'go'], { cwd: repo, home });
    expect(JSON.parse(run.stdout)).toMatchObject({ code: 'COMPLETED', exit_code: 0 });
    expect(existsSync(join(repo, 'made-by-shell'))).toBe(false);
    const gate = lastSessionEvents(home).find((e) => e.type === 'gate_decision');
    expect(gate?.data).toMatchObject({ decision: 'deny', deny: 'shell' });
  });

  it('a UserPromptSubmit hook that denies ends the run HOOK_DENIED before the model is called', async () => {
    const repo = gitRepo();
    const script = hookScript(
      `  process.stderr.write('prompt mentions prod'); process.exit(event.prompt.includes('prod') ? 2 : 0);`,
    );
    const home = keelHome(hooksToml('UserPromptSubmit', script));
    const server = await model([{ text: 'never' }]);
    const run = await keel(['ask', ...modelFlags(server), '--json', 'touch prod'], { cwd: repo, home });
    expect(run.code).toBe(1);
    expect(JSON.parse(run.stdout)).toMatchObject({ code: 'HOOK_DENIED' });
    expect(chatBodies(server)).toHaveLength(0);
  });

  it('a Stop hook that denies sends the model back to work with its reason', async () => {
    const repo = gitRepo();
    const flag = join(tempDir(), 'seen');
    const script = hookScript(
      `  const fs = await import('node:fs');\n  if (fs.existsSync(${JSON.stringify(flag)})) process.exit(0);\n  fs.writeFileSync(${JSON.stringify(flag)}, '1');\n  process.stderr.write('run the tests first');\n  process.exit(2);`,
    );
    const home = keelHome(hooksToml('Stop', script));
    const server = await model([
      { text: 'done early' },
      { text: 'done for real', expect: { last_user_contains: 'run the tests first' } },
    ]);
    const run = await keel(['ask', ...modelFlags(server), '--json', 'work'], { cwd: repo, home });
    expect(JSON.parse(run.stdout)).toMatchObject({ code: 'COMPLETED', summary: 'done for real', rounds: 2 });
  });
});

describe('project trust', () => {
  it('a project config that adds a hook takes effect only after keel trust, and again only after re-trust', async () => {
    const marker = join(tempDir(), 'hook-ran');
    const script = hookScript(
      `  (await import('node:fs')).writeFileSync(${JSON.stringify(marker)}, 'ran');\n  process.exit(0);`,
    );
    const repo = gitRepo({ 'keel.toml': hooksToml('SessionStart', script) });
    const home = keelHome();
    const turns = [{ text: 'one' }, { text: 'two' }, { text: 'three' }];
    const server = await model(turns);

    const untrusted = await keel(['ask', ...modelFlags(server), 'hi'], { cwd: repo, home });
    expect(untrusted.code).toBe(0);
    expect(untrusted.stderr).toContain('is not trusted: ignoring hooks');
    expect(existsSync(marker)).toBe(false);

    const trust = await keel(['trust'], { cwd: repo, home });
    expect(trust.code).toBe(0);
    expect(trust.stdout).toContain('hooks');
    await keel(['ask', ...modelFlags(server), 'hi'], { cwd: repo, home });
    expect(existsSync(marker)).toBe(true);

    writeFileSync(join(repo, 'keel.toml'), `${hooksToml('SessionStart', script)}allow_shell = true\n`);
    const changed = await keel(['ask', ...modelFlags(server), 'hi'], { cwd: repo, home });
    expect(changed.stderr).toContain('changed since you trusted it');
  });

  it('trust diff lists expansions and narrowings; trust check exits 1 on an expansion', async () => {
    const repo = gitRepo({ 'keel.toml': 'allow_shell = true\n[budgets]\nmax_rounds = 10\n' });
    const home = keelHome();
    writeFileSync(
      join(repo, 'keel.toml'),
      'sandbox_network = true\nbase_url = "http://203.0.113.9/v1"\n[budgets]\nmax_rounds = 100\n',
    );
    const diff = await keel(['trust', 'diff', '--json'], { cwd: repo, home });
    const changes = JSON.parse(diff.stdout).changes as Array<{ key: string; kind: string }>;
    const byKey = Object.fromEntries(changes.map((c) => [c.key, c.kind]));
    expect(byKey).toEqual({
      allow_shell: 'narrowing',
      sandbox_network: 'expansion',
      base_url: 'expansion',
      'budgets.max_rounds': 'expansion',
    });
    const check = await keel(['trust', 'check'], { cwd: repo, home });
    expect(check.code).toBe(1);
    git(repo, 'commit', '-qam', 'widen');
    const clean = await keel(['trust', 'check'], { cwd: repo, home });
    expect(clean.code).toBe(0);
  });

  it('an untrusted project cannot point keel at another endpoint', async () => {
    const repo = gitRepo({ 'keel.toml': 'base_url = "http://203.0.113.9/v1"\nmodel = "m"\n' });
    const home = keelHome();
    const server = await model([{ text: 'local answer' }]);
    const run = await keel(['ask', 'hi'], {
      cwd: repo,
      home,
      env: { KEEL_PROVIDER: 'openai', KEEL_BASE_URL: undefined },
    });
    // without trust the project's base_url is ignored and the default (local) one is used
    expect(run.stderr).toContain('ignoring base_url');
    expect(server.requests).toHaveLength(0);
    expect(requestMessages).toBeTypeOf('function');
  });
});

describe('shell through the real sandbox', () => {
  it('edit mode runs shell in bubblewrap: writes inside land, writes outside and into .git do not', async () => {
    const repo = gitRepo();
    const outside = tempDir();
    const home = keelHome();
    const command = `echo inside > made.txt; echo x > ${outside}/escaped.txt; echo x > .git/evil; echo done`;
    const server = await model([
      { tool_calls: [{ name: 'shell', arguments: { command } }] },
      { text: 'ok', expect: { last_tool_result_contains: 'done' } },
    ]);
    const run = await keel(['edit', ...modelFlags(server), 'go'], { cwd: repo, home });
    expect(run.code).toBe(0);
    expect(existsSync(join(repo, 'made.txt'))).toBe(true);
    expect(existsSync(join(outside, 'escaped.txt'))).toBe(false);
    expect(existsSync(join(repo, '.git/evil'))).toBe(false);
    const start = lastSessionEvents(home).find((e) => e.type === 'tool_start');
    expect(start?.data.sandboxed).toBe(true);
  });

  it('a sandbox required by name that cannot run exits 3 and runs nothing', async () => {
    const repo = gitRepo();
    const home = keelHome('sandbox = "docker"\n');
    const server = await model([{ text: 'never' }]);
    const run = await keel(['edit', ...modelFlags(server), '--json', 'go'], { cwd: repo, home });
    expect(run.code).toBe(3);
    expect(JSON.parse(run.stdout)).toMatchObject({ code: 'ENVIRONMENT_ERROR' });
    expect(run.stdout).toContain('docker');
    expect(chatBodies(server)).toHaveLength(0);
  });
});

/** Run keel at a real terminal (script(1)), as a person would, answering `answer` to its question. */
async function atTerminal(args: string[], cwd: string, home: string, answer: string) {
  const command = [process.execPath, KEEL_BIN, ...args].map((a) => `'${a}'`).join(' ');
  const child = spawn('script', ['-qec', command, '/dev/null'], {
    cwd,
    env: { ...baseEnv(home), TERM: 'dumb' },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let screen = '';
  child.stdout.on('data', (d: Buffer) => {
    screen += d.toString();
    if (screen.includes('[y]es / [n]o') && !child.stdin.writableEnded) child.stdin.end(answer);
  });
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  return { code, screen };
}

describe('asking the person', () => {
  const askHook = () =>
    hooksToml(
      'PreToolUse',
      hookScript(`  process.stdout.write(JSON.stringify({ decision: 'ask', reason: 'write a.txt?' }));`),
      'matcher = "write_file"\n',
    );

  it('an interactive session asks at the terminal, and a yes lets the call run', async () => {
    const repo = gitRepo();
    const home = keelHome(askHook());
    const server = await model([
      { tool_calls: [{ name: 'write_file', arguments: { path: 'a.txt', content: 'x' } }] },
      { text: 'written' },
    ]);
    const { code, screen } = await atTerminal(['edit', ...modelFlags(server), 'write'], repo, home, 'y\n');
    // the question names the file, says why (the hook's words) and shows the diff
    expect(screen).toContain('keel asks: write_file a.txt');
    expect(screen).toContain('write a.txt?');
    expect(screen).toContain('+x');
    expect(code).toBe(0);
    expect(existsSync(join(repo, 'a.txt'))).toBe(true);
  });

  it('a confirmed ask outside git keeps the safety net: keel undo --yes restores the file', async () => {
    const dir = tempDir('keel-nogit-');
    writeFileSync(join(dir, 'a.txt'), 'original\n');
    const home = keelHome(askHook());
    const server = await model([
      { tool_calls: [{ name: 'write_file', arguments: { path: 'a.txt', content: 'overwritten\n' } }] },
      { text: 'written' },
    ]);
    const { code } = await atTerminal(['edit', ...modelFlags(server), 'write'], dir, home, 'y\n');
    expect(code).toBe(0);
    expect(readFileSync(join(dir, 'a.txt'), 'utf8')).toBe('overwritten\n');
    const net = lastSessionEvents(home).filter((e) => e.type === 'safety_net');
    expect(net).not.toHaveLength(0);
    const undo = await keel(['undo', '--yes'], { cwd: dir, home });
    expect(undo.code).toBe(0);
    expect(readFileSync(join(dir, 'a.txt'), 'utf8')).toBe('original\n');
  });
});
