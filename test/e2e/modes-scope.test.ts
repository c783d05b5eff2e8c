import { existsSync, readFileSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { gitRepo, tempDir } from '../helpers/tmp.js';
import {
  catalogueOf,
  chatBodies,
  keel,
  keelHome,
  lastSessionEvents,
  model,
  modelFlags,
  offeredTools,
  requestMessages,
} from './harness.js';

describe('modes and scope, through the real binary', () => {
  it('ask cannot write, even when the model calls write_file', async () => {
    const repo = gitRepo();
    const home = keelHome();
    const server = await model([
      { tool_calls: [{ name: 'write_file', arguments: { path: 'pwned.txt', content: 'x' } }] },
      { text: 'I could not write.', expect: { last_tool_result_contains: 'not available in ask mode' } },
    ]);
    const run = await keel(['ask', ...modelFlags(server), 'write pwned.txt'], { cwd: repo, home });
    expect(run.stderr).toContain('write_file denied');
    expect(run.code).toBe(0);
    expect(existsSync(join(repo, 'pwned.txt'))).toBe(false);
    // ask offers only read tools (and subagents, which can only be read-only too, and memory), so a well-behaved
    // model never even sees write_file
    expect(offeredTools(chatBodies(server)[0])).toEqual(['read_file', 'list_dir', 'glob', 'grep', 'tools']);
    // the rest is activated on demand, and only what ask allows is there to activate
    expect(catalogueOf(chatBodies(server)[0])).toEqual(['agent', 'code_graph', 'memory']);
    const denials = lastSessionEvents(home).filter(
      (e) => e.type === 'gate_decision' || e.type === 'tool_call_invalid',
    );
    expect(denials.length).toBeGreaterThan(0);
  });

  it('edit writes inside the scope and is denied outside it, by .. and through a symlink', async () => {
    const repo = gitRepo({ 'src/app.js': 'export const answer = 41;\n' });
    const outside = tempDir();
    symlinkSync(outside, join(repo, 'escape'));
    const home = keelHome();
    const server = await model([
      {
        tool_calls: [
          { name: 'edit_file', arguments: { path: 'src/app.js', old_string: '41', new_string: '42' } },
          { name: 'write_file', arguments: { path: '../outside.txt', content: 'x' } },
          { name: 'write_file', arguments: { path: 'escape/through-link.txt', content: 'x' } },
          { name: 'write_file', arguments: { path: join(outside, 'absolute.txt'), content: 'x' } },
        ],
      },
      { text: 'Done.' },
    ]);
    const run = await keel(['edit', ...modelFlags(server), '--json', 'fix the answer'], { cwd: repo, home });
    expect(run.code).toBe(0);
    const doc = JSON.parse(run.stdout);
    expect(doc.files_changed).toEqual(['src/app.js']);
    expect(readFileSync(join(repo, 'src/app.js'), 'utf8')).toBe('export const answer = 42;\n');
    expect(existsSync(join(repo, '..', 'outside.txt'))).toBe(false);
    expect(existsSync(join(outside, 'through-link.txt'))).toBe(false);
    expect(existsSync(join(outside, 'absolute.txt'))).toBe(false);
    const denied = lastSessionEvents(home).filter(
      (e) => e.type === 'gate_decision' && e.data.decision === 'deny',
    );
    expect(denied.map((e) => e.data.deny)).toEqual(['scope', 'scope', 'scope']);
    // the model is told why, so it can recover
    const toolResults = requestMessages(chatBodies(server)[1]).filter((m) => m.role === 'tool');
    expect(
      toolResults.map((m) => String(m.content)).filter((c) => c.includes('outside the writable scope')),
    ).toHaveLength(3);
  });

  it('ends the run with SCOPE_VIOLATION when stop_on_violation is set', async () => {
    const repo = gitRepo();
    const home = keelHome('stop_on_violation = true\n');
    const server = await model([
      { tool_calls: [{ name: 'write_file', arguments: { path: '.git/hooks/pre-commit', content: 'evil' } }] },
      { text: 'unreachable' },
    ]);
    const run = await keel(['edit', ...modelFlags(server), '--json', 'go'], { cwd: repo, home });
    expect(run.code).toBe(1);
    expect(JSON.parse(run.stdout)).toMatchObject({ code: 'SCOPE_VIOLATION', exit_code: 1 });
    expect(existsSync(join(repo, '.git/hooks/pre-commit'))).toBe(false);
    expect(chatBodies(server)).toHaveLength(1);
  });

  it('denies shell in edit mode without a sandbox, hook or allow_shell, and says how to enable it', async () => {
    const repo = gitRepo();
    const home = keelHome('sandbox = "none"\n');
    const server = await model([
      { tool_calls: [{ name: 'shell', arguments: { command: 'touch made-by-shell' } }] },
      { text: 'ok', expect: { last_tool_result_contains: 'allow_shell' } },
    ]);
    const run = await keel(['edit', ...modelFlags(server), 'run it'], { cwd: repo, home });
    expect(run.code).toBe(0);
    expect(existsSync(join(repo, 'made-by-shell'))).toBe(false);
  });

  it('injects AGENTS.md into the system prompt', async () => {
    const repo = gitRepo({ 'AGENTS.md': 'Always answer in French.\n' });
    const home = keelHome();
    const server = await model([{ text: 'Bonjour.' }]);
    const run = await keel(['ask', ...modelFlags(server), 'hi'], { cwd: repo, home });
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('Bonjour.');
    const system = requestMessages(chatBodies(server)[0])[0];
    expect(system?.role).toBe('system');
    expect(system?.content).toContain('Always answer in French.');
  });
});
