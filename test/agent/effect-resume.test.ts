/**
 * Each rule by which a resumed session settles a call its killed run left without a result
 * (src/agent/effect-resume.ts). A session runs to its end in a real git workspace; its log is cut right
 * after the call's tool_start (what a kill there leaves), the workspace is set to what the kill might have
 * left, and the session is resumed from the cut log.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { SessionEvent } from '../../src/agent/events.js';
import { replay } from '../../src/agent/history.js';
import { runSession, type WorktreeJournal } from '../../src/agent/loop.js';
import { configSchema } from '../../src/config/schema.js';
import { worktreeJournal } from '../../src/fix/worktree-journal.js';
import { ModelClient } from '../../src/model/chain.js';
import type { ScriptTurn } from '../../src/model/script.js';
import { createScriptedProvider } from '../../src/model/scripted.js';
import { openRepoAt } from '../../src/policy/git.js';
import { policyFor } from '../../src/policy/policy.js';
import { createSandbox } from '../../src/policy/sandbox.js';
import { Scope } from '../../src/policy/scope.js';
import { builtinTools } from '../../src/tools/builtin.js';
import { ToolRegistry } from '../../src/tools/registry.js';
import type { Tool } from '../../src/tools/types.js';
import { gitRepo } from '../helpers/tmp.js';

const config = configSchema.parse({ allow_shell: true, sandbox: 'none' });

function client(turns: ScriptTurn[]): ModelClient {
  return new ModelClient([{ provider: createScriptedProvider({ turns }), model: 'scripted' }], {
    timeouts: { firstTokenMs: 5000, idleMs: 5000 },
    retries: { max: 0, base_delay_ms: 1, max_delay_ms: 1 },
    cooldownS: 0,
  });
}

/** Tools as an MCP server's look to keel: one declared read-only, one not; each counts its runs. */
function mcpTools(runs: Record<string, number>): Tool[] {
  const tool = (name: string, effect: 'read' | 'exec'): Tool => ({
    name,
    description: name,
    effect,
    schema: z.object({}),
    async execute() {
      runs[name] = (runs[name] ?? 0) + 1;
      return { output: `${name} done` };
    },
  });
  return [tool('mcp__srv__look', 'read'), tool('mcp__srv__send', 'exec')];
}

interface Workspace {
  root: string;
  journal: WorktreeJournal;
  runs: Record<string, number>;
}

function workspace(): Workspace {
  const root = gitRepo({ 'a.txt': 'one\ntwo\n' });
  openRepoAt(root);
  const journal = worktreeJournal({
    kind: 'worktree',
    dir: root,
    top: root,
    source: root,
    linked: [],
    linkedFrom: [],
    moduleShadows: [],
  });
  return { root, journal, runs: {} };
}

async function run(
  ws: Workspace,
  turns: ScriptTurn[],
  log: SessionEvent[],
  resume: boolean,
): Promise<{ code: string; events: SessionEvent[] }> {
  const scope = new Scope({ root: ws.root, writable: ['.'] });
  const sandbox = await createSandbox({
    kind: 'none',
    root: ws.root,
    writable: [ws.root],
    network: false,
    limits: config.sandbox_limits,
  });
  const from = log.length;
  const result = await runSession({
    policy: policyFor({ mode: 'edit', scope, config, sandbox: false }),
    prompt: resume ? '' : 'do it',
    config,
    model: client(turns),
    tools: new ToolRegistry(builtinTools(), mcpTools(ws.runs)),
    record: (e) => log.push(e),
    signal: new AbortController().signal,
    sessionId: 'resume-test',
    plainExec: (command, o) => sandbox.run(command, o),
    worktree: ws.journal,
    ...(resume ? { resume: replay(log.map((event, i) => ({ seq: i + 1, event }))) } : {}),
  });
  return { code: result.code, events: log.slice(from) };
}

/** A session making `call`, run to its end, its log cut right after the call's tool_start. */
async function killedMidCall(ws: Workspace, call: { name: string; arguments: Record<string, unknown> }) {
  const full: SessionEvent[] = [];
  await run(ws, [{ tool_calls: [call] }, { text: 'done' }], full, false);
  const cut = full.findIndex((e) => e.type === 'tool_start');
  expect(cut).toBeGreaterThan(0);
  return { full, log: full.slice(0, cut + 1) };
}

const results = (events: SessionEvent[]) =>
  events.filter((e): e is Extract<SessionEvent, { type: 'tool_result' }> => e.type === 'tool_result');

const edit = {
  name: 'edit_file',
  arguments: { path: 'a.txt', old_string: 'two', new_string: 'TWO' },
};

describe('a resumed session settles the calls its killed run left open', () => {
  it('a read is run again', async () => {
    const ws = workspace();
    const { log } = await killedMidCall(ws, { name: 'read_file', arguments: { path: 'a.txt' } });
    const resumed = await run(ws, [{ text: 'done' }], log, true);
    expect(resumed.code).toBe('COMPLETED');
    const [result] = results(resumed.events);
    expect(result).toMatchObject({ call_id: 'c1', tool: 'read_file', resumed: 'rerun', is_error: false });
    expect(result?.output).toContain('two');
  });

  it('a write that happened is recorded as it happened, not written again', async () => {
    const ws = workspace();
    const { full, log } = await killedMidCall(ws, edit);
    expect(readFileSync(join(ws.root, 'a.txt'), 'utf8')).toBe('one\nTWO\n');
    const resumed = await run(ws, [{ text: 'done' }], log, true);
    expect(resumed.code).toBe('COMPLETED');
    // run again, the edit would fail: "two" is no longer in the file
    const [result] = results(resumed.events);
    const original = results(full)[0];
    expect(result).toMatchObject({ resumed: 'happened', is_error: false, output: original?.output });
    expect(result?.files_after).toEqual(original?.files_after);
    expect(readFileSync(join(ws.root, 'a.txt'), 'utf8')).toBe('one\nTWO\n');
  });

  it('a write that did not happen is applied once', async () => {
    const ws = workspace();
    const { log } = await killedMidCall(ws, edit);
    writeFileSync(join(ws.root, 'a.txt'), 'one\ntwo\n'); // killed before the write
    const resumed = await run(ws, [{ text: 'done' }], log, true);
    expect(resumed.code).toBe('COMPLETED');
    expect(results(resumed.events)).toMatchObject([{ resumed: 'applied', is_error: false }]);
    expect(readFileSync(join(ws.root, 'a.txt'), 'utf8')).toBe('one\nTWO\n');
  });

  it('a write whose file someone else changed is blocked_uncertain, and the file is left alone', async () => {
    const ws = workspace();
    const { log } = await killedMidCall(ws, edit);
    writeFileSync(join(ws.root, 'a.txt'), 'one\ntwo\nthree\n');
    const resumed = await run(ws, [{ text: 'never asked' }], log, true);
    expect(resumed.code).toBe('BLOCKED_UNCERTAIN');
    expect(resumed.events.find((e) => e.type === 'effect_uncertain')).toMatchObject({
      call_id: 'c1',
      tool: 'edit_file',
    });
    expect(results(resumed.events)).toEqual([]);
    expect(resumed.events.some((e) => e.type === 'model_request')).toBe(false);
    expect(readFileSync(join(ws.root, 'a.txt'), 'utf8')).toBe('one\ntwo\nthree\n');
  });

  it('a shell command runs again from the tree recorded at its intent, so its append is not doubled', async () => {
    const ws = workspace();
    const { log } = await killedMidCall(ws, {
      name: 'shell',
      arguments: { command: "printf 'ran\\n' >> a.txt && printf 'new\\n' > made.txt" },
    });
    const intent = (log.at(-1) as Extract<SessionEvent, { type: 'tool_start' }>).intent;
    expect(intent).toMatchObject({ effect: 'worktree', tree: expect.stringMatching(/^[0-9a-f]{40}$/) });
    // the killed run's command had run: its append is in the file
    expect(readFileSync(join(ws.root, 'a.txt'), 'utf8')).toBe('one\ntwo\nran\n');
    const resumed = await run(ws, [{ text: 'done' }], log, true);
    expect(resumed.code).toBe('COMPLETED');
    expect(results(resumed.events)).toMatchObject([{ resumed: 'restored', is_error: false }]);
    expect(readFileSync(join(ws.root, 'a.txt'), 'utf8')).toBe('one\ntwo\nran\n');
    expect(readFileSync(join(ws.root, 'made.txt'), 'utf8')).toBe('new\n');
  });

  it('an MCP tool declared read-only runs again; one that is not is blocked_uncertain, never run twice', async () => {
    const ws = workspace();
    const look = await killedMidCall(ws, { name: 'mcp__srv__look', arguments: {} });
    expect(look.log.at(-1)).toMatchObject({ intent: { effect: 'other', read_only: true } });
    const again = await run(ws, [{ text: 'done' }], look.log, true);
    expect(again.code).toBe('COMPLETED');
    expect(results(again.events)).toMatchObject([{ resumed: 'rerun', output: 'mcp__srv__look done' }]);
    expect(ws.runs.mcp__srv__look).toBe(2);

    const send = await killedMidCall(ws, { name: 'mcp__srv__send', arguments: {} });
    expect(send.log.at(-1)).toMatchObject({ intent: { effect: 'other', read_only: false } });
    const blocked = await run(ws, [{ text: 'never asked' }], send.log, true);
    expect(blocked.code).toBe('BLOCKED_UNCERTAIN');
    expect(blocked.events.find((e) => e.type === 'session_end')).toMatchObject({
      code: 'BLOCKED_UNCERTAIN',
      reason: expect.stringContaining('not declared read-only'),
    });
    expect(ws.runs.mcp__srv__send).toBe(1);
  });

  it('a request logged without its answer is sent again as the same round, marked re-issued', async () => {
    const ws = workspace();
    const full: SessionEvent[] = [];
    await run(ws, [{ text: 'done' }], full, false);
    const log = full.slice(0, full.findIndex((e) => e.type === 'model_request') + 1);
    const resumed = await run(ws, [{ text: 'done' }], log, true);
    expect(resumed.code).toBe('COMPLETED');
    expect(resumed.events.filter((e) => e.type === 'model_request')).toMatchObject([
      { round: 1, reissued: true },
    ]);
    expect(resumed.events.find((e) => e.type === 'assistant_message')).toMatchObject({ round: 1 });
    expect(replay([...log, ...resumed.events].map((event, i) => ({ seq: i + 1, event }))).rounds).toBe(1);
  });
});
