/** Usage through the real binary: one --json error shape, prompts from words and pipes, did-you-mean, help, broken pipes. */
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { gitRepo } from '../helpers/tmp.js';
import { baseEnv, KEEL_BIN, keel, keelHome, lastSessionEvents, model, modelFlags, shell } from './harness.js';

/** The one document a --json error prints: at least code, exit_code and error, and nothing else on stdout. */
function errorDoc(stdout: string): { code: string; exit_code: number; error: string } {
  const doc = JSON.parse(stdout);
  expect(doc).toMatchObject({
    code: expect.any(String),
    exit_code: expect.any(Number),
    error: expect.any(String),
  });
  return doc;
}

describe('--json errors have one shape, usage errors too', () => {
  it('an unknown flag, an unknown verb, a bad number and an unknown session each print one document, exit 2', async () => {
    const repo = gitRepo();
    const home = keelHome();
    const cases: Array<[string[], RegExp]> = [
      [['--bogus', '--json'], /unknown option '--bogus'/],
      [['sesions', 'list', '--json'], /unknown command "sesions" \(did you mean sessions\?\)/],
      [['ask', '--max-rounds', '0', '--json', 'hi'], /--max-rounds.*expected a positive integer, got "0"/],
      [['sessions', 'show', 'nope', '--json'], /no session matches "nope"/],
      [['sessions', 'lst', '--json'], /unknown command 'lst'/],
      [['check', '-C', '/nonexistent', '--json'], /no such folder: \/nonexistent/],
      [['check', '-C', home, '--json'], /keel check scans the files git tracks/],
      [['audit', 'verify', '/nonexistent', '--json'], /no audit log at \/nonexistent/],
    ];
    for (const [args, message] of cases) {
      const run = await keel(args, { cwd: repo, home });
      expect(run.code, args.join(' ')).toBe(2);
      const doc = errorDoc(run.stdout);
      expect(doc).toMatchObject({ code: 'CONFIG_ERROR', exit_code: 2 });
      expect(doc.error).toMatch(message);
      // the document is the whole answer: no commander text beside it
      expect(run.stderr, args.join(' ')).toBe('');
    }
  });

  it("a session verb's error document has error (and summary, as before)", async () => {
    const run = await keel(['ask', '--json'], { cwd: gitRepo(), home: keelHome() });
    expect(run.code).toBe(2);
    const doc = errorDoc(run.stdout);
    expect(doc.error).toContain('no prompt given');
    expect(doc).toMatchObject({ summary: doc.error, session_id: null, mode: 'ask' });
  });
});

describe('the prompt without a verb', () => {
  it('a quoted multi-word first argument is the prompt', async () => {
    const server = await model([{ text: 'hello back', expect: { last_user_contains: 'hi there' } }]);
    const run = await keel(['hi there', ...modelFlags(server), '--json'], {
      cwd: gitRepo(),
      home: keelHome(),
    });
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ mode: 'ask', code: 'COMPLETED', summary: 'hello back' });
  });

  it('a prompt piped to bare keel runs a session', async () => {
    const server = await model([{ text: 'piped back', expect: { last_user_contains: 'from a pipe' } }]);
    const run = await keel([...modelFlags(server), '--json'], {
      cwd: gitRepo(),
      home: keelHome(),
      input: 'a question from a pipe\n',
    });
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ code: 'COMPLETED', summary: 'piped back' });
  });

  it('a prompt from a slow writer is read to its end', async () => {
    const repo = gitRepo();
    const home = keelHome();
    const server = await model([{ text: 'slow ok', expect: { last_user_contains: 'slow question' } }]);
    const flags = modelFlags(server).join(' ');
    const run = await shell(`(sleep 1; echo slow question) | $KEEL ask ${flags} --json`, repo, home);
    expect(run.stderr).not.toContain('no prompt given');
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ code: 'COMPLETED', summary: 'slow ok' });
  });

  it('a task whose first word is merely like a verb is a task', async () => {
    const server = await model([{ text: 'tested', expect: { last_user_contains: 'test the parser' } }]);
    const run = await keel(['test', 'the', 'parser', ...modelFlags(server), '--json'], {
      cwd: gitRepo(),
      home: keelHome(),
    });
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ code: 'COMPLETED', summary: 'tested' });
  });

  it('bare keel with nothing on stdin prints help', async () => {
    const run = await keel([], { cwd: gitRepo(), home: keelHome() });
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('Usage: keel');
  });

  it('one word close to a verb is a typo with did-you-mean, not a prompt', async () => {
    const repo = gitRepo();
    const home = keelHome();
    for (const [args, meant] of [
      [['edt'], 'edit'],
      [['sesions', 'list'], 'sessions'],
      [['aks', 'hi'], 'ask'],
    ] as const) {
      const run = await keel([...args], { cwd: repo, home });
      expect(run.code, args.join(' ')).toBe(2);
      expect(run.stderr).toContain(`unknown command "${args[0]}" (did you mean ${meant}?)`);
    }
    // and nothing was started for them
    const list = await keel(['sessions', 'list', '--json'], { cwd: repo, home });
    expect(JSON.parse(list.stdout).sessions).toEqual([]);
  });
});

describe('did-you-mean and help', () => {
  it('an unknown flag names the flag it was close to', async () => {
    const run = await keel(['ask', '--max-round', '3', 'hi'], { cwd: gitRepo(), home: keelHome() });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("unknown option '--max-round'");
    expect(run.stderr).toContain('--max-rounds');
  });

  it('keel help, keel help VERB and keel help sessions list', async () => {
    const cwd = gitRepo();
    const home = keelHome();
    const top = await keel(['help'], { cwd, home });
    expect(top.code).toBe(0);
    expect(top.stdout).toContain('Usage: keel');
    const verb = await keel(['help', 'edit'], { cwd, home });
    expect(verb.stdout).toContain('Usage: keel edit');
    expect(verb.stdout).toContain('--max-rounds');
    const nested = await keel(['help', 'sessions', 'list'], { cwd, home });
    expect(nested.code).toBe(0);
    expect(nested.stdout).toContain('Usage: keel sessions list');
    expect(nested.stdout).toContain('--limit');
    const typo = await keel(['help', 'sesions'], { cwd, home });
    expect(typo.code).toBe(2);
    expect(typo.stderr).toContain('unknown command "sesions" (did you mean sessions?)');
  });
});

describe('a reader that goes away', () => {
  it('keel ... | head ends quietly, without EPIPE or a stack', async () => {
    const repo = gitRepo();
    const home = keelHome();
    // more than a pipe buffer of output, of which head reads one line
    const run = await shell(
      'for i in 1 2 3 4 5 6 7 8; do $KEEL help; $KEEL help edit; done | head -1',
      repo,
      home,
    );
    expect(run.stdout.trim()).toBe('Usage: keel [options] [command] [prompt...]');
    const closed = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, [KEEL_BIN, 'help', 'edit'], { cwd: repo, env: baseEnv(home) });
      child.stdout.destroy(); // the reader is gone before keel writes
      let stderr = '';
      child.stderr.on('data', (d: Buffer) => {
        stderr += d.toString();
      });
      child.on('close', (code) => resolve({ code, stderr }));
    });
    expect(closed.stderr).not.toContain('EPIPE');
    expect(closed.stderr).not.toMatch(/\n\s+at /);
    expect(closed.code).toBe(0);
  });

  it('a session whose stdout is closed still ends its log with a terminal code', async () => {
    const repo = gitRepo();
    const home = keelHome();
    const server = await model([{ text: 'a long answer '.repeat(2000), chunk_size: 500 }]);
    const done = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, [KEEL_BIN, 'ask', ...modelFlags(server), 'talk'], {
        cwd: repo,
        env: baseEnv(home),
      });
      child.stdout.destroy();
      let stderr = '';
      child.stderr.on('data', (d: Buffer) => {
        stderr += d.toString();
      });
      child.on('close', (code) => resolve({ code, stderr }));
    });
    expect(done.stderr).not.toContain('EPIPE');
    expect(done.stderr).not.toMatch(/\n\s+at /);
    expect([0, 130]).toContain(done.code);
    expect(lastSessionEvents(home).at(-1)?.type).toBe('session_end');
  });
});
