/** `keel fix` end to end: when there is nothing to fix, when the tests cannot run, installed deps, pytest. */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { git, tempDir, writeFiles } from '../helpers/tmp.js';
import {
  branchCommits,
  dirtyCheckout,
  editTurns,
  fix,
  fixtureRepo,
  leftovers,
  modelPosts,
  planTurns,
  reportFilesExist,
} from './fix-harness.js';
import { chatBodies, keel, keelHome, model, modelFlags, requestMessages } from './harness.js';

describe('keel fix: nothing to fix, or no way to tell', () => {
  it('a target that already passes exits 0 without calling the model, and says why', async () => {
    const repo = fixtureRepo('stats');
    dirtyCheckout(repo, 'src/stats.js');
    const server = await model([{ text: 'never asked' }]);
    const { run, doc } = await fix(repo, server, [
      '--issue',
      'sum looks off',
      '--target-test',
      'sum adds the values',
    ]);

    expect(run.code, run.stderr).toBe(0);
    expect(doc).toMatchObject({ code: 'COMPLETED', status: 'verified', attempts: 0, files_changed: [] });
    expect(doc.summary).toContain('already passes');
    expect(doc.summary).toContain('test/stats.test.js > sum adds the values');
    expect(doc.summary).toContain('no model called');
    expect(modelPosts(server)).toBe(0);
    // nothing was tried, so nothing is left behind: no empty branch, no worktree
    expect(doc.branch).toBeNull();
    expect(leftovers(repo)).toEqual({ branches: [], worktrees: 0 });
  });

  it('a --target-test that matches nothing exits 2 with the close candidates', async () => {
    const repo = fixtureRepo('stats');
    const server = await model([{ text: 'never asked' }]);
    const { run, doc } = await fix(repo, server, [
      '--issue',
      'mean is wrong',
      '--target-test',
      'maen of 2, 4, 6 is 4',
    ]);

    expect(run.code).toBe(2);
    expect(doc).toMatchObject({ code: 'CONFIG_ERROR', status: 'failed' });
    expect(doc.summary).toContain('"maen of 2, 4, 6 is 4"');
    expect(doc.summary).toContain('close: "test/stats.test.js > mean of 2, 4, 6 is 4"');
    expect(modelPosts(server)).toBe(0);
    expect(leftovers(repo)).toEqual({ branches: [], worktrees: 0 });
  });

  it('tests that cannot run exit 3, naming what is missing and suggesting --test-command', async () => {
    const repo = fixtureRepo('missing-dep');
    dirtyCheckout(repo, 'index.js');
    const server = await model([{ text: 'never asked' }]);
    const { run, doc } = await fix(repo, server, ['--issue', 'label is too short']);

    expect(run.code).toBe(3);
    expect(doc).toMatchObject({ code: 'ENVIRONMENT_ERROR', status: 'failed', attempts: 0 });
    expect(doc.summary).toContain('keel-fixture-pad');
    expect(doc.summary).toContain('--test-command');
    expect(modelPosts(server)).toBe(0);
    expect(leftovers(repo)).toEqual({ branches: [], worktrees: 0 });
  });
});

describe('keel fix: what an interrupted or impossible run leaves', () => {
  it.each(['SIGINT', 'SIGTERM'] as const)(
    '%s during an attempt exits 130 and leaves no branch, no worktree, and no "attempt is kept"',
    async (signal) => {
      const repo = fixtureRepo('stats');
      const home = keelHome();
      // the plan, then an attempt whose model never answers
      const server = await model([
        ...planTurns('src/stats.js', '1. Divide by the length.'),
        { hang: true, text: 'never sent' },
      ]);
      const run = await keel(['fix', '--repo', repo, ...modelFlags(server), '--issue', 'mean is wrong'], {
        cwd: home,
        home,
        timeoutMs: 25_000,
        onSpawn: (child) => {
          const poll = setInterval(() => {
            if (chatBodies(server).length < 3) return;
            clearInterval(poll);
            child.kill(signal);
          }, 50);
          child.on('close', () => clearInterval(poll));
        },
      });

      expect(run.code, run.stderr).toBe(130);
      expect(run.stdout).toContain('NOT VERIFIED (CANCELLED)');
      expect(run.stdout).not.toContain('kept');
      expect(run.stdout).not.toContain('branch:');
      expect(leftovers(repo)).toEqual({ branches: [], worktrees: 0 });
      expect(readdirSync(join(home, 'worktrees'))).toEqual([]);
    },
  );

  it('Ctrl+C during the baseline exits 130 without calling the model, and leaves nothing', async () => {
    const repo = fixtureRepo('stats');
    const home = keelHome();
    const server = await model([{ text: 'never asked' }]);
    const args = ['fix', '--repo', repo, ...modelFlags(server), '--issue', 'x', '--test-command', 'sleep 30'];
    const run = await keel(args, {
      cwd: home,
      home,
      onSpawn: (child) => {
        child.stderr?.on('data', (d: Buffer) => {
          if (d.toString().includes('baseline: running')) setTimeout(() => child.kill('SIGINT'), 300);
        });
      },
    });
    expect(run.code, run.stderr).toBe(130);
    expect(run.stdout).toContain('NOT VERIFIED (CANCELLED): interrupted while running the baseline');
    expect(modelPosts(server)).toBe(0);
    expect(leftovers(repo)).toEqual({ branches: [], worktrees: 0 });
  });

  it('a repository with no commits is one line, exit 3, and the run ends with its code', async () => {
    const repo = tempDir('keel-empty-');
    git(repo, 'init', '-q', '-b', 'main');
    writeFiles(repo, { 'package.json': '{"scripts":{"test":"node --test"}}\n' });
    const home = keelHome();
    const server = await model([{ text: 'never asked' }]);
    const run = await keel(['fix', '--repo', repo, ...modelFlags(server), '--issue', 'x'], {
      cwd: home,
      home,
    });

    expect(run.code).toBe(3);
    expect(run.stderr).not.toMatch(/^\s+at /m);
    expect(run.stdout).toContain(`NOT VERIFIED (ENVIRONMENT_ERROR): ${repo} has no commits yet`);
    expect(modelPosts(server)).toBe(0);
    const json = await keel(['fix', '--repo', repo, ...modelFlags(server), '--issue', 'x', '--json'], {
      cwd: home,
      home,
    });
    expect(json.code).toBe(3);
    const doc = JSON.parse(json.stdout);
    expect(doc).toMatchObject({ code: 'ENVIRONMENT_ERROR', exit_code: 3, status: 'failed' });
    expect(doc.error).toContain('has no commits yet');
    const listed = JSON.parse((await keel(['sessions', 'list', '--json'], { cwd: home, home })).stdout)
      .sessions as Array<{ mode: string; state: string }>;
    expect(listed.filter((s) => s.mode === 'fix').map((s) => s.state)).toEqual([
      'ENVIRONMENT_ERROR',
      'ENVIRONMENT_ERROR',
    ]);
    expect(existsSync(join(home, 'worktrees'))).toBe(true);
    expect(readdirSync(join(home, 'worktrees'))).toEqual([]);
  });
});

describe('keel fix: real projects', () => {
  it('without per-test results a failing suite is the target, judged by its exit code', async () => {
    const repo = fixtureRepo('stats');
    const server = await model([
      ...planTurns('src/stats.js', '1. Divide by values.length.'),
      ...editTurns(
        'src/stats.js',
        '  return sum(values) / (values.length + 1);',
        '  return sum(values) / values.length;',
        'mean divided by one too many.',
      ),
    ]);
    // node runs a node:test file directly too, but keel does not know the runner: exit code only
    const { run, doc } = await fix(repo, server, [
      '--issue',
      'mean is wrong',
      '--test-command',
      'node test/stats.test.js',
    ]);

    expect(run.code, run.stderr).toBe(0);
    expect(doc).toMatchObject({ status: 'verified', attempts: 1, files_changed: ['src/stats.js'] });
    expect(doc.verification).toMatchObject({ status: 'verified', mode: 'exit-code' });
    expect(doc.summary).toContain('exit code');
    const plan = requestMessages(chatBodies(server)[0]).findLast((m) => m.role === 'user')?.content ?? '';
    expect(plan).toContain('the whole suite: `node test/stats.test.js` exits 1 and must exit 0');
  });

  it('installed, untracked node_modules are linked into the snapshot, and the fix verifies there', async () => {
    const repo = fixtureRepo('local-dep');
    // installed by the user, ignored by git: the snapshot has no copy of its own
    writeFiles(repo, {
      'node_modules/shout/package.json': '{ "name": "shout", "type": "module", "main": "index.js" }\n',
      'node_modules/shout/index.js': 'export const shout = (text) => text.toUpperCase();\n',
    });
    const server = await model([
      ...planTurns('src/banner.js', '1. Close the banner with a bar.'),
      ...editTurns('src/banner.js', '} `;', '} |`;', 'The banner lacked its closing bar.'),
    ]);
    const { run, doc } = await fix(repo, server, ['--issue', 'the banner has no closing bar']);

    expect(run.code, run.stderr).toBe(0);
    expect(doc).toMatchObject({ status: 'verified', attempts: 1, files_changed: ['src/banner.js'] });
    expect(doc.snapshot?.linked).toContain('node_modules');
    expect(doc.verification?.targetsPassing).toEqual([
      'test/banner.test.js > banner shouts the title between bars',
    ]);
    // the link is scaffolding: it is not part of the fix
    expect(git(repo, 'show', '--name-only', '--format=', doc.branch ?? '').trim()).toBe('src/banner.js');
    expect(readFileSync(doc.diff ?? '', 'utf8')).not.toContain('node_modules');
  });

  it('a pytest project is fixed and verified, with ids like tests/test_x.py > test_name', async () => {
    const repo = fixtureRepo('py-stats');
    dirtyCheckout(repo, 'stats.py');
    const server = await model([
      ...planTurns('stats.py', '1. For an even count, average the two middle values.'),
      ...editTurns(
        'stats.py',
        '        return ordered[middle]\n    return ordered[middle]\n',
        '        return ordered[middle]\n    return (ordered[middle - 1] + ordered[middle]) / 2\n',
        'median returned the upper middle value for even counts; it now averages the two.',
      ),
    ]);
    const { run, doc } = await fix(repo, server, ['--issue', 'median of [1, 2, 3, 4] should be 2.5']);

    expect(run.code, run.stderr).toBe(0);
    expect(doc).toMatchObject({ status: 'verified', attempts: 1, files_changed: ['stats.py'] });
    expect(doc.test_command).toContain('pytest');
    expect(doc.verification).toMatchObject({
      mode: 'per-test',
      targetsPassing: ['tests/test_stats.py > test_median_of_even_count'],
      regressions: [],
    });
    expect(branchCommits(repo, doc.branch ?? '')).toEqual([doc.commit]);
    // the fixture ignores nothing: the bytecode pytest leaves behind is still no part of the fix
    expect(git(repo, 'show', '--name-only', '--format=', doc.branch ?? '').trim()).toBe('stats.py');
    expect(reportFilesExist(doc)).toBe(true);
  });
});
