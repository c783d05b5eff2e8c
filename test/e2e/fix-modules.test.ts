/**
 * `keel fix` with the user's installed node_modules: tools that write their cache into it work, nothing
 * lands in the user's copy, and a package an attempt swaps in there is gone before the verdict runs.
 */
import { existsSync, readdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { git, tempDir, writeFiles } from '../helpers/tmp.js';
import { editTurns, fingerprint, fix, fixtureRepo, planTurns } from './fix-harness.js';
import { model } from './harness.js';

const SHOUT = {
  'node_modules/shout/package.json': '{ "name": "shout", "type": "module", "main": "index.js" }\n',
  'node_modules/shout/index.js': 'export const shout = (text) => text.toUpperCase();\n',
};

// like xo, babel or find-cache-dir: a cache folder under the project's node_modules, written on first use
const CACHING_SHOUT = {
  ...SHOUT,
  'node_modules/shout/index.js': [
    "import { mkdirSync, writeFileSync } from 'node:fs';",
    "import { join } from 'node:path';",
    "const cache = join(process.cwd(), 'node_modules', '.cache', 'shout');",
    'mkdirSync(cache, { recursive: true });',
    "writeFileSync(join(cache, 'warm'), String(Date.now()));",
    'export const shout = (text) => text.toUpperCase();',
    '',
  ].join('\n'),
};

const PLAN = planTurns('src/banner.js', '1. Close the banner with a bar.');
const ISSUE = ['--issue', 'the banner has no closing bar', '--max-attempts', '1'];

function repoWith(modules: Record<string, string>): string {
  const repo = fixtureRepo('local-dep');
  writeFiles(repo, { '.gitignore': 'node_modules/\n', ...modules });
  return repo;
}

describe('keel fix with installed node_modules', () => {
  it('a dependency that writes node_modules/.cache works, and the cache never reaches the checkout', async () => {
    const repo = repoWith(CACHING_SHOUT);
    const before = fingerprint(repo);
    const server = await model([
      ...PLAN,
      ...editTurns('src/banner.js', '} `;', '} |`;', 'The banner lacked its closing bar.'),
    ]);
    const { run, doc } = await fix(repo, server, ISSUE);

    expect(run.code, run.stderr).toBe(0);
    expect(doc).toMatchObject({ status: 'verified', attempts: 1, files_changed: ['src/banner.js'] });
    expect(doc.verification?.targetsPassing).toEqual([
      'test/banner.test.js > banner shouts the title between bars',
    ]);
    expect(existsSync(join(repo, 'node_modules', '.cache'))).toBe(false);
    expect(fingerprint(repo)).toEqual(before);
  });

  it('a package the attempt swaps into node_modules is put back before the verdict', async () => {
    const repo = repoWith(SHOUT);
    // a "fix" that leaves the bug and fakes the dependency so the test passes anyway
    const fake = [
      'rm node_modules/shout',
      'mkdir node_modules/shout',
      `printf '%s' '{"name":"shout","type":"module","main":"index.js"}' > node_modules/shout/package.json`,
      "printf '%s' 'export const shout = (t) => t.toUpperCase() + \" |\";' > node_modules/shout/index.js",
    ].join(' && ');
    const server = await model([
      ...PLAN,
      { tool_calls: [{ name: 'shell', arguments: { command: fake } }] },
      // without the fake this leaves `| SALE`; with it, `| SALE |`
      ...editTurns('src/banner.js', '} `;', '}`;', 'Fixed the banner.'),
    ]);
    const { run, doc } = await fix(repo, server, ISSUE);

    expect(run.code, run.stderr).toBe(1);
    expect(doc).toMatchObject({ code: 'VERIFICATION_FAILED', status: 'failed' });
    expect(doc.verification?.targetsFailing).toEqual([
      'test/banner.test.js > banner shouts the title between bars',
    ]);
    // the user's own package was never touched
    expect(readdirSync(join(repo, 'node_modules', 'shout')).sort()).toEqual(['index.js', 'package.json']);
  });

  it('--repo given as a path through a link works on the real repository, with its node_modules', async () => {
    const repo = repoWith(SHOUT);
    const link = join(tempDir('keel-link-'), 'project');
    symlinkSync(repo, link);
    const server = await model([
      ...PLAN,
      ...editTurns('src/banner.js', '} `;', '} |`;', 'The banner lacked its closing bar.'),
    ]);
    const { run, doc } = await fix(link, server, ISSUE);

    expect(run.code, run.stderr).toBe(0);
    expect(doc).toMatchObject({ status: 'verified', files_changed: ['src/banner.js'] });
    expect(git(repo, 'show', '--name-only', '--format=', doc.branch ?? '').trim()).toBe('src/banner.js');
  });
});
