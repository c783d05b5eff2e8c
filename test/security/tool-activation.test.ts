/**
 * Tools offered on demand (the `tools` catalogue, folded families) must not widen what a session may do:
 * activation offers only what the mode allows, a call by name to a tool the mode forbids is still denied,
 * a folded call is gated as its action's own tool (hooks that name spawn_agent or remember still match),
 * and a folded spawn cannot ask for a wider child. Through the real binary and the scripted model.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  chatBodies,
  keel,
  keelHome,
  lastSessionEvents,
  model,
  modelFlags,
  offeredTools,
} from '../e2e/harness.js';
import { gitRepo } from '../helpers/tmp.js';

const call = (name: string, args: Record<string, unknown>) => ({ name, arguments: args });

describe('tool activation never widens a session', () => {
  it('ask mode: activating or calling write and exec tools is refused; folded calls meet the hooks and the narrowing of their own tools', async () => {
    const repo = gitRepo({ 'a.txt': 'a\n' });
    const home = keelHome(
      `[[hooks]]
event = "PreToolUse"
matcher = "remember|spawn_agent"
command = ["sh", "-c", "echo 'not in this project' >&2; exit 2"]
`,
    );
    const server = await model([
      { tool_calls: [call('tools', { activate: ['write_file', 'shell', 'agent'] })] },
      {
        tool_calls: [call('write_file', { path: 'pwned.txt', content: 'x' })],
        expect: { last_tool_result_contains: 'no tool "write_file", "shell" in ask mode' },
      },
      {
        tool_calls: [call('shell', { command: 'touch pwned2.txt' })],
        expect: { last_tool_result_contains: 'write_file is not available in ask mode' },
      },
      {
        tool_calls: [call('memory', { action: 'remember', text: 'a note' })],
        expect: { last_tool_result_contains: 'shell is not available in ask mode' },
      },
      {
        tool_calls: [call('remember', { text: 'a note' })],
        expect: { last_tool_result_contains: 'not in this project' },
      },
      {
        tool_calls: [call('agent', { action: 'spawn', task: 'write pwned3.txt', mode: 'edit' })],
        expect: { last_tool_result_contains: 'not in this project' },
      },
      {
        tool_calls: [call('agent', { action: 'spawn', task: 'write pwned3.txt' })],
        expect: { last_tool_result_contains: 'denied' },
      },
      { text: 'done', expect: { last_tool_result_contains: 'not in this project' } },
    ]);
    const run = await keel(['ask', 'try everything', ...modelFlags(server), '--json'], {
      cwd: repo,
      home,
      timeoutMs: 60_000,
    });
    expect(run.stderr).toBe('');
    expect(JSON.parse(run.stdout).code).toBe('COMPLETED');
    for (const f of ['pwned.txt', 'pwned2.txt', 'pwned3.txt']) expect(existsSync(join(repo, f))).toBe(false);
    // nothing that writes or runs was ever offered; the agent family was (the hook still guards its spawn)
    for (const body of chatBodies(server)) {
      expect(offeredTools(body)).not.toContain('write_file');
      expect(offeredTools(body)).not.toContain('shell');
    }
    expect(offeredTools(chatBodies(server).at(-1))).toContain('agent');
    const gate = lastSessionEvents(home)
      .filter((e) => e.type === 'gate_decision')
      .map((e) => e.data as { tool: string; decision: string; deny?: string });
    expect(gate.filter((g) => g.decision === 'allow').map((g) => g.tool)).toEqual(['tools']);
    expect(gate.filter((g) => g.decision === 'deny').map((g) => [g.tool, g.deny])).toEqual([
      ['write_file', 'mode'],
      ['shell', 'mode'],
      ['remember', 'hook'],
      ['remember', 'hook'],
      ['spawn_agent', 'policy'],
      ['spawn_agent', 'hook'],
    ]);
    expect(lastSessionEvents(home).some((e) => e.type === 'tool_start' && e.data.tool !== 'tools')).toBe(
      false,
    );
  }, 90_000);
});
