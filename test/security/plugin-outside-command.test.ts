/**
 * A plugin's approval hashes its folder, so what its hooks and servers run must lie in that folder (or be a
 * program of the system): a hook whose command runs a script elsewhere (`/bin/sh /tmp/x/hook.sh`, a relative
 * `tools/hook.sh` in the workspace, `${KEEL_PLUGIN_DIR}/../other/hook.sh`) points at bytes no approval covers,
 * which anyone able to write there could change after the yes. Such a manifest is refused when installed or
 * approved, and a plugin already approved with one (an older keel) is skipped when keel loads it.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { manifestHash, PLUGIN_DIR_VAR, pluginFiles } from '../../src/config/plugins.js';
import { keel, keelHome, model, modelFlags } from '../e2e/harness.js';
import { gitRepo, tempDir, writeFiles } from '../helpers/tmp.js';

function ran(marker: string): string {
  try {
    return readFileSync(marker, 'utf8');
  } catch {
    return '';
  }
}

describe("a plugin's hook or server command that points outside its folder", () => {
  it('is refused at install and approval, and skipped at load when an older keel approved it', async () => {
    const home = keelHome();
    const repo = gitRepo();
    const outside = tempDir('keel-outside-');
    const marker = join(outside, 'ran');
    const script = join(outside, 'hook.sh');
    writeFileSync(script, `#!/bin/sh\necho outside >> '${marker}'\nexit 0\n`);
    const manifest = (command: string[], server?: string[]) =>
      JSON.stringify({
        name: 'pointer',
        hooks: [{ event: 'UserPromptSubmit', command }],
        ...(server ? { mcp_servers: [{ name: 'srv', command: server }] } : {}),
      });

    // each way out of the folder is refused by install, with the hook and the word named
    const cases: Array<[string[], string[] | undefined, string]> = [
      [['/bin/sh', script], undefined, script],
      [[script], undefined, script],
      [['sh', 'tools/hook.sh'], undefined, 'tools/hook.sh'],
      [['/bin/sh', `${PLUGIN_DIR_VAR}/../other/hook.sh`], undefined, `${PLUGIN_DIR_VAR}/../other/hook.sh`],
      [['/bin/sh', `--rcfile=${script}`], undefined, `--rcfile=${script}`],
      [['/bin/true'], ['/usr/bin/node', `${outside}/server.js`], `${outside}/server.js`],
    ];
    for (const [command, server, word] of cases) {
      const source = tempDir('keel-plugin-');
      writeFiles(source, { 'keel-plugin.json': manifest(command, server) });
      const install = await keel(['plugin', 'install', source, '--yes'], { cwd: repo, home });
      expect(install.code, `${command.join(' ')}: ${install.stderr}`).toBe(2);
      expect(install.stderr).toContain(JSON.stringify(word));
      expect(install.stderr).toContain('outside the plugin');
      expect(existsSync(join(home, 'plugins', 'pointer'))).toBe(false);
    }

    // a plugin an older keel approved with such a hook: the record matches, yet the hook does not run
    const dir = join(home, 'plugins', 'pointer');
    mkdirSync(dir, { recursive: true });
    const bytes = manifest(['/bin/sh', script]);
    writeFileSync(join(dir, 'keel-plugin.json'), bytes);
    const files = pluginFiles(dir);
    if ('error' in files) throw new Error(files.error);
    writeFileSync(
      join(home, 'plugins', 'approved.json'),
      JSON.stringify({
        pointer: { sha256: manifestHash(Buffer.from(bytes)), source: dir, widens: [], files: files.files },
      }),
    );
    const server = await model([{ text: 'hello' }]);
    const session = await keel(['ask', ...modelFlags(server), '-m', 'hi'], { cwd: repo, home });
    expect(session.code, session.stderr).toBe(0);
    expect(session.stderr).toContain('plugin pointer skipped');
    expect(session.stderr).toContain(JSON.stringify(script));
    expect(ran(marker)).toBe('');
    const approve = await keel(['plugin', 'approve', 'pointer', '--yes'], { cwd: repo, home });
    expect(approve.code).toBe(2);
    expect(approve.stderr).toContain('outside the plugin');

    // what stays allowed: the plugin's own files, a program by name, a program of the system
    const fine = tempDir('keel-plugin-');
    writeFiles(fine, {
      'hook.sh': '#!/bin/sh\nexit 0\n',
      'keel-plugin.json': JSON.stringify({
        name: 'fine',
        hooks: [
          { event: 'UserPromptSubmit', command: ['/bin/sh', `${PLUGIN_DIR_VAR}/hook.sh`] },
          { event: 'Stop', command: ['true'] },
        ],
      }),
    });
    const ok = await keel(['plugin', 'install', fine, '--yes'], { cwd: repo, home });
    expect(ok.code, ok.stderr).toBe(0);
  }, 90_000);
});
