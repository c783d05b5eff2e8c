/**
 * chat's /export writes the transcript into the workspace, where the model's shell or any other process may
 * have put a symlink at the very name: the export replaces that entry, and never writes through it.
 */
import { lstatSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { keelHome, lastSessionEvents, model, modelFlags } from '../e2e/harness.js';
import { Pane } from '../e2e/pane.js';
import { gitRepo, tempDir } from '../helpers/tmp.js';

describe('chat /export', () => {
  it('replaces a symlink planted at the export name instead of writing through it', async () => {
    const server = await model([{ text: 'hello there' }]);
    const repo = gitRepo({ 'a.txt': 'v0\n' });
    const home = keelHome();
    const outside = join(tempDir('keel-outside-'), 'bashrc');
    writeFileSync(outside, 'the user file\n');
    const pane = Pane.start(['chat', ...modelFlags(server)], { cwd: repo, home });
    try {
      await pane.waitFor(/ctx \d/);
      pane.type('say hello', 'Enter');
      await pane.waitFor('hello there');
      const id = lastSessionEvents(home)[0]?.session_id as string;
      const file = join(repo, `keel-session-${id}.md`);
      symlinkSync(outside, file);
      pane.type('/export', 'Enter');
      await pane.waitFor(`exported the session to ${file}`);
      expect(readFileSync(outside, 'utf8')).toBe('the user file\n');
      expect(lstatSync(file).isSymbolicLink()).toBe(false);
      expect(readFileSync(file, 'utf8')).toContain('hello there');
    } finally {
      pane.kill();
    }
  });
});
