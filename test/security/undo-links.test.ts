/**
 * Finding 6: `keel undo` must never follow a link. A session's sandboxed shell swaps a folder for a symlink
 * to a folder outside the workspace; undo then restores and removes files "in" that folder. Through the
 * real binary, the real bwrap sandbox, and real folders.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { lstatSync, readdirSync, readFileSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { keel, keelHome, model, modelFlags } from '../e2e/harness.js';
import { git, gitRepo, tempDir, writeFiles } from '../helpers/tmp.js';

const BWRAP = (() => {
  try {
    execFileSync('sh', ['-c', 'command -v bwrap'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

/** Every file under `dir` (names, modes, contents): equal before and after means untouched. */
function hashTree(dir: string): string {
  const h = createHash('sha256');
  const walk = (rel: string) => {
    for (const name of readdirSync(join(dir, rel)).sort()) {
      const path = rel ? `${rel}/${name}` : name;
      const st = lstatSync(join(dir, path));
      h.update(`${path} ${st.mode}\n`);
      if (st.isDirectory()) walk(path);
      else if (st.isFile()) h.update(readFileSync(join(dir, path)));
    }
  };
  walk('');
  return h.digest('hex');
}

/** The outside folder the attack aims at: a file undo would overwrite, and one it would delete. */
function outsideDir(): string {
  const outside = tempDir('keel-outside-');
  writeFiles(outside, { 'a.txt': 'outside a\n', 'new.txt': 'outside new\n', 'keep.txt': 'keep\n' });
  return outside;
}

/** A session that edits src/a.txt, creates src/new.txt, then swaps src for a link to `outside`. */
async function attack(workspace: string, outside: string, home: string) {
  const server = await model([
    {
      tool_calls: [
        { name: 'write_file', arguments: { path: 'src/a.txt', content: 'session a\n' } },
        { name: 'write_file', arguments: { path: 'src/new.txt', content: 'session new\n' } },
      ],
    },
    { tool_calls: [{ name: 'shell', arguments: { command: `mv src src.old && ln -s ${outside} src` } }] },
    { text: 'done' },
  ]);
  const edit = await keel(['edit', '--json', ...modelFlags(server), 'edit src'], { cwd: workspace, home });
  expect(JSON.parse(edit.stdout)).toMatchObject({ code: 'COMPLETED', exit_code: 0 });
  // the swap happened: src now leads out of the workspace
  expect(lstatSync(join(workspace, 'src')).isSymbolicLink()).toBe(true);
}

describe.skipIf(!BWRAP)('undo never follows a link (finding 6)', () => {
  it('outside git: undo refuses, names the path, and leaves the outside folder byte-identical', async () => {
    const workspace = tempDir('keel-plain-');
    writeFiles(workspace, { 'src/a.txt': 'original a\n' });
    const outside = outsideDir();
    const before = hashTree(outside);
    const home = keelHome();
    await attack(workspace, outside, home);

    const undo = await keel(['undo', '--yes', '--json'], { cwd: workspace, home });
    expect(undo.code).toBe(1);
    const doc = JSON.parse(undo.stdout);
    expect(doc.exit_code).toBe(1);
    expect(doc.error).toContain(join(workspace, 'src'));
    expect(doc.error).toMatch(/symbolic link/);
    expect(hashTree(outside)).toBe(before);
    // the user's original is still where the session's shell moved it
    expect(readFileSync(join(workspace, 'src.old/a.txt'), 'utf8')).toBe('session a\n');
  });

  it('in git: undo refuses the swapped folder too, and nothing outside is touched', async () => {
    const repo = gitRepo({ 'src/a.txt': 'original a\n' });
    const outside = outsideDir();
    const before = hashTree(outside);
    const home = keelHome();
    await attack(repo, outside, home);

    const undo = await keel(['undo', '--yes', '--json'], { cwd: repo, home });
    expect(undo.code).toBe(1);
    expect(JSON.parse(undo.stdout).error).toMatch(/src is now a symbolic link/);
    expect(hashTree(outside)).toBe(before);
    // refused before any step: the link and the session's branch state are as the session left them
    expect(lstatSync(join(repo, 'src')).isSymbolicLink()).toBe(true);
    expect(git(repo, 'status', '--porcelain')).toContain('src');
  });

  it('the workspace root itself swapped for a link is refused as well', async () => {
    const parent = tempDir('keel-parent-');
    const workspace = join(parent, 'ws');
    writeFiles(workspace, { 'src/a.txt': 'original a\n' });
    const outside = outsideDir();
    writeFiles(outside, { 'src/a.txt': 'outside src a\n' });
    const before = hashTree(outside);
    const home = keelHome();
    const server = await model([
      { tool_calls: [{ name: 'write_file', arguments: { path: 'src/a.txt', content: 'session a\n' } }] },
      { text: 'done' },
    ]);
    const edit = await keel(['edit', '--json', ...modelFlags(server), 'edit'], { cwd: workspace, home });
    expect(JSON.parse(edit.stdout)).toMatchObject({ code: 'COMPLETED' });
    // someone (not the sandbox: it cannot reach the parent) moves the workspace and links it elsewhere
    execFileSync('mv', [workspace, `${workspace}.old`]);
    symlinkSync(outside, workspace);
    const id = JSON.parse(edit.stdout).session_id;
    const undo = await keel(['undo', id, '--yes', '--json'], { cwd: parent, home });
    expect(undo.code).toBe(1);
    expect(JSON.parse(undo.stdout).error).toMatch(/symbolic link/);
    expect(hashTree(outside)).toBe(before);
  });
});
