import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { apiKeyFor, ConfigError, loadConfig } from '../../src/config/load.js';
import { tempDir, writeFiles } from '../helpers/tmp.js';

function setup(files: Record<string, string>) {
  const home = tempDir();
  const cwd = tempDir();
  writeFiles(
    home,
    Object.fromEntries(
      Object.entries(files)
        .filter(([k]) => k.startsWith('home/'))
        .map(([k, v]) => [k.slice(5), v]),
    ),
  );
  writeFiles(cwd, Object.fromEntries(Object.entries(files).filter(([k]) => !k.startsWith('home/'))));
  return { cwd, env: { KEEL_HOME: home } as NodeJS.ProcessEnv, home };
}

describe('layered config', () => {
  it('uses defaults when nothing is set: read-only, no shell', () => {
    const { cwd, env } = setup({});
    const { config, sources } = loadConfig({ cwd, env });
    expect(config.permission).toBe('ask');
    expect(config.allow_shell).toBe(false);
    expect(config.budgets.max_rounds).toBe(40);
    expect(sources.model).toBeUndefined();
  });

  it('layers user < project < env < flags and records each source', () => {
    const { cwd, env, home } = setup({
      'home/config.toml': 'model = "user-model"\nbase_url = "http://user:1/v1"\n[budgets]\nmax_rounds = 7\n',
      'keel.toml': 'model = "project-model"\n[budgets]\nmax_tokens = 999\n',
    });
    env.KEEL_BASE_URL = 'http://env:2/v1';
    const { config, sources } = loadConfig({ cwd, env, flags: { budgets: { max_rounds: 3 } } });
    expect(config.model).toBe('project-model');
    expect(config.base_url).toBe('http://env:2/v1');
    expect(config.budgets).toMatchObject({ max_rounds: 3, max_tokens: 999 });
    expect(sources.model).toBe(join(cwd, 'keel.toml'));
    expect(sources.base_url).toBe('env');
    expect(sources['budgets.max_rounds']).toBe('flag');
    expect(sources['budgets.max_tokens']).toBe(join(cwd, 'keel.toml'));
    expect(join(home, 'config.toml')).toContain(home);
  });

  it("adds a project's deny_commands to the user's, untrusted or not, and never drops the user's", () => {
    const { cwd, env } = setup({
      'home/config.toml': 'deny_commands = ["git push"]\n',
      'keel.toml': 'deny_commands = ["rm -rf"]\n',
    });
    const { config, warnings } = loadConfig({ cwd, env });
    expect(config.deny_commands).toEqual(['git push', 'rm -rf']);
    expect(warnings.join('\n')).not.toContain('deny_commands');
    // a project that lists none takes none of the user's away
    const bare = setup({
      'home/config.toml': 'deny_commands = ["git push"]\n',
      'keel.toml': 'deny_commands = []\n',
    });
    expect(loadConfig({ cwd: bare.cwd, env: bare.env }).config.deny_commands).toEqual(['git push']);
  });

  it('reads .keel/config.toml when there is no keel.toml', () => {
    const { cwd, env } = setup({ '.keel/config.toml': 'model = "from-dot-keel"\n' });
    expect(loadConfig({ cwd, env }).config.model).toBe('from-dot-keel');
  });

  it('names the file and the key for an unknown key', () => {
    const { cwd, env } = setup({ 'keel.toml': 'modle = "typo"\n[budgets]\nmax_roundz = 3\n' });
    const err = (() => {
      try {
        loadConfig({ cwd, env });
      } catch (e) {
        return e as Error;
      }
    })();
    expect(err).toBeInstanceOf(ConfigError);
    expect(err?.message).toContain(`${join(cwd, 'keel.toml')}: unknown key "modle"`);
    expect(err?.message).toContain('unknown key "budgets.max_roundz"');
  });

  it('names the key, the file and the expected type for a wrong type', () => {
    const { cwd, env } = setup({ 'home/config.toml': '[budgets]\nmax_rounds = "ten"\n' });
    expect(() => loadConfig({ cwd, env })).toThrow(/config\.toml: "budgets\.max_rounds": expected number/);
  });

  it('names the env variable for a bad mode from KEEL_PERMISSION', () => {
    const { cwd, env } = setup({});
    env.KEEL_PERMISSION = 'yolo';
    expect(() => loadConfig({ cwd, env })).toThrow(
      /KEEL_PERMISSION: expected one of "ask", "plan", "edit", "auto"/,
    );
  });

  it('reports invalid TOML with the file and line', () => {
    const { cwd, env } = setup({ 'keel.toml': 'model = "ok"\nthis is not toml\n' });
    expect(() => loadConfig({ cwd, env })).toThrow(/invalid TOML in .*keel\.toml \(line 2/);
  });

  it('reads the API key from KEEL_API_KEY or the named variable, never from config', () => {
    expect(apiKeyFor('MY_KEY', { MY_KEY: 'k1' })).toBe('k1');
    expect(apiKeyFor('MY_KEY', { MY_KEY: 'k1', KEEL_API_KEY: 'k0' })).toBe('k0');
    expect(apiKeyFor('MY_KEY', {})).toBeUndefined();
  });
});
