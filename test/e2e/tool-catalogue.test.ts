/**
 * The first request offers a small core set and the `tools` catalogue; subagents, the code graph and
 * memory are one folded tool each, activated through the catalogue or by being called, and offered from
 * then on (a resumed session too). Through the real binary and the scripted model.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { gitRepo } from '../helpers/tmp.js';
import {
  chatBodies,
  keel,
  keelHome,
  lastSessionEvents,
  model,
  modelFlags,
  offeredTools,
  requestMessages,
} from './harness.js';

const call = (name: string, args: Record<string, unknown>) => ({ name, arguments: args });
const json = (stdout: string) => JSON.parse(stdout) as { code: string; session_id: string; summary: string };
const READ = ['read_file', 'list_dir', 'glob', 'grep'];
const WRITE = ['edit_file', 'write_file', 'shell', 'run_tests'];

describe('tool catalogue', () => {
  it('ask offers the core set; the model lists, activates and calls code_graph, calls memory unoffered, and a resume offers both', async () => {
    const repo = gitRepo({
      'src/util.ts': 'export function helper(a: number): number {\n  return a + 1;\n}\n',
      'src/app.ts': "import { helper } from './util.js';\nexport const two = helper(1);\n",
    });
    const home = keelHome();
    const server = await model([
      { tool_calls: [call('tools', {})] },
      {
        tool_calls: [call('tools', { activate: ['code_graph'] })],
        expect: { last_tool_result_contains: 'code_graph: ' },
      },
      {
        tool_calls: [call('code_graph', { action: 'symbol', name: 'helper' })],
        expect: { last_tool_result_contains: 'activated code_graph' },
      },
      {
        tool_calls: [call('code_graph', { action: 'importers', path: 'src/util.ts' })],
        expect: { last_tool_result_contains: 'src/util.ts:1-3 function helper' },
      },
      {
        // never activated: a known tool the mode allows is activated as it is called
        tool_calls: [call('memory', { action: 'recall', query: 'helper' })],
        expect: { last_tool_result_contains: 'src/app.ts' },
      },
      { text: 'helper is in src/util.ts', expect: { last_tool_result_contains: 'nothing remembered' } },
      { text: 'same' },
    ]);
    const run = await keel(['ask', 'hi', ...modelFlags(server), '--json'], {
      cwd: repo,
      home,
      timeoutMs: 60_000,
    });
    expect(run.stderr).toBe('');
    const doc = json(run.stdout);
    expect(doc.code).toBe('COMPLETED');
    const bodies = chatBodies(server);
    expect(offeredTools(bodies[0])).toEqual([...READ, 'tools']);
    // the catalogue lists what the mode allows and is not offered yet: no exec tool in ask mode
    const listed = String(requestMessages(bodies[1]).at(-1)?.content);
    expect(listed).toMatch(/^agent: /m);
    expect(listed).toMatch(/^memory: /m);
    expect(listed).not.toMatch(/shell|write_file|edit_file/);
    expect(offeredTools(bodies[1])).toEqual([...READ, 'tools']);
    expect(offeredTools(bodies[2])).toEqual([...READ, 'tools', 'code_graph']);
    expect(offeredTools(bodies[4])).toEqual([...READ, 'tools', 'code_graph']);
    expect(offeredTools(bodies[5])).toEqual([...READ, 'tools', 'code_graph', 'memory']);
    // a trivial prompt gets no repo map in its system prompt
    expect(String(requestMessages(bodies[0])[0]?.content)).not.toContain('Repository map');

    // the log: the gate and the tool rows name each action's own tool; activations are recorded
    const events = lastSessionEvents(home);
    expect(events.filter((e) => e.type === 'tools_activated').map((e) => e.data)).toEqual([
      { tools: ['code_graph'] },
      { tools: ['memory'], call_id: expect.any(String) },
    ]);
    expect(
      events.filter((e) => e.type === 'tool_start').map((e) => (e.data as { tool: string }).tool),
    ).toEqual(['tools', 'tools', 'find_symbol', 'importers', 'recall']);
    expect(
      events
        .filter((e) => e.type === 'gate_decision')
        .map((e) => [(e.data as { tool: string }).tool, (e.data as { decision: string }).decision]),
    ).toEqual([
      ['tools', 'allow'],
      ['tools', 'allow'],
      ['find_symbol', 'allow'],
      ['importers', 'allow'],
      ['recall', 'allow'],
    ]);

    // a resumed session offers what it had activated, and shows the old calls
    const again = await keel(['ask', '-c', 'and again?', ...modelFlags(server), '--json'], {
      cwd: repo,
      home,
      timeoutMs: 60_000,
    });
    expect(again.stderr).toBe('');
    expect(json(again.stdout).code).toBe('COMPLETED');
    expect(offeredTools(chatBodies(server)[6])).toEqual([...READ, 'tools', 'code_graph', 'memory']);
    const shown = await keel(['sessions', 'show', doc.session_id], { cwd: repo, home });
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain('find_symbol');
  });

  it('edit offers the core writing set; the folded agent tool spawns and waits; memory remembers', async () => {
    const repo = gitRepo({ 'sub/.keep': '' });
    const home = keelHome();
    const server = await model([
      {
        task: 'PARENT',
        tool_calls: [
          call('agent', { action: 'spawn', task: 'CHILD: write sub/b.txt', name: 'helper', scope: ['sub'] }),
        ],
      },
      { task: 'CHILD', tool_calls: [call('write_file', { path: 'sub/b.txt', content: 'b\n' })] },
      { task: 'CHILD', text: 'wrote sub/b.txt' },
      {
        task: 'PARENT',
        tool_calls: [call('agent', { action: 'wait', names: ['helper'] })],
        expect: { last_tool_result_contains: 'spawned agent "helper"' },
      },
      {
        task: 'PARENT',
        tool_calls: [call('memory', { action: 'remember', text: 'sub/ holds the helper output' })],
        expect: { last_tool_result_contains: 'wrote sub/b.txt' },
      },
      { task: 'PARENT', text: 'done', expect: { last_tool_result_contains: 'remembered as' } },
    ]);
    const run = await keel(['edit', 'PARENT: delegate', ...modelFlags(server), '--json'], {
      cwd: repo,
      home,
      timeoutMs: 60_000,
    });
    expect(run.stderr).toBe('');
    expect(json(run.stdout).code).toBe('COMPLETED');
    expect(readFileSync(join(repo, 'sub/b.txt'), 'utf8')).toBe('b\n');
    const bodies = chatBodies(server);
    expect(offeredTools(bodies[0])).toEqual([...READ, ...WRITE, 'tools']);
    // the child offers the same core set, no more
    const child = bodies.find((b) =>
      String(requestMessages(b).find((m) => m.role === 'user')?.content).startsWith('CHILD'),
    );
    expect(offeredTools(child)).toEqual([...READ, ...WRITE, 'tools']);
    expect(offeredTools(bodies.at(-1))).toEqual([...READ, ...WRITE, 'tools', 'agent', 'memory']);
    const memo = await keel(['memory', 'list', '--json'], { cwd: repo, home });
    expect(memo.stdout).toContain('sub/ holds the helper output');
  });
});
