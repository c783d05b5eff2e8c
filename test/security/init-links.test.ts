/** `keel init` against a hostile repository and a hostile server: links it must not write through, names it must not print raw. */
import { existsSync, lstatSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { keel, keelHome, model } from '../e2e/harness.js';
import { gitRepo, tempDir } from '../helpers/tmp.js';

describe('keel init never writes through a link', () => {
  it('a keel.toml that links to a file of the user: refused, and --force replaces the link, not the file', async () => {
    const repo = gitRepo();
    const victim = join(tempDir('keel-victim-'), '.bashrc');
    writeFileSync(victim, 'precious\n');
    symlinkSync(victim, join(repo, 'keel.toml'));
    const home = keelHome();
    const refused = await keel(['init', '--project'], { cwd: repo, home });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('already exists');
    expect(readFileSync(victim, 'utf8')).toBe('precious\n');
    const forced = await keel(['init', '--project', '--force'], { cwd: repo, home });
    expect(forced.code, forced.stderr).toBe(0);
    expect(readFileSync(victim, 'utf8')).toBe('precious\n');
    expect(lstatSync(join(repo, 'keel.toml')).isSymbolicLink()).toBe(false);
    expect(readFileSync(join(repo, 'keel.toml'), 'utf8')).toContain('# permission = "ask"');
  });

  it('a dangling keel.toml link does not create its target', async () => {
    const repo = gitRepo();
    const target = join(tempDir('keel-target-'), 'created-by-keel');
    symlinkSync(target, join(repo, 'keel.toml'));
    const run = await keel(['init', '--project'], { cwd: repo, home: keelHome() });
    expect(run.code).toBe(2);
    expect(existsSync(target)).toBe(false);
  });

  it('a user config that is a link is replaced, not written through, with --force', async () => {
    const home = keelHome();
    const victim = join(tempDir('keel-victim-'), 'other.toml');
    writeFileSync(victim, 'precious\n');
    symlinkSync(victim, join(home, 'config.toml'));
    const run = await keel(
      ['init', '--yes', '--no-probe', '--provider', 'openai', '--model', 'm', '--force'],
      {
        cwd: home,
        home,
      },
    );
    expect(run.code, run.stderr).toBe(0);
    expect(readFileSync(victim, 'utf8')).toBe('precious\n');
    expect(readFileSync(join(home, 'config.toml'), 'utf8')).toContain('model = "m"');
  });
});

describe("a server's model names reach the terminal inert", () => {
  it('escape sequences in a listed model name are shown escaped', async () => {
    const home = keelHome();
    const server = await model([], { models: ['evil\x1b]0;owned\x07\x1b[2Jname'] });
    const run = await keel(
      ['init', '--yes', '--provider', 'openai', '--base-url', server.url, '--model', 'x'],
      {
        cwd: home,
        home,
      },
    );
    expect(run.code).toBe(0);
    expect(run.stderr).toContain('evil\\x1b]0;owned\\x07\\x1b[2Jname');
    expect(run.stderr).not.toContain('\x1b');
  });
});
