/**
 * What a sandboxed MCP server's program gets bound: its bin folder and the node_modules its package sits
 * in, real paths; never a home, a folder above one, or anything that is or holds a path the sandbox hides.
 */
import { chmodSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { programMounts } from '../../src/policy/program-mounts.js';
import { hostView } from '../../src/policy/sandbox-mounts.js';
import { tempDir, writeFiles } from '../helpers/tmp.js';

describe('programMounts', () => {
  it('binds an installed package, and refuses homes and hidden folders a command leads into', () => {
    const home = tempDir('keel-user-');
    const work = tempDir('keel-work-');
    writeFiles(home, {
      '.local/lib/node_modules/@scope/srv/package.json': '{"name":"@scope/srv"}',
      '.local/lib/node_modules/@scope/srv/bin/cli.js': '#!/usr/bin/env node\n',
      '.ssh/steal.js': 'x',
      '.config/tool/run.js': 'x',
      '.local/loose.js': 'x',
      'server.js': 'x',
    });
    mkdirSync(join(home, '.local', 'bin'));
    symlinkSync('../lib/node_modules/@scope/srv/bin/cli.js', join(home, '.local', 'bin', 'srv'));
    // a link in the bin folder to a key: the link's folder may show, the key's never
    symlinkSync('../../.ssh/steal.js', join(home, '.local', 'bin', 'key'));
    chmodSync(join(home, '.local', 'bin', 'key'), 0o755);
    const env = { HOME: home, PATH: `${join(home, '.local', 'bin')}:/usr/bin:/bin` };
    const view = hostView(env, [join(home, 'keel-state')], [work]);
    // as the sandbox calls it: what it shows already (system folders, ~/.local/bin on PATH, the workspace)
    const shown = [...view.mounts.flatMap((m) => (m.kind === 'ro-bind' ? [m.path] : [])), work];
    const bin = join(home, '.local', 'bin');
    expect(shown).toContain(bin);
    const opts = { cwd: work, pathEnv: env.PATH, homes: [home], hidden: view.hidden, shown };
    expect(programMounts(['srv'], opts)).toEqual([join(home, '.local', 'lib', 'node_modules')]);
    expect(programMounts(['key'], opts)).toEqual([]);
    // named by its path, with ~/.local/bin not on PATH: its folder is bound too
    const off = hostView({ HOME: home, PATH: '/usr/bin:/bin' }, [join(home, 'keel-state')], [work]);
    const offShown = [...off.mounts.flatMap((m) => (m.kind === 'ro-bind' ? [m.path] : [])), work];
    expect(programMounts([join(bin, 'srv')], { ...opts, hidden: off.hidden, shown: offShown })).toEqual([
      bin,
      join(home, '.local', 'lib', 'node_modules'),
    ]);
    expect(programMounts(['/usr/bin/env', join(home, '.ssh', 'steal.js')], opts)).toEqual([]);
    const node = process.execPath;
    expect(programMounts([node, join(home, '.ssh', 'steal.js')], opts)).toEqual([]);
    expect(programMounts([node, `${home}/.local/lib/../../.config/tool/run.js`], opts)).toEqual([]);
    // ~/.local holds ~/.local/share: never bound whole; a script in the home itself would bind the home
    expect(programMounts([node, join(home, '.local', 'loose.js')], opts)).toEqual([]);
    expect(programMounts([node, join(home, 'server.js')], opts)).toEqual([]);
    // a script in the workspace is visible already
    writeFileSync(join(work, 's.js'), 'x');
    expect(programMounts([node, 's.js'], opts)).toEqual([]);
  });
});
