/**
 * KEEL_HUB_AUDIT_KEY_FILE names the key that seals every hub's workflow runs: whoever can read it can
 * forge a run's evidence, whoever can write it can swap it. `keel hub start` and `keel hub runs verify`
 * (the real binary) refuse a key file anyone else may read or write, one owned by another user, a
 * symlink (which could point anywhere later), a folder, and a missing file (never created in its place).
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, existsSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { keel } from '../e2e/harness.js';
import { HUB_ENV, QUORUM, startHub, workflowProject } from '../e2e/hub-harness.js';
import { tempDir } from '../helpers/tmp.js';

it('the hub refuses a shared audit key file that is not private to this user, and takes one that is', async () => {
  const home = tempDir('keel-hub-keyfile-');
  const cwd = workflowProject(home, { pr: QUORUM });
  const dir = tempDir('keel-hub-keys-');
  const key = (name: string, mode: number) => {
    const path = join(dir, name);
    writeFileSync(path, `${randomBytes(32).toString('hex')}\n`);
    chmodSync(path, mode);
    return path;
  };
  const good = key('good.key', 0o600);
  const cases: [string, string][] = [
    [key('world.key', 0o644), 'mode 0644'],
    [key('group.key', 0o640), 'mode 0640'],
    [key('writable.key', 0o602), 'mode 0602'],
    [join(dir, 'missing.key'), 'unreadable'],
    [join(dir, 'link.key'), 'symlink'],
    [join(dir, 'folder.key'), 'not a regular file'],
  ];
  symlinkSync(good, join(dir, 'link.key'));
  mkdirSync(join(dir, 'folder.key'), { mode: 0o700 });
  if (process.getuid?.() === 0) {
    const theirs = key('theirs.key', 0o600);
    chownSync(theirs, 65534, 65534);
    cases.push([theirs, 'owned by uid 65534']);
  }
  for (const [path, why] of cases) {
    const started = await keel(
      ['hub', 'start', '--listen', '127.0.0.1:0', '--json', '--workflow-project', 'demo'],
      {
        cwd,
        home,
        env: { ...HUB_ENV, KEEL_HUB_AUDIT_KEY_FILE: path },
      },
    );
    // --json: the error is the JSON on stdout
    const said = started.stdout + started.stderr;
    expect(started.code, `${path}: ${said}`).toBe(3);
    expect(said).toContain(path);
    expect(said).toContain(why);
  }
  expect(existsSync(join(dir, 'missing.key'))).toBe(false);
  // verifying with a key others may read is refused the same way (and names the file)
  const verify = await keel(['hub', 'runs', 'verify', 'some-run'], {
    cwd,
    home,
    env: { KEEL_HUB_AUDIT_KEY_FILE: join(dir, 'world.key') },
  });
  expect(verify.code).toBe(3);
  expect(verify.stderr).toContain('mode 0644');

  // a private file (0600, or read-only 0400) is taken
  chmodSync(good, 0o400);
  const hub = await startHub({
    home,
    cwd,
    env: { ...HUB_ENV, KEEL_HUB_AUDIT_KEY_FILE: good },
    args: ['--workflow-project', 'demo'],
  });
  expect((await hub.api('GET', '/health')).status).toBe(200);
});

it("hub_audit_key_file in the user's config names the key with the same checks; the environment wins; a project may not set it", async () => {
  const home = tempDir('keel-hub-keyconf-');
  const cwd = workflowProject(home, { pr: QUORUM });
  const dir = tempDir('keel-hub-keys-');
  const world = join(dir, 'world.key');
  writeFileSync(world, `${randomBytes(32).toString('hex')}\n`, { mode: 0o644 });
  chmodSync(world, 0o644);
  const good = join(dir, 'good.key');
  writeFileSync(good, `${randomBytes(32).toString('hex')}\n`, { mode: 0o600 });
  const start = () =>
    keel(['hub', 'start', '--listen', '127.0.0.1:0', '--json', '--workflow-project', 'demo'], {
      cwd,
      home,
      env: HUB_ENV,
    });
  // a key others may read, named by the user's config: refused as the environment's would be
  writeFileSync(join(home, 'config.toml'), `hub_audit_key_file = ${JSON.stringify(world)}\n`);
  const refused = await start();
  expect(refused.code, refused.stdout + refused.stderr).toBe(3);
  expect(refused.stdout + refused.stderr).toContain(world);
  expect(refused.stdout + refused.stderr).toContain('mode 0644');
  const verify = await keel(['hub', 'runs', 'verify', 'some-run'], { cwd, home });
  expect(verify.code).toBe(3);
  expect(verify.stderr).toContain('mode 0644');

  // a relative path would be read in the workspace, which a repository fills: refused
  writeFileSync(join(home, 'config.toml'), 'hub_audit_key_file = "hub.key"\n');
  const relative = await keel(['hub', 'runs', 'verify', 'some-run'], { cwd, home });
  expect(relative.code).toBe(2);
  expect(relative.stderr).toContain('"hub_audit_key_file": must be an absolute path');

  // the environment wins over the config: a good config key does not hide a bad KEEL_HUB_AUDIT_KEY_FILE
  writeFileSync(join(home, 'config.toml'), `hub_audit_key_file = ${JSON.stringify(good)}\n`);
  const env = await keel(['hub', 'runs', 'verify', 'some-run'], {
    cwd,
    home,
    env: { KEEL_HUB_AUDIT_KEY_FILE: world },
  });
  expect(env.code).toBe(3);
  expect(env.stderr).toContain(world);

  // a repository's keel.toml may not choose the key, trusted or not
  writeFileSync(join(cwd, 'keel.toml'), `hub_audit_key_file = ${JSON.stringify(good)}\n`);
  const project = await keel(['hub', 'runs', 'verify', 'some-run'], { cwd, home });
  expect(project.code).toBe(2);
  expect(project.stderr).toContain('a project config may not choose the hub audit key');
  rmSync(join(cwd, 'keel.toml'));

  // the config's private key is the one the hub seals with: KEEL_HOME's own is never made
  const hub = await startHub({ home, cwd, env: HUB_ENV, args: ['--workflow-project', 'demo'] });
  expect((await hub.api('GET', '/health')).status).toBe(200);
  expect(existsSync(join(home, 'audit.key'))).toBe(false);
});
