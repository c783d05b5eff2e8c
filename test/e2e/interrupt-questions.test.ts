/** Ctrl+C at any question is an interruption: "interrupted", exit 130, a session recorded CANCELLED; never an internal error. */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { gitRepo } from '../helpers/tmp.js';
import { keel, keelHome, lastSessionEvents, model, modelFlags } from './harness.js';
import { Pane } from './pane.js';

function noInternalError(screen: string): void {
  expect(screen).not.toMatch(/internal error|ENVIRONMENT_ERROR|\n\s+at .+[:(]/);
}

describe('Ctrl+C at a question', () => {
  it('at an approval during keel edit: interrupted, exit 130, the session CANCELLED, the file untouched', async () => {
    const repo = gitRepo({ 'a.txt': 'one\n' });
    const home = keelHome('approvals = "writes"\n');
    const server = await model([
      { tool_calls: [{ name: 'write_file', arguments: { path: 'a.txt', content: 'two\n' } }] },
      { text: 'never asked for' },
    ]);
    const pane = Pane.start(['edit', ...modelFlags(server), 'change it'], { cwd: repo, home });
    await pane.waitFor('[y]es / [n]o');
    pane.keys('C-c');
    const screen = await pane.waitFor(/keel exited \d+/);
    expect(screen).toContain('[keel exited 130]');
    expect(screen).toContain('interrupted');
    noInternalError(pane.history());
    expect(readFileSync(join(repo, 'a.txt'), 'utf8')).toBe('one\n');
    const end = lastSessionEvents(home).find((e) => e.type === 'session_end');
    expect(end?.data).toMatchObject({ code: 'CANCELLED' });
  });

  it("at keel undo's [y/N] (the same question as keel fix --clean's): interrupted, exit 130, nothing undone", async () => {
    const repo = gitRepo({ 'a.txt': 'one\n' });
    const home = keelHome();
    const server = await model([
      { tool_calls: [{ name: 'write_file', arguments: { path: 'new.txt', content: 'made\n' } }] },
      { text: 'done' },
    ]);
    const edit = await keel(['edit', ...modelFlags(server), 'make a file'], { cwd: repo, home });
    expect(edit.code).toBe(0);

    const undo = Pane.start(['undo'], { cwd: repo, home });
    await undo.waitFor('Proceed? [y/N]');
    undo.keys('C-c');
    const undone = await undo.waitFor(/keel exited \d+/);
    expect(undone).toContain('interrupted');
    expect(undone).toContain('[keel exited 130]');
    noInternalError(undo.history());
    expect(existsSync(join(repo, 'new.txt'))).toBe(true);
  });
});
