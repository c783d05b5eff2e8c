/**
 * The safety net's snapshot is taken in a worker thread as an acting session starts, so the first write
 * starts no git. What a user sees must not change: the snapshot is logged before the first write, undo
 * restores it, and a session that writes nothing leaves no ref or tag in their repository.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { git, gitRepo } from '../helpers/tmp.js';
import { keel, keelHome, lastSessionEvents, model, modelFlags } from './harness.js';

const keelRefs = (repo: string) =>
  git(repo, 'for-each-ref', '--format=%(refname)', 'refs/keel/', 'refs/tags/keel-pre/')
    .split('\n')
    .filter(Boolean);

/** The messages of every commit object in the repository, reachable or not. */
const snapshotCommits = (repo: string) =>
  git(repo, 'cat-file', '--batch-all-objects', '--batch-check=%(objectname) %(objecttype)')
    .split('\n')
    .filter((line) => line.endsWith(' commit'))
    .map((line) => git(repo, 'log', '-1', '--format=%s', line.split(' ')[0] ?? '').trim());

describe('the prepared safety net', () => {
  it('an edit session that only reads leaves no snapshot ref or tag behind', async () => {
    const repo = gitRepo({ 'app.js': 'const a = 1;\n' });
    const home = keelHome();
    const server = await model([
      { tool_calls: [{ name: 'read_file', arguments: { path: 'app.js' } }] },
      { text: 'it sets a to 1' },
    ]);
    const run = await keel(['edit', ...modelFlags(server), 'what does app.js do?'], { cwd: repo, home });
    expect(run.code).toBe(0);
    expect(keelRefs(repo)).toEqual([]);
    const events = lastSessionEvents(home);
    expect(events.some((e) => e.type === 'safety_net')).toBe(false);
    // the worker did take the snapshot as the session started (its commit is left for git's gc), then dropped its refs
    const session = events[0]?.session_id;
    expect(snapshotCommits(repo)).toContain(`keel: work tree before session ${session}`);
  });

  it('the first write logs the snapshot of the tree as the session started, and undo returns to it', async () => {
    const repo = gitRepo({ 'app.js': 'const a = 1;\n', '.gitignore': 'out/\n' });
    writeFileSync(join(repo, 'app.js'), 'const a = 2; // mine, uncommitted\n');
    writeFileSync(join(repo, 'notes.txt'), 'untracked notes\n');
    const home = keelHome();
    const server = await model([
      { tool_calls: [{ name: 'read_file', arguments: { path: 'app.js' } }] },
      {
        tool_calls: [
          { name: 'edit_file', arguments: { path: 'app.js', old_string: 'a = 2', new_string: 'a = 3' } },
          // an ignored file is not in the snapshot: it is copied before its first write instead
          { name: 'write_file', arguments: { path: 'out/build.txt', content: 'built\n' } },
        ],
      },
      { text: 'done' },
    ]);
    const run = await keel(['edit', ...modelFlags(server), 'bump a'], { cwd: repo, home });
    expect(run.code).toBe(0);
    const events = lastSessionEvents(home);
    const types = events.map((e) => e.type);
    const firstWrite = events.findIndex((e) => e.type === 'tool_start' && e.data.tool === 'edit_file');
    const nets = events.filter((e) => e.type === 'safety_net');
    // one git snapshot and one copy (the ignored file), both before the write they protect
    expect(nets.map((e) => e.data.kind)).toEqual(['git', 'copy']);
    expect(types.indexOf('safety_net')).toBeLessThan(firstWrite);
    const snapshot = nets[0]?.data as { ref: string; commit: string; tag: string };
    expect(keelRefs(repo)).toEqual([snapshot.ref, snapshot.tag].sort());
    expect(snapshot.tag).toMatch(/^refs\/keel\/pre\//);
    expect(git(repo, 'show', `${snapshot.commit}:app.js`)).toBe('const a = 2; // mine, uncommitted\n');
    expect(git(repo, 'show', `${snapshot.commit}:notes.txt`)).toBe('untracked notes\n');

    const undo = await keel(['undo', '--yes'], { cwd: repo, home });
    expect(undo.code).toBe(0);
    expect(readFileSync(join(repo, 'app.js'), 'utf8')).toBe('const a = 2; // mine, uncommitted\n');
    expect(readFileSync(join(repo, 'notes.txt'), 'utf8')).toBe('untracked notes\n');
  });
});
