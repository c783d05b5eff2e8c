/**
 * A restarted keel serve removes the tests worktree and branch a killed build named in its record
 * (KEEL_HOME/builds/RUN.json). A tampered record must not turn that into deleting anything else: a folder
 * outside keel's worktrees folder (named directly or through `..`), a link inside it to the user's own
 * worktree, a worktree there of another repository, or the user's branch all stay, while each tampered
 * build is still listed as interrupted.
 */
import { existsSync, mkdirSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tinyProject } from '../e2e/build-harness.js';
import { keelHome, model, modelFlags } from '../e2e/harness.js';
import { startServe } from '../e2e/serve-harness.js';
import { git, gitRepo, tempDir, writeFiles } from '../helpers/tmp.js';

describe('keel serve: a tampered build record', () => {
  it('removes nothing the record names that is not a keel tests worktree of the project', async () => {
    const home = keelHome();
    const repo = tinyProject();
    const worktrees = join(home, 'worktrees');
    mkdirSync(worktrees, { recursive: true });
    // what must survive
    const victim = tempDir('keel-victim-');
    writeFiles(victim, { 'keep.txt': 'mine\n' });
    const nextToHome = join(home, 'victim');
    writeFiles(nextToHome, { 'keep.txt': 'mine\n' });
    const userTree = join(tempDir('keel-user-tree-'), 'tree');
    git(repo, 'worktree', 'add', '-q', '-b', 'keel/fix-tests-mine-aaaaaa', userTree);
    symlinkSync(userTree, join(worktrees, '20260101-000000-bbbbbb'));
    const other = gitRepo();
    const otherTree = join(worktrees, '20260101-000000-cccccc');
    git(other, 'worktree', 'add', '-q', '-b', 'keel/fix-tests-other-cccccc', otherTree);

    const named: Array<[string, string]> = [
      [victim, 'main'],
      [`${worktrees}/../victim`, 'keel/fix-tests-mine-aaaaaa'],
      [userTree, 'keel/fix-tests-mine-aaaaaa'],
      [join(worktrees, '20260101-000000-bbbbbb'), 'keel/fix-tests-mine-aaaaaa'],
      [otherTree, 'keel/fix-tests-other-cccccc'],
    ];
    mkdirSync(join(home, 'builds'), { recursive: true });
    const ids = named.map(([worktree, branch], i) => {
      const id = `20260101-00000${i}-dddddd`;
      const record = {
        run_id: id,
        project: realpathSync(repo),
        feature: 'tampered',
        started_at: `2026-01-01T00:00:0${i}.000Z`,
        phase: 'waiting',
        tests: [],
        tests_session: null,
        tests_snapshot: { worktree, branch },
        pid: 0,
      };
      writeFileSync(join(home, 'builds', `${id}.json`), JSON.stringify(record));
      return id;
    });

    const server = await model([]);
    const serve = await startServe({ cwd: repo, home, args: modelFlags(server) });
    const runs = (await serve.api('GET', '/v1/runs')).body.runs as Array<Record<string, unknown>>;
    await serve.stop();
    // every record was read (and found left over)...
    for (const id of ids) expect(runs.find((r) => r.run_id === id)).toMatchObject({ status: 'interrupted' });
    // ...and nothing it named went
    expect(existsSync(join(victim, 'keep.txt'))).toBe(true);
    expect(existsSync(join(nextToHome, 'keep.txt'))).toBe(true);
    expect(existsSync(join(userTree, 'src/stats.js'))).toBe(true);
    expect(existsSync(join(otherTree, 'README.md'))).toBe(true);
    expect(git(repo, 'worktree', 'list', '--porcelain')).toContain(`worktree ${realpathSync(userTree)}`);
    expect(git(repo, 'branch', '--list').split(/\s+/).filter(Boolean)).toEqual(
      expect.arrayContaining(['main', 'keel/fix-tests-mine-aaaaaa']),
    );
    expect(git(other, 'worktree', 'list')).toContain('keel/fix-tests-other-cccccc');
  }, 60_000);
});
