import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { git, gitRepo } from '../helpers/tmp.js';
import { keel, keelHome, model, modelFlags } from './harness.js';

describe('keel undo after keel edit', () => {
  it("shows the plan, then restores the user's uncommitted work exactly and removes what the session made", async () => {
    const repo = gitRepo({ 'app.js': 'const a = 1;\n', 'lib.js': 'export {};\n', '.gitignore': 'build/\n' });
    writeFileSync(join(repo, 'app.js'), 'const a = 2; // my edit, not committed\n');
    writeFileSync(join(repo, 'notes.txt'), 'my untracked notes\n');
    const statusBefore = git(repo, 'status', '--porcelain');
    const home = keelHome();
    const server = await model([
      {
        tool_calls: [
          {
            name: 'edit_file',
            arguments: { path: 'app.js', old_string: 'const a = 2;', new_string: 'const a = 3;' },
          },
          { name: 'write_file', arguments: { path: 'src/new.js', content: 'export const x = 1;\n' } },
          { name: 'write_file', arguments: { path: 'notes.txt', content: 'overwritten\n' } },
        ],
      },
      { text: 'done' },
    ]);
    const edit = await keel(['edit', ...modelFlags(server), 'change things'], { cwd: repo, home });
    expect(edit.code).toBe(0);
    expect(readFileSync(join(repo, 'app.js'), 'utf8')).toContain('const a = 3;');

    // without a terminal and without --yes: show the plan, change nothing, exit 1
    const dry = await keel(['undo'], { cwd: repo, home });
    expect(dry.code).toBe(1);
    expect(dry.stdout + dry.stderr).toContain('--yes');
    expect(existsSync(join(repo, 'src/new.js'))).toBe(true);

    const undo = await keel(['undo', '--yes'], { cwd: repo, home });
    expect(undo.code).toBe(0);
    expect(readFileSync(join(repo, 'app.js'), 'utf8')).toBe('const a = 2; // my edit, not committed\n');
    expect(readFileSync(join(repo, 'notes.txt'), 'utf8')).toBe('my untracked notes\n');
    expect(existsSync(join(repo, 'src/new.js'))).toBe(false);
    expect(git(repo, 'status', '--porcelain')).toBe(statusBefore);
    expect(git(repo, 'tag', '--list', 'keel-pre/*').trim()).not.toBe('');
  });
});
