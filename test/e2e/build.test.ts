/** `keel build` end to end: tests written first and frozen, failing on the baseline, then built and verified. */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { git } from '../helpers/tmp.js';
import {
  BUILD_TURNS,
  build,
  MEDIAN,
  MEDIAN_TEST,
  MEDIAN_TEST_SHA,
  SUM,
  TESTS_TURNS,
  tinyProject,
} from './build-harness.js';
import { branchCommits, leftovers, modelPosts } from './fix-harness.js';
import { keel, keelHome, model, modelFlags } from './harness.js';
import { Pane } from './pane.js';

describe('keel build', () => {
  it('writes the tests first, freezes them, then builds the feature until they pass', async () => {
    const repo = tinyProject();
    const server = await model([...TESTS_TURNS, ...BUILD_TURNS]);
    const { run, doc } = await build(repo, server, ['add a median function to src/stats.js']);
    expect(run.code, run.stderr).toBe(0);
    expect(doc).toMatchObject({ mode: 'build', code: 'COMPLETED', status: 'verified', attempts: 1 });
    expect(doc.tests_written).toEqual([{ path: 'test/median.test.js', sha256: MEDIAN_TEST_SHA }]);
    expect(doc.verification?.targetsPassing).toEqual(['test/median.test.js > median of 3, 1, 2 is 2']);
    // the frozen hashes are in the fix run's log, and the branch holds the tests, then the implementation
    expect(readFileSync(doc.trace ?? '', 'utf8')).toContain(MEDIAN_TEST_SHA);
    const branch = doc.branch ?? '';
    expect(branchCommits(repo, branch)).toHaveLength(2);
    expect(git(repo, 'show', `${branch}:test/median.test.js`)).toBe(MEDIAN_TEST);
    expect(git(repo, 'show', `${branch}:src/stats.js`)).toBe(SUM + MEDIAN);
    expect(leftovers(repo).worktrees).toBe(0);
    expect(run.stderr).toContain('approved and frozen');

    // without a terminal the tests cannot be approved: refused before any model call
    const quiet = await model([]);
    const home = keelHome();
    const refused = await keel(['build', '--repo', repo, ...modelFlags(quiet), 'add a mode function'], {
      cwd: home,
      home,
    });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('pass --yes');
    expect(modelPosts(quiet)).toBe(0);
  });

  it('"already exists": the new tests pass on the baseline, so nothing is built and no implementation is asked for', async () => {
    const repo = tinyProject(true);
    const server = await model([...TESTS_TURNS, { text: 'this turn must never be asked for' }]);
    const { run, doc } = await build(repo, server, ['add a median function']);
    expect(run.code, run.stderr).toBe(0);
    expect(doc).toMatchObject({ code: 'COMPLETED', status: 'already_exists', branch: null, commit: null });
    expect(doc.reason).toMatch(/^already exists/);
    expect(doc.tests_written).toEqual([{ path: 'test/median.test.js', sha256: MEDIAN_TEST_SHA }]);
    // only the test-writing session's two calls: no plan, no attempt
    expect(modelPosts(server)).toBe(2);
    expect(leftovers(repo)).toEqual({ branches: [], worktrees: 0 });
  });

  it('on a terminal the written tests are shown as a diff with a [y/N] question; no builds nothing', async () => {
    const repo = tinyProject();
    const home = keelHome();
    const server = await model([...TESTS_TURNS, { text: 'this turn must never be asked for' }]);
    const pane = Pane.start(['build', '--repo', repo, ...modelFlags(server), 'add a median function'], {
      cwd: repo,
      home,
    });
    await pane.waitFor('approve these tests? [y/N]');
    pane.type('n', 'Enter');
    await pane.waitFor(/keel exited \d+/);
    const screen = pane.history();
    expect(screen).toContain('keel asks: keel build test/median.test.js');
    expect(screen).toContain("+test('median of 3, 1, 2 is 2'");
    expect(screen).toContain('the tests were not approved; nothing built');
    expect(screen).toContain('[keel exited 130]');
    expect(modelPosts(server)).toBe(2);
    expect(leftovers(repo)).toEqual({ branches: [], worktrees: 0 });
  });
});
