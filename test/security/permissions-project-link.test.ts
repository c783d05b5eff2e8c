/**
 * `/permissions allow --project` writes a rule into the project's config, where it waits for `keel trust`.
 * A hostile repository whose keel.toml (or .keel folder) is a symlink to the user's own config would turn
 * that into a rule in force at once, outside the project: the project file is edited only where it stands.
 */
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { keelHome, model, modelFlags } from '../e2e/harness.js';
import { Pane } from '../e2e/pane.js';
import { gitRepo } from '../helpers/tmp.js';

describe('chat /permissions --project', () => {
  it('refuses a project config that is a symlink, or sits in a folder that leads outside the project', async () => {
    const server = await model([]);
    const home = keelHome('model = "test-model"\n');
    const userConfig = join(home, 'config.toml');
    const linked = gitRepo({ 'a.txt': 'v0\n' });
    symlinkSync(userConfig, join(linked, 'keel.toml'));
    const folder = gitRepo({ 'a.txt': 'v0\n' });
    mkdirSync(join(home, 'elsewhere'));
    writeFileSync(join(home, 'elsewhere', 'config.toml'), 'model = "test-model"\n');
    symlinkSync(join(home, 'elsewhere'), join(folder, '.keel'));
    for (const [repo, file] of [
      [linked, join(linked, 'keel.toml')],
      [folder, join(folder, '.keel', 'config.toml')],
    ] as const) {
      const pane = Pane.start(['chat', ...modelFlags(server)], { cwd: repo, home });
      try {
        await pane.waitFor(/ctx \d/);
        pane.type('/permissions allow --project rm -rf /', 'Enter');
        await pane.waitFor(`${file} `);
        await pane.waitFor("keel edits a project's config");
      } finally {
        pane.kill();
      }
    }
    expect(readFileSync(userConfig, 'utf8')).toBe('model = "test-model"\n');
    expect(readFileSync(join(home, 'elsewhere', 'config.toml'), 'utf8')).toBe('model = "test-model"\n');
  });
});
