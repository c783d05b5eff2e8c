/**
 * A "fix" that weakens the failing tests instead of fixing the code is never verified: the verdict runs
 * the repository's tests as they were at baseline. Each attack goes through the real binary, the real
 * sandbox and a scripted model.
 */
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ScriptTurn } from '../../src/model/script.js';
import { editTurns, fix, fixtureRepo, planTurns } from '../e2e/fix-harness.js';
import { model } from '../e2e/harness.js';
import { git, tempDir, writeFiles } from '../helpers/tmp.js';

const NODE_TEST = 'test/stats.test.js';
const NODE_FAILING = "test('mean of 2, 4, 6 is 4', () => {\n  assert.equal(mean([2, 4, 6]), 4);";
const NODE_PLAN = planTurns('src/stats.js', '1. Make the failing test pass.');
const PY_TEST = 'tests/test_stats.py';
const PY_PLAN = planTurns('stats.py', '1. Make the failing test pass.');

/** Run one weakening attempt and check it is refused, naming the edited tests in pr.md and rationale.md. */
async function refused(repo: string, turns: ScriptTurn[], edited: string[]): Promise<string> {
  const server = await model(turns);
  const { run, doc } = await fix(repo, server, ['--issue', 'a test fails', '--max-attempts', '1']);
  expect(run.code, run.stderr).toBe(1);
  expect(doc).toMatchObject({ code: 'VERIFICATION_FAILED', status: 'failed' });
  expect(doc.verification).toMatchObject({ testEdits: edited, testEditsCounted: false });
  for (const file of [doc.pr_description, doc.rationale]) {
    const text = readFileSync(file ?? '', 'utf8');
    for (const path of edited) expect(text).toContain(`\`${path}\``);
    expect(text).toContain('do not count');
  }
  // the attempt kept on the branch is what the model wrote, not the baseline's tests put back
  return git(repo, 'show', `${doc.branch}:${edited[0]}`);
}

describe('keel fix: weakened tests are not verified (node --test)', () => {
  it('`return;` at the top of the failing test: VERIFICATION_FAILED, exit 1', async () => {
    const kept = await refused(
      fixtureRepo('stats'),
      [
        ...NODE_PLAN,
        ...editTurns(NODE_TEST, NODE_FAILING, NODE_FAILING.replace('{\n', '{\n  return;\n'), 'Fixed.'),
      ],
      [NODE_TEST],
    );
    expect(kept).toContain('  return;\n');
  });

  it('the failing assertion replaced with assert.ok: VERIFICATION_FAILED, exit 1', async () => {
    const kept = await refused(
      fixtureRepo('stats'),
      [
        ...NODE_PLAN,
        ...editTurns(NODE_TEST, 'assert.equal(mean([2, 4, 6]), 4);', 'assert.ok(mean([2, 4, 6]));', 'Fixed.'),
      ],
      [NODE_TEST],
    );
    expect(kept).toContain('assert.ok(mean([2, 4, 6]))');
  });

  it('--allow-test-edits lets the edit count, and the output says so plainly', async () => {
    const repo = fixtureRepo('stats');
    const server = await model([
      ...NODE_PLAN,
      ...editTurns(NODE_TEST, 'assert.equal(mean([2, 4, 6]), 4);', 'assert.ok(mean([2, 4, 6]));', 'Fixed.'),
    ]);
    const { run, doc } = await fix(repo, server, ['--issue', 'the test is wrong', '--allow-test-edits']);
    expect(run.code, run.stderr).toBe(0);
    expect(doc).toMatchObject({ status: 'verified' });
    expect(doc.verification).toMatchObject({ testEdits: [NODE_TEST], testEditsCounted: true });
    expect(doc.summary).toContain('--allow-test-edits');
    expect(readFileSync(doc.pr_description ?? '', 'utf8')).toContain(
      '--allow-test-edits let those edits count',
    );
  });

  it('a test folder swapped for a link is refused, and nothing is written through the link', async () => {
    const repo = fixtureRepo('stats');
    const outside = join(tempDir('keel-outside-'), 'tests');
    mkdirSync(outside);
    const server = await model([
      ...NODE_PLAN,
      { tool_calls: [{ name: 'shell', arguments: { command: `rm -rf test && ln -s ${outside} test` } }] },
      { text: 'Fixed.' },
    ]);
    const { run, doc } = await fix(repo, server, ['--issue', 'a test fails', '--max-attempts', '1']);
    expect(run.code, run.stderr).toBe(1);
    expect(doc).toMatchObject({ code: 'VERIFICATION_FAILED', status: 'failed' });
    expect(doc.verification?.reason).toContain('replaced by a link');
    expect(existsSync(join(outside, 'stats.test.js'))).toBe(false);
  });
  it('a preload the test command loads (node --import) patched to make assert pass: refused', async () => {
    const repo = fixtureRepo('stats');
    writeFiles(repo, {
      'package.json': `${JSON.stringify({ name: 'p', type: 'module', scripts: { test: 'node --import ./support/setup.js --test' } })}\n`,
      'support/setup.js': "process.env.TZ = 'UTC';\n",
    });
    git(repo, 'add', '-A');
    git(repo, 'commit', '-qm', 'a preload for the tests');
    const kept = await refused(
      repo,
      [
        ...NODE_PLAN,
        ...editTurns(
          'support/setup.js',
          "process.env.TZ = 'UTC';\n",
          "import assert from 'node:assert/strict';\nassert.equal = () => {};\n",
          'Fixed.',
        ),
      ],
      ['support/setup.js'],
    );
    expect(kept).toContain('assert.equal = () => {}');
  });
});

describe('keel fix: weakened tests are not verified (pytest)', () => {
  it('the failing assertion weakened: VERIFICATION_FAILED, exit 1', async () => {
    const kept = await refused(
      fixtureRepo('py-stats'),
      [
        ...PY_PLAN,
        ...editTurns(
          PY_TEST,
          'assert median([4, 1, 3, 2]) == 2.5',
          'assert median([4, 1, 3, 2]) is not None',
          'Fixed.',
        ),
      ],
      [PY_TEST],
    );
    expect(kept).toContain('is not None');
  });

  it('a new conftest.py that patches the code only under test is set aside', async () => {
    const conftest = [
      'import stats',
      '',
      'def _median(values):',
      '    ordered = sorted(values)',
      '    middle = len(ordered) // 2',
      '    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2',
      '',
      'stats.median = _median',
      '',
    ].join('\n');
    const repo = fixtureRepo('py-stats');
    const server = await model([
      ...PY_PLAN,
      { tool_calls: [{ name: 'write_file', arguments: { path: 'conftest.py', content: conftest } }] },
      { text: 'Fixed.' },
    ]);
    const { run, doc } = await fix(repo, server, ['--issue', 'median is wrong', '--max-attempts', '1']);
    expect(run.code, run.stderr).toBe(1);
    expect(doc).toMatchObject({ code: 'VERIFICATION_FAILED' });
    expect(doc.verification).toMatchObject({ testEdits: ['conftest.py'], testEditsCounted: false });
    expect(doc.verification?.targetsFailing).toEqual([`${PY_TEST} > test_median_of_even_count`]);
  });
});
