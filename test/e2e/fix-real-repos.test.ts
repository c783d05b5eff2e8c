/**
 * `keel fix` verdicts on repositories shaped like the real ones that tripped it: pytest's doctest modules,
 * a `src`-less package that only `python -m pytest` can import, a `posttest` step that needs the network,
 * and a refused run's pr.md. Real pytest, npm and sandbox, through the real binary and a scripted model.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { git, gitRepo, writeFiles } from '../helpers/tmp.js';
import { editTurns, fix, fixtureRepo, leftovers, planTurns } from './fix-harness.js';
import { chatBodies, model } from './harness.js';

const ISSUE = ['--issue', 'the function is wrong', '--max-attempts', '1'];

describe('keel fix on real repository shapes', () => {
  it('a module with doctests (--doctest-modules in tox.ini) is code: the fix to it is verified', async () => {
    const camelize = [
      'def camelize(word):',
      '    """Turn snake_case into CamelCase.',
      '',
      "    >>> camelize('device_type')",
      "    'DeviceType'",
      '    """',
      "    return ''.join(part.capitalize() for part in word.split('-'))",
      '',
    ].join('\n');
    const repo = gitRepo({
      'tox.ini': '[tox]\nenvlist = py3\n\n[pytest]\naddopts = --doctest-modules\n',
      'inflection/__init__.py': camelize,
      'test_inflection.py': [
        'from inflection import camelize',
        '',
        '',
        'def test_camelize():',
        "    assert camelize('device_type') == 'DeviceType'",
        '',
        '',
        'def test_one_word():',
        "    assert camelize('device') == 'Device'",
        '',
      ].join('\n'),
    });
    const server = await model([
      ...planTurns('inflection/__init__.py', '1. Split on underscores.'),
      ...editTurns('inflection/__init__.py', "word.split('-')", "word.split('_')", 'Split on _.'),
    ]);
    const { run, doc } = await fix(repo, server, ISSUE);
    expect(run.code, run.stderr).toBe(0);
    expect(doc).toMatchObject({ code: 'COMPLETED', status: 'verified', test_command: 'pytest' });
    // the doctest counts as a test (a target here), the module's code edit as the fix
    expect(doc.verification).toMatchObject({
      testEdits: [],
      regressions: [],
      targetsPassing: ['inflection/__init__.py > inflection.camelize', 'test_inflection.py > test_camelize'],
    });
  });

  it('a src-less package that `pytest` cannot import: the baseline runs `python3 -m pytest`', async () => {
    const repo = gitRepo({
      'pytest.ini': '[pytest]\ntestpaths = tests\n',
      'slugs/__init__.py': "def slug(text):\n    return text.lower().replace(' ', '_')\n",
      'tests/test_slugs.py': [
        'from slugs import slug',
        '',
        '',
        'def test_spaces_become_dashes():',
        "    assert slug('A B') == 'a-b'",
        '',
        '',
        'def test_lower_case():',
        "    assert slug('AB') == 'ab'",
        '',
      ].join('\n'),
    });
    const server = await model([
      ...planTurns('slugs/__init__.py', '1. Use dashes.'),
      ...editTurns('slugs/__init__.py', "replace(' ', '_')", "replace(' ', '-')", 'Dashes.'),
    ]);
    const { run, doc } = await fix(repo, server, ISSUE);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toContain('`pytest` cannot import the project');
    expect(doc).toMatchObject({ code: 'COMPLETED', status: 'verified', test_command: 'python3 -m pytest' });
    expect(doc.verification).toMatchObject({
      targetsPassing: ['tests/test_slugs.py > test_spaces_become_dashes'],
      regressions: [],
    });
  });

  it('a posttest that needs the network fails the same way before and after: npm is told offline, the verdict stands', async () => {
    const repo = fixtureRepo('stats');
    writeFiles(repo, {
      'package.json': `${JSON.stringify({ name: 'p', type: 'module', scripts: { test: 'node --test', posttest: 'npx npm@">=10.2" audit' } }, null, 2)}\n`,
    });
    git(repo, 'commit', '-qam', 'audit after the tests');
    const server = await model([
      ...planTurns('src/stats.js', '1. Divide by the count.'),
      ...editTurns('src/stats.js', '(values.length + 1)', 'values.length', 'Fixed mean.'),
    ]);
    const { run, doc } = await fix(repo, server, ISSUE);
    expect(run.code, run.stderr).toBe(0);
    expect(doc).toMatchObject({ code: 'COMPLETED', status: 'verified' });
    expect((doc.verification as { checks?: unknown } | null)?.checks).toEqual([
      {
        name: 'posttest',
        command: 'npx npm@">=10.2" audit',
        before: 'failed',
        after: 'failed',
        broken: false,
      },
    ]);
    // npm's own words, shown to the model with the baseline: it answered from its (empty) cache at once
    const plan = JSON.stringify(chatBodies(server)[0]);
    expect(plan).toContain('ENOTCACHED');
    expect(plan).not.toContain('ENOTFOUND');
  });

  it('a dependency that writes into its own folder (a .tsbuildinfo) gets a throw-away copy; yours is untouched', async () => {
    const repo = fixtureRepo('stats');
    writeFiles(repo, {
      'test/types.test.js': [
        "import assert from 'node:assert/strict';",
        "import { test } from 'node:test';",
        "import { checked } from 'typecheck-cache';",
        '',
        "test('the types were checked', () => {",
        "  assert.equal(checked, 'ok');",
        '});',
        '',
      ].join('\n'),
    });
    git(repo, 'add', '-A');
    git(repo, 'commit', '-qm', 'type tests');
    // installed, untracked: like vitest --typecheck, it writes its build info next to its own code
    writeFiles(repo, {
      'node_modules/typecheck-cache/package.json':
        '{"name":"typecheck-cache","type":"module","main":"index.js"}\n',
      'node_modules/typecheck-cache/index.js': [
        "import { writeFileSync } from 'node:fs';",
        "writeFileSync(new URL('./.tsbuildinfo', import.meta.url), 'build info');",
        "export const checked = 'ok';",
        '',
      ].join('\n'),
    });
    const server = await model([
      ...planTurns('src/stats.js', '1. Divide by the count.'),
      ...editTurns('src/stats.js', '(values.length + 1)', 'values.length', 'Fixed mean.'),
    ]);
    const { run, doc } = await fix(repo, server, ISSUE);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toContain('a tool writes into typecheck-cache');
    expect(doc).toMatchObject({ code: 'COMPLETED', status: 'verified' });
    expect(doc.verification?.regressions).toEqual([]);
    // fix() also checks that every file of the checkout, node_modules included, is as it was
    expect(existsSync(join(repo, 'node_modules/typecheck-cache/.tsbuildinfo'))).toBe(false);
  });

  it('a refused run whose attempt changed nothing: pr.md names no branch, and none is left', async () => {
    const repo = fixtureRepo('stats');
    const server = await model([
      ...planTurns('src/stats.js', '1. Divide by the count.'),
      { text: 'I could not find the bug.' },
    ]);
    const { run, doc } = await fix(repo, server, ISSUE);
    expect(run.code, run.stderr).toBe(1);
    expect(doc).toMatchObject({ code: 'VERIFICATION_FAILED', status: 'failed', branch: null });
    expect(leftovers(repo).branches).toEqual([]);
    const pr = readFileSync(doc.pr_description ?? '', 'utf8');
    expect(pr).not.toContain('keel/');
    expect(pr).not.toMatch(/Branch:/);
  });
});
