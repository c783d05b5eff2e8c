/**
 * `keel fix` end to end: what the verdict is made of. New tests run on top of the baseline's, the
 * environment failing after an attempt stops the run and keeps the attempt, a suite that cannot be
 * collected is not a bug to fix, and the reports show a command a user can rerun.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { git, writeFiles } from '../helpers/tmp.js';
import { editTurns, fix, fixtureRepo, leftovers, modelPosts, planTurns } from './fix-harness.js';
import { model } from './harness.js';

const BUGGY_DIVISOR = '  return sum(values) / (values.length + 1);';
const PLAN = planTurns('src/stats.js', '1. Divide by values.length.');
const RIGHT_EDIT = {
  name: 'edit_file',
  arguments: {
    path: 'src/stats.js',
    old_string: BUGGY_DIVISOR,
    new_string: '  return sum(values) / values.length;',
  },
};
const NEW_TEST = [
  "import assert from 'node:assert/strict';",
  "import { test } from 'node:test';",
  "import { mean } from '../src/stats.js';",
  '',
  "test('mean of one value is that value', () => {",
  '  assert.equal(mean([7]), 7);',
  '});',
  '',
].join('\n');

describe('keel fix: the verdict', () => {
  it('a correct fix that also adds a test file is verified; the new test runs on top', async () => {
    const repo = fixtureRepo('stats');
    const server = await model([
      ...PLAN,
      {
        tool_calls: [
          RIGHT_EDIT,
          { name: 'write_file', arguments: { path: 'test/mean-one.test.js', content: NEW_TEST } },
        ],
      },
      { text: 'Divide by the length; added a test.' },
    ]);
    const { run, doc } = await fix(repo, server, ['--issue', 'mean is wrong']);

    expect(run.code, run.stderr).toBe(0);
    expect(doc).toMatchObject({ code: 'COMPLETED', status: 'verified' });
    expect(doc.files_changed.sort()).toEqual(['src/stats.js', 'test/mean-one.test.js']);
    expect(doc.verification).toMatchObject({ testEdits: [], testEditsCounted: false });
    // the defects of issue 8: the command a user can rerun, and "verified:" said once in the commit
    expect(doc.test_command).toBe('npm test');
    expect(readFileSync(doc.pr_description ?? '', 'utf8')).toContain('Test command: `npm test`');
    const body = git(repo, 'log', '-1', '--format=%B', doc.branch ?? '');
    expect(body).toContain('verified: 1 target passes');
    expect(body).not.toContain('verified: verified');
  });

  it('an environment problem after an attempt stops with exit 3 and keeps the attempt', async () => {
    const repo = fixtureRepo('stats');
    // a posttest step that uploads only a fixed build's coverage: it passed at baseline (nothing to upload)
    // and needs the network after the correct fix
    writeFiles(repo, {
      'package.json': `${JSON.stringify({ name: 'env-after', private: true, type: 'module', scripts: { test: 'node --test', posttest: 'node scripts/upload.js' } }, null, 2)}\n`,
      'scripts/upload.js': [
        "import { readFileSync } from 'node:fs';",
        "import { lookup } from 'node:dns/promises';",
        "if (readFileSync('src/stats.js', 'utf8').includes('/ values.length;'))",
        "  await lookup('coverage.keel-test.invalid');",
        '',
      ].join('\n'),
    });
    git(repo, 'add', '-A');
    git(repo, 'commit', '-q', '-m', 'upload coverage after the tests');
    const server = await model([
      ...PLAN,
      { tool_calls: [RIGHT_EDIT] },
      { text: 'Divide by the length.' },
      { tool_calls: [RIGHT_EDIT] },
      { text: 'never asked: no second attempt' },
    ]);
    const { run, doc } = await fix(repo, server, ['--issue', 'mean is wrong', '--max-attempts', '2']);

    expect(run.code, run.stderr).toBe(3);
    expect(doc).toMatchObject({ code: 'ENVIRONMENT_ERROR', status: 'failed', attempts: 1 });
    expect(doc.summary).toContain('coverage.keel-test.invalid');
    expect(doc.summary).toContain('not verified because of the environment');
    // kept on the branch, labelled, with the fix in it; no rollback, no attempt 2
    expect(git(repo, 'log', '-1', '--format=%s', doc.branch ?? '')).toMatch(
      /^keel \(UNVERIFIED: environment\)/,
    );
    expect(git(repo, 'show', `${doc.branch}:src/stats.js`)).toContain('/ values.length;');
    expect(modelPosts(server)).toBe(4);
  });
});

describe('keel fix: a suite that cannot be collected', () => {
  it('pytest with an ImportError while collecting exits 3 without calling the model', async () => {
    const repo = fixtureRepo('py-stats');
    const test = readFileSync(`${repo}/tests/test_stats.py`, 'utf8');
    writeFiles(repo, { 'tests/test_stats.py': test.replace('median, spread', 'median, spread, mode') });
    git(repo, 'commit', '-q', '-am', 'import mode');
    const server = await model([{ text: 'never asked' }]);
    const { run, doc } = await fix(repo, server, ['--issue', 'median is wrong']);

    expect(run.code, run.stderr).toBe(3);
    expect(doc).toMatchObject({ code: 'ENVIRONMENT_ERROR', status: 'failed', attempts: 0 });
    expect(doc.summary).toContain('cannot be collected');
    expect(doc.summary).toContain('tests/test_stats.py');
    expect(doc.summary).toContain("ImportError: cannot import name 'mode'");
    expect(modelPosts(server)).toBe(0);
    expect(leftovers(repo)).toEqual({ branches: [], worktrees: 0 });
  });

  it('a node test file that crashes before running a test exits 3 without calling the model', async () => {
    const repo = fixtureRepo('stats');
    const test = readFileSync(`${repo}/test/stats.test.js`, 'utf8');
    writeFiles(repo, {
      'test/stats.test.js': test.replace('largest, mean, sum', 'largest, mean, median, sum'),
    });
    git(repo, 'commit', '-q', '-am', 'import median');
    const server = await model([{ text: 'never asked' }]);
    const { run, doc } = await fix(repo, server, ['--issue', 'median is missing']);

    expect(run.code, run.stderr).toBe(3);
    expect(doc).toMatchObject({ code: 'ENVIRONMENT_ERROR', attempts: 0 });
    expect(doc.summary).toContain('test/stats.test.js could not be loaded');
    expect(modelPosts(server)).toBe(0);
  });

  it('with --target-test naming the file, the collection error is the bug and the model is called', async () => {
    const repo = fixtureRepo('py-stats');
    const test = readFileSync(`${repo}/tests/test_stats.py`, 'utf8');
    writeFiles(repo, { 'tests/test_stats.py': test.replace('median, spread', 'median, spread, mode') });
    git(repo, 'commit', '-q', '-am', 'import mode');
    const server = await model([
      ...planTurns('stats.py', '1. Add mode().'),
      ...editTurns(
        'stats.py',
        'def spread(values):',
        'def mode(values):\n    return max(set(values), key=values.count)\n\n\ndef spread(values):',
        'Added mode.',
      ),
    ]);
    const { doc } = await fix(repo, server, [
      '--issue',
      'mode is missing',
      '--target-test',
      'tests/test_stats.py',
      '--max-attempts',
      '1',
    ]);

    expect(doc.code).not.toBe('ENVIRONMENT_ERROR');
    expect(modelPosts(server)).toBeGreaterThan(0);
  });
});
