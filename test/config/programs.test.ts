import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { changedPrograms, configPrograms, sessionPrograms } from '../../src/config/programs.js';
import { tempDir } from '../helpers/tmp.js';

function workspace(): string {
  const root = tempDir('keel-programs-');
  mkdirSync(join(root, 'tools'));
  mkdirSync(join(root, 'bin'));
  writeFileSync(join(root, 'tools/server.js'), 'server');
  writeFileSync(join(root, 'tools/pre.js'), 'pre');
  writeFileSync(join(root, 'bin/lint'), 'lint');
  writeFileSync(join(root, 'data.json'), '{}');
  symlinkSync('/etc/hostname', join(root, 'tools/out.js'));
  return root;
}

describe('the programs a config runs', () => {
  it('takes the command in the workspace (by path or PATH) and file arguments, not flags, folders or outside files', () => {
    const root = workspace();
    const programs = configPrograms(
      {
        hooks: [
          { event: 'PreToolUse', command: ['lint'] },
          { event: 'Stop', command: ['node', '--require', './tools/pre.js', '--flag=tools/x.js', 'tools'] },
        ],
        mcp_servers: [
          {
            name: 'docs',
            command: ['node', 'tools/server.js', 'data.json', 'tools/later.js', 'port', '/etc/hosts'],
          },
          { name: 'web', url: 'http://127.0.0.1:1/mcp' },
        ],
      },
      root,
      `/usr/bin:bin`,
    );
    expect(programs.map((p) => [p.name, p.by, p.sha256 === null ? 'absent' : 'hashed'])).toEqual([
      ['bin/lint', 'a PreToolUse hook', 'hashed'],
      ['tools/pre.js', 'a Stop hook', 'hashed'],
      ['tools/server.js', 'mcp server "docs"', 'hashed'],
      ['data.json', 'mcp server "docs"', 'hashed'],
      // looks like a path and is not there yet: trusted to stay absent
      ['tools/later.js', 'mcp server "docs"', 'absent'],
    ]);
    // a link to a file outside still names a file here: its content is what runs
    const linked = configPrograms(
      { hooks: [{ event: 'Stop', command: ['node', 'tools/out.js'] }] },
      root,
      '',
    );
    expect(linked.map((p) => p.name)).toEqual(['tools/out.js']);
  });

  it('a changed, created or removed program is no longer what was hashed; a session in a copy is held to the first hashes', () => {
    const root = workspace();
    const values = { hooks: [{ event: 'Stop', command: ['node', 'tools/server.js', 'tools/later.js'] }] };
    const programs = configPrograms(values, root, '');
    expect(changedPrograms(programs)).toEqual([]);
    writeFileSync(join(root, 'tools/later.js'), 'new');
    expect(changedPrograms(programs).map((p) => p.name)).toEqual(['tools/later.js']);
    const copy = workspace();
    writeFileSync(join(copy, 'tools/server.js'), 'rewritten in the copy');
    const held = sessionPrograms(values, copy, '', programs);
    expect(held.map((p) => p.path)).toEqual([join(copy, 'tools/server.js'), join(copy, 'tools/later.js')]);
    expect(changedPrograms(held).map((p) => p.name)).toEqual(['tools/server.js']);
  });
});
