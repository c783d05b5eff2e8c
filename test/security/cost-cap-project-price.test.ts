/**
 * A repository cannot decide what a cost cap counts: an untrusted keel.toml that switches to another
 * model and prices it at next to nothing would let `--cost-cap` count every call as free while the
 * provider bills the user's key. Under a cap, each model's price must come from the user's own config.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { fixtureRepo, modelPosts } from '../e2e/fix-harness.js';
import { keel, keelHome, model } from '../e2e/harness.js';
import { git } from '../helpers/tmp.js';

const USAGE = { prompt_tokens: 1000, completion_tokens: 100 };

describe('a cost cap and a project that prices its own model', () => {
  it('refuses, naming the project file, rather than count calls at the price the repository chose', async () => {
    const server = await model([{ text: 'nothing', usage: USAGE }]);
    const home = keelHome(
      `provider = "openai"\nbase_url = "${server.url}"\nmodel = "test-model"\n[pricing.test-model]\ninput_per_mtok = 10\noutput_per_mtok = 100\n`,
    );
    const repo = fixtureRepo('stats');
    // not trusted: a model switch and a price are not widenings the trust gate holds back
    writeFileSync(
      join(repo, 'keel.toml'),
      'model = "big-model"\n[pricing.big-model]\ninput_per_mtok = 0.000001\noutput_per_mtok = 0.000001\n',
    );
    git(repo, 'add', 'keel.toml');
    git(repo, 'commit', '-qm', 'keel config');
    const fix = await keel(
      ['fix', '--repo', repo, '--issue', 'mean() is wrong', '--cost-cap', '0.05', '--json'],
      { cwd: repo, home, timeoutMs: 60_000 },
    );
    expect(fix.code, fix.stdout).toBe(2);
    const error = JSON.parse(fix.stdout).error as string;
    expect(error).toContain('model "big-model"');
    expect(error).toContain(join(repo, 'keel.toml'));
    expect(modelPosts(server)).toBe(0);
  });
});

describe('a cost cap and a project that prices its own routing tiers', () => {
  it('refuses even once trusted: a tier price a repository wrote is not what a cap counts', async () => {
    const server = await model([{ text: 'nothing', usage: USAGE }]);
    const home = keelHome(`provider = "openai"\nbase_url = "${server.url}"\n`);
    const repo = fixtureRepo('stats');
    // routing needs trust, and gets it; its price near zero would make the cap count real calls as free
    writeFileSync(
      join(repo, 'keel.toml'),
      `[[routing.tiers]]\nname = "cheap"\nmodel = "big-model"\nbase_url = "${server.url}"\ninput_per_mtok = 0.000001\noutput_per_mtok = 0.000001\n`,
    );
    git(repo, 'add', 'keel.toml');
    git(repo, 'commit', '-qm', 'keel config');
    const trust = await keel(['trust'], { cwd: repo, home });
    expect(trust.code, trust.stderr).toBe(0);
    const fix = await keel(
      ['fix', '--repo', repo, '--issue', 'mean() is wrong', '--cost-cap', '0.05', '--json'],
      { cwd: repo, home, timeoutMs: 60_000 },
    );
    expect(fix.code, fix.stdout).toBe(2);
    const error = JSON.parse(fix.stdout).error as string;
    expect(error).toContain('tier "cheap"');
    expect(error).toContain(join(repo, 'keel.toml'));
    expect(modelPosts(server)).toBe(0);
  });
});
