/** The gate's ask and shell opt-in, with the real scope, real hook processes and real files. */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { configSchema } from '../../src/config/schema.js';
import { namesTool } from '../../src/policy/approvers.js';
import { decide, type GateContext } from '../../src/policy/gate.js';
import type { HookSpec } from '../../src/policy/hooks.js';
import { type Policy, policyFor } from '../../src/policy/policy.js';
import { Scope } from '../../src/policy/scope.js';
import { hubTools } from '../../src/tools/hub.js';
import { shellTool } from '../../src/tools/shell.js';
import { writeFileTool } from '../../src/tools/write-file.js';
import { tempDir } from '../helpers/tmp.js';

const root = tempDir();
const scripts = tempDir();

/** A hook process that prints `stdout` and exits with `code`. */
function hook(stdout: string, code: number, extra: Partial<HookSpec> = {}): HookSpec {
  const path = join(scripts, `h${Math.random().toString(36).slice(2)}.mjs`);
  writeFileSync(path, `process.stdout.write(${JSON.stringify(stdout)}); process.exit(${code});\n`);
  return { event: 'PreToolUse', command: [process.execPath, path], timeout_s: 10, ...extra };
}
const ask = (reason: string) => JSON.stringify({ decision: 'ask', reason });

function ctx(hooks: HookSpec[], over: Partial<Policy> = {}): GateContext {
  const base = policyFor({
    mode: 'edit',
    scope: new Scope({ root, writable: ['.'] }),
    config: configSchema.parse({}),
    sandbox: false,
  });
  return { policy: { ...base, hooks, ...over }, hookBase: { session_id: 't', cwd: root, mode: 'edit' } };
}

describe('a hook that asks', () => {
  it('carries the canonical paths a yes will write, for the safety net', async () => {
    const decision = await decide(writeFileTool, { path: 'a.txt', content: 'x' }, ctx([hook(ask('ok?'), 0)]));
    expect(decision).toMatchObject({
      kind: 'ask',
      question: 'ok?',
      ifConfirmed: { kind: 'allow', paths: [join(root, 'a.txt')] },
    });
  });

  it('does not stop the chain: a later hook that denies wins without asking', async () => {
    const hooks = [hook(ask('ok?'), 0), hook('', 2)];
    expect(await decide(writeFileTool, { path: 'a.txt', content: 'x' }, ctx(hooks))).toMatchObject({
      kind: 'deny',
      deny: 'hook',
    });
  });

  it('for shell with no sandbox and no opt-in is a denial: a yes could not run it', async () => {
    const decision = await decide(shellTool, { command: 'true' }, ctx([hook(ask('run?'), 0)]));
    expect(decision).toMatchObject({ kind: 'deny', deny: 'shell' });
  });

  it('for shell with a sandbox keeps the sandbox after a yes', async () => {
    const decision = await decide(
      shellTool,
      { command: 'true' },
      ctx([hook(ask('run?'), 0)], { sandbox: true }),
    );
    expect(decision).toMatchObject({ kind: 'ask', ifConfirmed: { sandboxed: true } });
  });
});

describe('shell without a sandbox', () => {
  it('is denied with a hook that only logs, and the reason names both opt-ins', async () => {
    for (const matcher of [undefined, '.*', 'shell']) {
      const logger = hook('', 0, matcher === undefined ? {} : { matcher });
      const decision = await decide(shellTool, { command: 'true' }, ctx([logger]));
      expect(decision).toMatchObject({ kind: 'deny', deny: 'shell' });
      if (decision.kind === 'deny') expect(decision.reason).toMatch(/allow_shell = true.*approver = true/);
    }
  });

  it('is denied with an approver whose matcher does not name shell', async () => {
    const approver = hook('', 0, { matcher: 'sh.*', approver: true });
    expect(await decide(shellTool, { command: 'true' }, ctx([approver]))).toMatchObject({ kind: 'deny' });
  });

  it('runs unsandboxed once an approver naming shell allows it, or with allow_shell', async () => {
    const approver = hook('', 0, { matcher: 'write_file|shell', approver: true });
    expect(await decide(shellTool, { command: 'true' }, ctx([approver]))).toMatchObject({
      kind: 'allow',
      sandboxed: false,
    });
    // allow_shell lets it run, but a person is asked first (unless approvals = "never")
    expect(await decide(shellTool, { command: 'true' }, ctx([], { allowShell: true }))).toMatchObject({
      kind: 'ask',
      approval: 'shell',
      hook: '',
      question: 'this command would run outside the sandbox',
      ifConfirmed: { kind: 'allow', sandboxed: false },
    });
    expect(
      await decide(shellTool, { command: 'true' }, ctx([], { allowShell: true, approvals: 'never' })),
    ).toMatchObject({ kind: 'allow', sandboxed: false });
  });
});

describe('namesTool', () => {
  it.each([
    ['shell', true],
    ['^shell$', true],
    ['edit_file|shell', true],
    ['(shell|run_tests)', true],
    ['(?:write_file|(shell))', true],
    ['.*', false],
    ['sh.*', false],
    ['shel+', false],
    ['[s]hell', false],
    ['(shell)|x)', false], // not a valid regex
    ['(a)(shell)', false],
    ['shell_x', false],
    ['\\|shell', false],
  ])('%s names shell: %s', (matcher, expected) => {
    expect(namesTool(matcher, 'shell')).toBe(expected);
  });

  it('no matcher names nothing', () => {
    expect(namesTool(undefined, 'shell')).toBe(false);
  });
});

describe('approvals: keel asks a person only about calls the policy allows', () => {
  const sandboxed = (approvals: Policy['approvals']) => ctx([], { sandbox: true, approvals });
  it.each([
    [undefined, 'write_file', 'allow'],
    [undefined, 'shell', 'allow'],
    ['writes', 'write_file', 'ask'],
    ['writes', 'shell', 'allow'],
    ['shell', 'write_file', 'allow'],
    ['shell', 'shell', 'ask'],
    ['all', 'write_file', 'ask'],
    ['all', 'shell', 'ask'],
    ['never', 'write_file', 'allow'],
  ] as const)('approvals = %s, %s (sandboxed): %s', async (approvals, name, kind) => {
    const tool = name === 'shell' ? shellTool : writeFileTool;
    const args = name === 'shell' ? { command: 'true' } : { path: 'a.txt', content: 'x' };
    const decision = await decide(tool, args, sandboxed(approvals));
    expect(decision.kind).toBe(kind);
    if (decision.kind === 'ask')
      expect(decision).toMatchObject({ hook: '', approval: name === 'shell' ? 'shell' : 'write' });
  });

  it('hub_send leaves the machine: asked about like a command outside the sandbox, never needs allow_shell, and read-only modes refuse it', async () => {
    const env = {
      KEEL_HUB_URL: 'http://127.0.0.1:9',
      KEEL_HUB_TOKEN: 'khp_00_x',
      KEEL_AGENT_NAME: 'a',
      KEEL_HOME: root,
    };
    const send = (await hubTools({ env } as never)).find((t) => t.name === 'hub_send');
    if (!send) throw new Error('no hub_send');
    const args = { to: 'b', text: 'hi' };
    // the default asks, though the sandbox is there: the words are not contained by it
    const asked = await decide(send, args, sandboxed(undefined));
    expect(asked).toMatchObject({ kind: 'ask', approval: 'shell' });
    if (asked.kind === 'ask')
      expect(asked.question).toBe("hub_send sends the session's words to another agent");
    expect((await decide(send, args, sandboxed('never'))).kind).toBe('allow');
    // no sandbox and no allow_shell: still allowed (asked), for nothing runs here
    expect((await decide(send, args, ctx([], { sandbox: false, allowShell: false }))).kind).toBe('ask');
    expect(await decide(send, args, ctx([], { mode: 'ask' }))).toMatchObject({ kind: 'deny', deny: 'mode' });
  });

  it('never turns a denial into a question: out of scope is still denied under approvals = "all"', async () => {
    const decision = await decide(writeFileTool, { path: '../out.txt', content: 'x' }, sandboxed('all'));
    expect(decision).toMatchObject({ kind: 'deny', deny: 'scope' });
  });

  it('a hook that asks and the setting ask once, together, and the hook is named', async () => {
    const decision = await decide(
      writeFileTool,
      { path: 'a.txt', content: 'x' },
      { ...sandboxed('writes'), policy: { ...sandboxed('writes').policy, hooks: [hook(ask('sure?'), 0)] } },
    );
    expect(decision).toMatchObject({ kind: 'ask', approval: 'write' });
    if (decision.kind === 'ask') {
      expect(decision.hook).not.toBe('');
      expect(decision.question).toMatch(/^sure\?; approvals = "writes"/);
    }
  });
});
