/**
 * `keel plugin install` takes a tarball or a git URL from anyone: what lands under KEEL_HOME/plugins is
 * regular files and folders inside the plugin's folder, or nothing. A `../` entry, an absolute path, a pax
 * header's path, a symbolic or hard link (the classic "link, then write through it" pair) refuse the whole
 * tarball; a repository holding a symlink is refused the same way, and cloning runs none of its hooks.
 */
import { existsSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { keel, keelHome } from '../e2e/harness.js';
import { git, gitRepo, tempDir } from '../helpers/tmp.js';

interface Entry {
  name: string;
  type?: '0' | '1' | '2' | '5' | 'x';
  body?: string;
  link?: string;
}

/** A ustar archive of these entries, written by hand so a hostile one can be. */
function tar(entries: Entry[]): Buffer {
  const blocks: Buffer[] = [];
  for (const e of entries) {
    const body = Buffer.from(e.body ?? '');
    const h = Buffer.alloc(512);
    h.write(e.name, 0, 100);
    h.write('0000644\0', 100);
    h.write('0000000\0', 108);
    h.write('0000000\0', 116);
    h.write(`${body.length.toString(8).padStart(11, '0')}\0`, 124);
    h.write('00000000000\0', 136);
    h.write('        ', 148);
    h.write(e.type ?? '0', 156);
    if (e.link) h.write(e.link, 157, 100);
    h.write('ustar\0', 257);
    h.write('00', 263);
    let sum = 0;
    for (const b of h) sum += b;
    h.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148);
    blocks.push(h, body, Buffer.alloc((512 - (body.length % 512)) % 512));
  }
  blocks.push(Buffer.alloc(1024));
  return Buffer.concat(blocks);
}

function pax(records: Record<string, string>): string {
  return Object.entries(records)
    .map(([k, v]) => {
      const text = ` ${k}=${v}\n`;
      let n = text.length;
      while (`${n}${text}`.length !== n) n = `${n}${text}`.length;
      return `${n}${text}`;
    })
    .join('');
}

const MANIFEST = { name: 'notes', skills: ['skills/notes'] };
const SKILL = '---\nname: notes\ndescription: Take notes.\n---\nbody\n';
const good = (top = 'notes-1.0/'): Entry[] => [
  { name: top, type: '5' },
  { name: `${top}keel-plugin.json`, body: JSON.stringify(MANIFEST) },
  { name: `${top}skills/notes/SKILL.md`, body: SKILL },
];

describe('plugin install: hostile sources', () => {
  it('refuses tarballs with ../, absolute, pax-path and link entries, and installs a clean one', async () => {
    const home = keelHome();
    const dir = tempDir('keel-tars-');
    const cases: Record<string, Entry[]> = {
      dotdot: [...good(), { name: 'notes-1.0/../../escaped.txt', body: 'x' }],
      absolute: [...good(), { name: `${home}/absolute.txt`, body: 'x' }],
      paxPath: [
        ...good(),
        { name: 'PaxHeader', type: 'x', body: pax({ path: '../../pax-escaped.txt' }) },
        { name: 'innocent.txt', body: 'x' },
      ],
      symlink: [
        ...good(),
        { name: 'notes-1.0/out', type: '2', link: home },
        { name: 'notes-1.0/out/written.txt', body: 'x' },
      ],
      hardlink: [...good(), { name: 'notes-1.0/hard', type: '1', link: '/etc/passwd' }],
    };
    for (const [name, entries] of Object.entries(cases)) {
      const file = join(dir, `${name}.tar.gz`);
      writeFileSync(file, gzipSync(tar(entries)));
      const run = await keel(['plugin', 'install', file, '--yes'], { cwd: dir, home });
      expect(run.code, `${name}: ${run.stdout}`).not.toBe(0);
      expect(run.stderr, name).toMatch(
        /leads out of its folder|absolute path|link: a plugin may hold files and folders only/,
      );
    }
    for (const escaped of ['escaped.txt', 'absolute.txt', 'pax-escaped.txt', 'written.txt'])
      expect(existsSync(join(home, escaped)) || existsSync(join(home, '..', escaped)), escaped).toBe(false);
    // nothing installed, no staging folder left behind
    expect(existsSync(join(home, 'plugins')) ? readdirSync(join(home, 'plugins')) : []).toEqual([]);

    const clean = join(dir, 'clean.tgz');
    writeFileSync(clean, gzipSync(tar(good())));
    const ok = await keel(['plugin', 'install', clean], { cwd: dir, home });
    expect(ok.code, ok.stderr).toBe(0);
    expect(readdirSync(join(home, 'plugins')).sort()).toEqual(['approved.json', 'notes']);
  }, 60_000);

  it('clones a git URL without running its hooks and refuses one that holds a symlink', async () => {
    const home = keelHome();
    const marker = join(tempDir('keel-marker-'), 'hook-ran');
    const repo = gitRepo({ 'keel-plugin.json': JSON.stringify(MANIFEST), 'skills/notes/SKILL.md': SKILL });
    // a hook in the user's global git config would run on checkout; keel's clone reads no global config
    const globalConfig = join(tempDir('keel-gitcfg-'), 'gitconfig');
    const hooks = tempDir('keel-hooks-');
    writeFileSync(join(hooks, 'post-checkout'), `#!/bin/sh\ntouch ${marker}\n`, { mode: 0o755 });
    writeFileSync(globalConfig, `[core]\n\thooksPath = ${hooks}\n`);
    const env = { GIT_CONFIG_GLOBAL: globalConfig };
    const ok = await keel(['plugin', 'install', `file://${repo}`], { cwd: repo, home, env });
    expect(ok.code, ok.stderr).toBe(0);
    expect(existsSync(marker)).toBe(false);
    expect(existsSync(join(home, 'plugins', 'notes', '.git'))).toBe(false);
    expect(existsSync(join(home, 'plugins', 'notes', 'skills', 'notes', 'SKILL.md'))).toBe(true);

    const linked = gitRepo({ 'keel-plugin.json': JSON.stringify({ name: 'linked' }) });
    symlinkSync('/etc/passwd', join(linked, 'passwd'));
    git(linked, 'add', '-A');
    git(linked, 'commit', '-q', '-m', 'link');
    const refused = await keel(['plugin', 'install', `file://${linked}`, '--yes'], { cwd: linked, home });
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('passwd is a symlink');
    expect(existsSync(join(home, 'plugins', 'linked'))).toBe(false);
  }, 60_000);
});
