import { mkdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseToml } from 'smol-toml';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/load.js';
import { permissionChanges } from '../../src/config/trust.js';
import { tempDir, writeFiles } from '../helpers/tmp.js';

/** A workspace with a project keel.toml (untrusted) and an optional user config. */
function setup(project: string, user?: string) {
  const home = tempDir();
  const cwd = tempDir();
  writeFiles(cwd, { 'keel.toml': project });
  if (user !== undefined) writeFiles(home, { 'config.toml': user });
  return { cwd, env: { KEEL_HOME: home } as NodeJS.ProcessEnv };
}

const warningOf = (w: string[]) => w.join('\n');

describe('an untrusted project may narrow, never widen', () => {
  it('ignores a higher max_rounds and loop_threshold, applies a lower max_tokens', () => {
    const { cwd, env } = setup('loop_threshold = 9\n[budgets]\nmax_rounds = 500\nmax_tokens = 1000\n');
    const { config, warnings } = loadConfig({ cwd, env });
    expect(config.budgets.max_rounds).toBe(40);
    expect(config.loop_threshold).toBe(3);
    expect(config.budgets.max_tokens).toBe(1000);
    expect(warningOf(warnings)).toMatch(/is not trusted: ignoring budgets\.max_rounds, loop_threshold/);
    expect(warningOf(warnings)).not.toContain('max_tokens');
  });

  it('compares against the user config: raising the user budget is ignored, lowering it applies', () => {
    const high = setup('[budgets]\nmax_cost_usd = 5\n', '[budgets]\nmax_cost_usd = 1\n');
    expect(loadConfig(high).config.budgets.max_cost_usd).toBe(1);
    const low = setup('[budgets]\nmax_cost_usd = 0.5\nmax_rounds = 5\n', '[budgets]\nmax_cost_usd = 1\n');
    const loaded = loadConfig(low);
    expect(loaded.config.budgets).toMatchObject({ max_cost_usd: 0.5, max_rounds: 5 });
    expect(loaded.warnings).toEqual([]);
  });

  it('ignores a lower price for a model the user priced, and a switch to an unpriced model under a cost cap', () => {
    const user =
      'model = "m"\n[budgets]\nmax_cost_usd = 1\n[pricing.m]\ninput_per_mtok = 3\noutput_per_mtok = 15\n';
    const cheap = setup('[pricing.m]\ninput_per_mtok = 0\noutput_per_mtok = 20\n', user);
    const a = loadConfig(cheap);
    expect(a.config.pricing.m).toEqual({ input_per_mtok: 3, output_per_mtok: 20 });
    expect(warningOf(a.warnings)).toContain('ignoring pricing.m.input_per_mtok');
    const dodge = setup('model = "free"\n[pricing.free]\ninput_per_mtok = 0\noutput_per_mtok = 0\n', user);
    const b = loadConfig(dodge);
    expect(b.config.model).toBe('m');
    expect(warningOf(b.warnings)).toContain('ignoring model');
  });

  it('lets a project pick another model when no cost cap depends on it', () => {
    const { cwd, env } = setup('model = "qwen3-coder"\n', 'model = "m"\n');
    expect(loadConfig({ cwd, env })).toMatchObject({ config: { model: 'qwen3-coder' }, warnings: [] });
  });

  it('ignores a wider mode, sandbox, network and commits; applies stricter ones', () => {
    const wide = setup('permission = "auto"\nsandbox = "none"\nsandbox_network = true\nauto_commit = true\n');
    const a = loadConfig(wide);
    expect(a.config).toMatchObject({
      permission: 'ask',
      sandbox: 'auto',
      sandbox_network: false,
      auto_commit: false,
    });
    const strict = setup('sandbox = "bwrap"\nstop_on_violation = true\n[sandbox_limits]\ncpu_s = 10\n');
    const b = loadConfig(strict);
    expect(b.config).toMatchObject({
      sandbox: 'bwrap',
      stop_on_violation: true,
      sandbox_limits: { cpu_s: 10 },
    });
    expect(b.warnings).toEqual([]);
  });

  it("a project cannot turn off the user's stop_on_violation, but may turn off the user's allow_shell", () => {
    const { cwd, env } = setup(
      'stop_on_violation = false\nallow_shell = false\n',
      'stop_on_violation = true\nallow_shell = true\n',
    );
    const loaded = loadConfig({ cwd, env });
    expect(loaded.config.stop_on_violation).toBe(true);
    // turning the user's shell opt-in off narrows, so it applies
    expect(loaded.config.allow_shell).toBe(false);
    expect(warningOf(loaded.warnings)).toContain('ignoring stop_on_violation');
  });

  it('a project may make keel ask more often, never less', () => {
    expect(loadConfig(setup('approvals = "never"\n')).config.approvals).toBeUndefined();
    expect(loadConfig(setup('approvals = "all"\n')).config.approvals).toBe('all');
    // "shell" drops the user's question before every write: wider, so ignored
    const swap = loadConfig(setup('approvals = "shell"\n', 'approvals = "writes"\n'));
    expect(swap.config.approvals).toBe('writes');
    expect(warningOf(swap.warnings)).toContain('ignoring approvals');
    expect(loadConfig(setup('approvals = "all"\n', 'approvals = "writes"\n')).config.approvals).toBe('all');
  });

  it('compares scope entries where they really lead', () => {
    const outside = tempDir();
    const { cwd, env } = setup('scope = [".", "vendor"]\n');
    symlinkSync(outside, join(cwd, 'vendor'));
    const loaded = loadConfig({ cwd, env });
    expect(loaded.config.scope).toEqual(['.']);
    expect(warningOf(loaded.warnings)).toContain('ignoring scope');
    const inside = setup('scope = ["src", "lib"]\n');
    mkdirSync(join(inside.cwd, 'src'));
    expect(loadConfig(inside).config.scope).toEqual(['src', 'lib']);
  });

  it('treats a dangling or looping link in scope as widening', () => {
    const { cwd, env } = setup('scope = ["gone"]\n');
    symlinkSync('/nonexistent/keel-target', join(cwd, 'gone'));
    expect(loadConfig({ cwd, env }).config.scope).toEqual(['.']);
    const loop = setup('scope = ["a/b"]\n');
    symlinkSync('b', join(loop.cwd, 'a'));
    symlinkSync('a', join(loop.cwd, 'b'));
    expect(loadConfig(loop).config.scope).toEqual(['.']);
  });

  it('a scope wider than the user scope is widening even inside the repository', () => {
    const { cwd, env } = setup('scope = ["."]\n', 'scope = ["src"]\n');
    expect(loadConfig({ cwd, env }).config.scope).toEqual(['src']);
  });

  it('wrong types still fail validation, naming the project file', () => {
    const { cwd, env } = setup('[budgets]\nmax_rounds = "many"\n');
    expect(() => loadConfig({ cwd, env })).toThrow(/keel\.toml: "budgets\.max_rounds": expected number/);
  });
});

describe('two project config files', () => {
  it('is a ConfigError naming both', () => {
    const cwd = tempDir();
    writeFiles(cwd, { 'keel.toml': 'model = "a"\n', '.keel/config.toml': 'model = "b"\n' });
    const env = { KEEL_HOME: tempDir() } as NodeJS.ProcessEnv;
    expect(() => loadConfig({ cwd, env })).toThrow(ConfigError);
    expect(() => loadConfig({ cwd, env })).toThrow(
      `${join(cwd, 'keel.toml')} and ${join(cwd, '.keel', 'config.toml')}`,
    );
  });
});

describe('trust diff classification', () => {
  it('matches the loader: a lower budget narrows, a higher loop_threshold or lower price widens', () => {
    const root = tempDir();
    const byKey = (before: string, after: string) =>
      Object.fromEntries(permissionChanges(parse(before), parse(after), root).map((c) => [c.key, c.kind]));
    expect(
      byKey(
        'loop_threshold = 3\n[budgets]\nmax_rounds = 10\n[pricing.m]\ninput_per_mtok = 1\noutput_per_mtok = 1\n',
        'loop_threshold = 5\n[budgets]\nmax_rounds = 5\n[pricing.m]\ninput_per_mtok = 0\noutput_per_mtok = 2\n',
      ),
    ).toEqual({
      loop_threshold: 'expansion',
      'budgets.max_rounds': 'narrowing',
      'pricing.m.input_per_mtok': 'expansion',
      'pricing.m.output_per_mtok': 'narrowing',
    });
  });

  it('reports a scope entry that leads out of the repository even when its text did not change', () => {
    const root = tempDir();
    symlinkSync(tempDir(), join(root, 'vendor'));
    const scope = { scope: ['.', 'vendor'] };
    const changes = permissionChanges(scope, scope, root);
    expect(changes).toEqual([
      expect.objectContaining({
        key: 'scope',
        kind: 'expansion',
        detail: expect.stringContaining('outside the repository'),
      }),
    ]);
  });
});

function parse(text: string) {
  return parseToml(text) as Record<string, unknown>;
}
