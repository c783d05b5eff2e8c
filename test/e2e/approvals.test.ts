import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { gitRepo } from '../helpers/tmp.js';
import { chatBodies, keelHome, lastSessionEvents, model, modelFlags, requestMessages } from './harness.js';
import { Pane } from './pane.js';

describe('approvals on a terminal: the person sees the diff or the command and answers', () => {
  it('y lets a write land; a typed reason is a no sent back to the model; always lets the rest through', async () => {
    const repo = gitRepo({ 'src/app.js': 'export const answer = 41;\n' });
    const home = keelHome('approvals = "all"\n');
    const server = await model([
      {
        tool_calls: [
          { name: 'edit_file', arguments: { path: 'src/app.js', old_string: '41', new_string: '42' } },
        ],
      },
      { tool_calls: [{ name: 'shell', arguments: { command: 'rm -rf build' } }] },
      {
        tool_calls: [
          { name: 'write_file', arguments: { path: 'b.txt', content: 'b\n' } },
          { name: 'write_file', arguments: { path: 'c.txt', content: 'c\n' } },
        ],
        expect: { last_tool_result_contains: 'the user declined: keep the build folder' },
      },
      { text: 'All done.' },
    ]);
    const pane = Pane.start(['edit', ...modelFlags(server), 'make it 42'], { cwd: repo, home });
    let screen = await pane.waitFor('[y]es / [n]o');
    expect(screen).toContain('keel asks: edit_file src/app.js');
    expect(screen).toContain('-export const answer = 41;');
    expect(screen).toContain('+export const answer = 42;');
    // nothing lands before the answer
    expect(readFileSync(join(repo, 'src/app.js'), 'utf8')).toBe('export const answer = 41;\n');
    pane.keys('y', 'Enter');
    screen = await pane.waitFor('keel asks: shell: rm -rf build');
    expect(screen).toContain('(in the sandbox)');
    expect(readFileSync(join(repo, 'src/app.js'), 'utf8')).toBe('export const answer = 42;\n');
    pane.type('keep the build folder', 'Enter');
    screen = await pane.waitFor('keel asks: write_file b.txt');
    pane.type('always', 'Enter');
    await pane.waitFor(/keel exited \d+/);
    screen = pane.history();
    expect(screen).toContain('[keel exited 0]');
    // "always" answered c.txt without a second question
    expect(screen.match(/keel asks:/g)).toHaveLength(3);
    expect(readFileSync(join(repo, 'c.txt'), 'utf8')).toBe('c\n');
    const shellAnswer = requestMessages(chatBodies(server)[2]).at(-1);
    expect(shellAnswer?.content).toContain('denied: the user declined: keep the build folder');
    const decisions = lastSessionEvents(home)
      .filter((e) => e.type === 'gate_decision')
      .map((e) => `${e.data.tool}:${e.data.decision}${e.data.deny ? `:${e.data.deny}` : ''}`);
    expect(decisions).toEqual([
      'edit_file:ask',
      'edit_file:allow',
      'shell:ask',
      'shell:deny:user',
      'write_file:ask',
      'write_file:allow',
      'write_file:ask',
      'write_file:allow',
    ]);
  });

  it('n (or just Enter) is a no, and the file is untouched', async () => {
    const repo = gitRepo({ 'a.txt': 'one\n' });
    const home = keelHome('approvals = "writes"\n');
    const server = await model([
      { tool_calls: [{ name: 'write_file', arguments: { path: 'a.txt', content: 'two\n' } }] },
      { text: 'Left it.', expect: { last_tool_result_contains: 'the user declined' } },
    ]);
    const pane = Pane.start(['edit', ...modelFlags(server), 'write two'], { cwd: repo, home });
    await pane.waitFor('[y]es / [n]o');
    pane.keys('Enter');
    const screen = await pane.waitFor(/keel exited \d+/);
    expect(screen).toContain('[keel exited 0]');
    expect(readFileSync(join(repo, 'a.txt'), 'utf8')).toBe('one\n');
  });
});
