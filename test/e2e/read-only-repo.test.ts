/**
 * Issue 25, item 21: a repository keel cannot write is said as a keel error that names the folder,
 * before any model request, not as a failed git command after a round. The repository is mounted
 * read-only for keel alone (bwrap), as a read-only mount or another user's checkout would be.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { gitRepo } from '../helpers/tmp.js';
import { baseEnv, chatBodies, KEEL_BIN, keelHome, model, modelFlags } from './harness.js';

/** The real binary with `readOnly` mounted read-only in its view of the machine. */
function keelReadOnly(
  readOnly: string,
  args: string[],
  opts: { cwd: string; home: string },
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      'bwrap',
      ['--dev-bind', '/', '/', '--ro-bind', readOnly, readOnly, process.execPath, KEEL_BIN, ...args],
      { cwd: opts.cwd, env: baseEnv(opts.home) },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end();
  });
}

const WRITE = [
  { tool_calls: [{ name: 'write_file', arguments: { path: 'a.txt', content: 'two\n' } }] },
  { text: 'done' },
];

describe('a read-only repository', () => {
  it('edit says which folder cannot be written, before any request; ask still reads it', async () => {
    const repo = gitRepo({ 'a.txt': 'one\n' });
    const home = keelHome();
    const server = await model(WRITE);
    const edit = await keelReadOnly(repo, ['edit', ...modelFlags(server), 'change it'], { cwd: repo, home });
    expect(edit.code).toBe(3);
    expect(edit.stderr).toBe(
      `keel: this repository cannot be changed: ${repo} is on a read-only file system. keel edit writes files in ${repo} and keeps its safety net in the repository's git folder; make them writable, or read it with keel ask\n`,
    );
    expect(chatBodies(server)).toHaveLength(0);

    const json = await keelReadOnly(repo, ['edit', '--json', ...modelFlags(server), 'change it'], {
      cwd: repo,
      home,
    });
    expect(JSON.parse(json.stdout)).toMatchObject({
      code: 'ENVIRONMENT_ERROR',
      exit_code: 3,
      error: expect.stringContaining(`${repo} is on a read-only file system`),
    });

    const ask = await keelReadOnly(
      repo,
      ['ask', ...modelFlags(await model([{ text: 'it says one' }])), 'what'],
      {
        cwd: repo,
        home,
      },
    );
    expect(ask.code, ask.stderr).toBe(0);
    expect(ask.stdout).toBe('it says one\n');
  });

  it('only .git read-only: edit and fix name the git folder', async () => {
    const repo = gitRepo({ 'a.txt': 'one\n' });
    const home = keelHome();
    const gitDir = join(repo, '.git');
    const server = await model(WRITE);
    const edit = await keelReadOnly(gitDir, ['edit', ...modelFlags(server), 'change it'], {
      cwd: repo,
      home,
    });
    expect(edit.code).toBe(3);
    expect(edit.stderr).toContain(
      `keel: this repository cannot be changed: ${gitDir} is on a read-only file system.`,
    );
    expect(edit.stderr).not.toContain('git commit-tree');
    expect(chatBodies(server)).toHaveLength(0);

    const fix = await keelReadOnly(
      gitDir,
      ['fix', ...modelFlags(server), '--test-command', 'true', '--issue', 'a.txt says one'],
      { cwd: repo, home },
    );
    expect(fix.code).toBe(3);
    expect(fix.stderr).toContain(
      `keel fix: this repository cannot take a fix branch: ${gitDir} is on a read-only file system.`,
    );
    expect(fix.stderr).not.toMatch(/git (worktree|branch|commit)/);
  });
});
