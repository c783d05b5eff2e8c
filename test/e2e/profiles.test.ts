/** Config profiles through the real binary: `--profile`, KEEL_PROFILE, a missing profile, and an untrusted project's profile. */
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { gitRepo, tempDir } from '../helpers/tmp.js';
import { chatBodies, keel, keelHome, lastSessionEvents, model } from './harness.js';

/** A script file for the scripted provider whose one turn answers only `modelName`. */
function scriptFile(modelName: string, text: string): string {
  const path = join(tempDir('keel-script-'), 'script.json');
  writeFileSync(path, JSON.stringify({ turns: [{ model: modelName, text, expect: { model: modelName } }] }));
  return path;
}

describe('config profiles', () => {
  it("keel ask --profile NAME runs with the profile's provider, script and model", async () => {
    const repo = gitRepo();
    const script = scriptFile('profile-model', 'hello from the profile');
    const home = keelHome(
      `provider = "openai"\nmodel = "base-model"\n[profiles.scripted-one]\nprovider = "scripted"\nscript = ${JSON.stringify(script)}\nmodel = "profile-model"\n`,
    );
    const run = await keel(['ask', '--profile', 'scripted-one', '--json', '-m', 'hi'], { cwd: repo, home });
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ code: 'COMPLETED', summary: 'hello from the profile' });
    expect(lastSessionEvents(home)[0]?.data).toMatchObject({ provider: 'scripted', model: 'profile-model' });
  });

  it('KEEL_PROFILE chooses one too, flags still override it, and keel config show names the profile', async () => {
    const repo = gitRepo();
    const server = await model([{ text: 'from the server', expect: { model: 'flag-model' } }]);
    const home = keelHome(
      `[profiles.remote]\nprovider = "openai"\nbase_url = "${server.url}"\nmodel = "remote-model"\n`,
    );
    const env = { KEEL_PROFILE: 'remote' };
    const run = await keel(['ask', '--model', 'flag-model', '--json', '-m', 'hi'], { cwd: repo, home, env });
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout).summary).toBe('from the server');
    expect(chatBodies(server)).toEqual([expect.objectContaining({ model: 'flag-model' })]);

    const show = await keel(['config', 'show', '--json'], { cwd: repo, home, env });
    expect(show.code).toBe(0);
    const doc = JSON.parse(show.stdout);
    expect(doc.config).toMatchObject({ profile: 'remote', model: 'remote-model', base_url: server.url });
    expect(doc.sources).toMatchObject({
      profile: 'env',
      model: `profile remote (${join(home, 'config.toml')})`,
    });
  });

  it('keel config show --profile NAME shows the config with that profile applied', async () => {
    const repo = gitRepo();
    const home = keelHome('model = "base-model"\n[profiles.fast]\nmodel = "small-model"\n');
    const base = JSON.parse((await keel(['config', 'show', '--json'], { cwd: repo, home })).stdout);
    expect(base.config.model).toBe('base-model');
    const show = await keel(['config', 'show', '--profile', 'fast', '--json'], { cwd: repo, home });
    expect(show.code).toBe(0);
    expect(JSON.parse(show.stdout).config).toMatchObject({ profile: 'fast', model: 'small-model' });
    const missing = await keel(['config', 'show', '--profile', 'nope'], { cwd: repo, home });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('profile "nope" (chosen by --profile) is not defined');
  });

  it('a profile no file defines exits 2 naming it and the profiles that exist', async () => {
    const repo = gitRepo();
    const home = keelHome('[profiles.work]\nmodel = "w"\n');
    const run = await keel(['ask', '--profile', 'wrok', '-m', 'hi'], { cwd: repo, home });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(
      `profile "wrok" (chosen by --profile) is not defined; defined profiles: work (${join(home, 'config.toml')})`,
    );
    const json = await keel(['ask', '--profile', 'wrok', '--json', '-m', 'hi'], { cwd: repo, home });
    expect(json.code).toBe(2);
    expect(JSON.parse(json.stdout)).toMatchObject({ code: 'CONFIG_ERROR', exit_code: 2 });
  });

  it("an untrusted project's own profile cannot add a hook; after keel trust it can", async () => {
    const marker = join(tempDir(), 'hook-ran');
    const hook = join(tempDir('keel-hook-'), 'hook.mjs');
    // it reads the event from stdin, as a hook does, then leaves its mark
    writeFileSync(
      hook,
      `import { writeFileSync } from 'node:fs';\nprocess.stdin.resume();\nprocess.stdin.on('end', () => writeFileSync(${JSON.stringify(marker)}, 'ran'));\n`,
    );
    const repo = gitRepo({
      'keel.toml': `profile = "evil"\n[[profiles.evil.hooks]]\nevent = "SessionStart"\ncommand = [${JSON.stringify(process.execPath)}, ${JSON.stringify(hook)}]\n`,
    });
    const script = scriptFile('m', 'ok');
    const home = keelHome(`provider = "scripted"\nmodel = "m"\nscript = ${JSON.stringify(script)}\n`);
    const untrusted = await keel(['ask', '-m', 'hi'], { cwd: repo, home });
    expect(untrusted.code).toBe(0);
    expect(untrusted.stderr).toContain('is not trusted: ignoring profiles.evil.hooks');
    expect(existsSync(marker)).toBe(false);

    const trust = await keel(['trust'], { cwd: repo, home });
    expect(trust.stdout).toContain('it may now set: profile, profiles.evil.hooks');
    const trusted = await keel(['ask', '-m', 'hi'], { cwd: repo, home });
    expect(trusted.code).toBe(0);
    expect(existsSync(marker)).toBe(true);
  });
});
