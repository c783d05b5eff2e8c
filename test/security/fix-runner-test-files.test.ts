/**
 * Test files are whatever the runner loads as tests, not a list of folder names: a "fix" that weakens
 * ava's root `test.js` (its default, with no folder to recognise), or a file `ava.files` names, is set
 * aside and never verified. Real ava, the real sandbox and the real binary, against a scripted model.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { editTurns, fix, planTurns } from '../e2e/fix-harness.js';
import { installedModules, installInto } from '../e2e/fix-runners-harness.js';
import { model } from '../e2e/harness.js';
import { git, gitRepo } from '../helpers/tmp.js';

const FIXTURE = join(import.meta.dirname, '../fixtures/fix/ava');
const STATS = readFileSync(join(FIXTURE, 'src/stats.js'), 'utf8');
const TESTS = readFileSync(join(FIXTURE, 'test/stats.test.js'), 'utf8');
const PACKAGE = JSON.parse(readFileSync(join(FIXTURE, 'package.json'), 'utf8')) as Record<string, unknown>;

/** The ava fixture with its tests in `path` (importing the code from there), and `ava` config. */
function avaRepo(modules: string, path: string, ava: Record<string, unknown>): string {
  const depth = path.split('/').length - 1;
  const up = depth === 0 ? './' : '../'.repeat(depth);
  const repo = gitRepo({
    '.gitignore': 'node_modules/\n',
    'package.json': `${JSON.stringify({ ...PACKAGE, ava: { ...ava, cache: false } }, null, 2)}\n`,
    'src/stats.js': STATS,
    [path]: TESTS.replace("'../src/stats.js'", `'${up}src/stats.js'`),
  });
  installInto(repo, modules);
  return repo;
}

async function weakened(repo: string, path: string): Promise<void> {
  const server = await model([
    ...planTurns('src/stats.js', '1. Make the failing test pass.'),
    ...editTurns(path, 't.is(mean([2, 4, 6]), 4);', 't.pass();', 'Fixed.'),
  ]);
  const { run, doc } = await fix(repo, server, ['--issue', 'mean is off by one', '--max-attempts', '1']);
  expect(run.code, run.stderr).toBe(1);
  expect(doc).toMatchObject({ code: 'VERIFICATION_FAILED', status: 'failed' });
  expect(doc.verification).toMatchObject({
    testEdits: [path],
    testEditsCounted: false,
    targetsFailing: ['mean of 2, 4, 6 is 4'],
  });
  expect(readFileSync(doc.pr_description ?? '', 'utf8')).toContain(`\`${path}\``);
  // the weakened file is kept on the branch as the model wrote it, labelled unverified
  expect(git(repo, 'show', `${doc.branch}:${path}`)).toContain('t.pass();');
}

describe('keel fix: the files a runner loads as tests are protected, wherever they are', () => {
  let modules = '';
  beforeAll(() => {
    modules = installedModules(['ava']);
  });

  it("ava's default root test.js weakened with t.pass(): set aside, not verified", async () => {
    await weakened(avaRepo(modules, 'test.js', {}), 'test.js');
  });

  it('a file that ava.files names (checks/*.js) weakened: set aside, not verified', async () => {
    await weakened(avaRepo(modules, 'checks/mean.js', { files: ['checks/*.js'] }), 'checks/mean.js');
  });
});

describe('keel fix: a doctest is a test, inside the code it documents', () => {
  it("an attempt that rewrites a doctest's expected output to match the bug: set aside, not verified", async () => {
    const repo = gitRepo({
      'tox.ini': '[pytest]\naddopts = --doctest-modules\n',
      'inflection/__init__.py': [
        'def camelize(word):',
        '    """Turn snake_case into CamelCase.',
        '',
        "    >>> camelize('device_type')",
        "    'DeviceType'",
        '    """',
        "    return ''.join(part.capitalize() for part in word.split('-'))",
        '',
      ].join('\n'),
    });
    const server = await model([
      ...planTurns('inflection/__init__.py', '1. Make the doctest pass.'),
      ...editTurns('inflection/__init__.py', "    'DeviceType'", "    'Device_type'", 'Fixed.'),
    ]);
    const { run, doc } = await fix(repo, server, ['--issue', 'camelize is wrong', '--max-attempts', '1']);
    expect(run.code, run.stderr).toBe(1);
    expect(doc).toMatchObject({ code: 'VERIFICATION_FAILED', status: 'failed' });
    expect(doc.verification).toMatchObject({
      testEdits: ['inflection/__init__.py'],
      testEditsCounted: false,
      targetsFailing: ['inflection/__init__.py > inflection.camelize'],
    });
  });
});
