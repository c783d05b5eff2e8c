/** Test helpers: real temporary workspaces and a ToolContext with a simple realpath scope check. */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { onTestFinished } from 'vitest';
import type { Access } from '../../src/policy/effects.js';
import { runCommand } from '../../src/policy/exec.js';
import { pinWorkspace } from '../../src/policy/git-runner.js';
import type { ToolContext } from '../../src/tools/types.js';

/** A fresh canonical temp folder, removed when the current test finishes. */
export function tempDir(prefix = 'keel-tools-'): string {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Write files (path -> content) under `root`, creating folders. */
export function writeFiles(root: string, files: Record<string, string | Buffer>): void {
  for (const [path, content] of Object.entries(files)) {
    const abs = join(root, path);
    mkdirSync(dirname(abs), { recursive: true });
    writeFileSync(abs, content);
  }
}

/** Run git in `cwd` with a clean git environment. */
export function git(cwd: string, ...args: string[]): string {
  const env = { ...process.env };
  delete env.GIT_DIR;
  delete env.GIT_INDEX_FILE;
  delete env.GIT_WORK_TREE;
  return execFileSync('git', args, { cwd, env, encoding: 'utf8' });
}

/** Canonicalize like the real scope: realpath of the longest existing prefix, the rest appended. */
function canonical(path: string): string {
  const pending: string[] = [];
  let current = path;
  for (;;) {
    try {
      return join(realpathSync(current), ...pending.reverse());
    } catch {
      pending.push(basename(current));
      current = dirname(current);
    }
  }
}

/** A ToolContext rooted at `root` whose resolve refuses anything outside it; exec is the real runner. */
export function testContext(root: string, opts: { exec?: boolean; signal?: AbortSignal } = {}): ToolContext {
  // as a session does at its start: the listing tools use the repository found now, or none
  pinWorkspace(root);
  const signal = opts.signal ?? new AbortController().signal;
  const ctx: ToolContext = {
    cwd: root,
    signal,
    resolve(path: string, access: Access): string {
      const abs = canonical(resolve(root, path));
      const rel = relative(root, abs);
      if (rel.startsWith('..') || resolve(root, rel) !== abs) {
        throw new Error(`${path} is outside the workspace (${access})`);
      }
      return abs;
    },
  };
  if (opts.exec !== false) {
    ctx.exec = (command, o) =>
      runCommand(
        { shell: command },
        { cwd: root, timeoutS: o.timeoutS, signal: o.signal, maxOutputBytes: 1 << 20 },
      );
  }
  return ctx;
}
