/**
 * Diffs for a person: `git diff` of a file a write touched (or of the whole workspace for /diff),
 * run through keel's one hardened git runner, and coloured line by line after it is made inert.
 */
import { lstatSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { GitError, pinWorkspace, repoAt, runGit } from '../policy/git-runner.js';
import { inertLine } from '../term/inert.js';
import type { Style } from './style.js';

const MAX_BYTES = 256 * 1024;

function gitText(root: string, args: string[]): string | undefined {
  pinWorkspace(root);
  const repo = repoAt(root);
  if (!repo) return undefined;
  try {
    return runGit(repo, root, args).toString('utf8');
  } catch (err) {
    if (err instanceof GitError) return undefined;
    throw err;
  }
}

/** The diff of one file against the index (a new, untracked file: its content as added lines). */
export function fileDiff(root: string, path: string): string[] {
  const text = gitText(root, ['diff', '--no-color', '--no-ext-diff', '--', path]);
  if (text) return text.slice(0, MAX_BYTES).split('\n').filter(Boolean);
  const tracked = gitText(root, ['ls-files', '--', path]);
  if (tracked?.trim()) return [];
  try {
    const full = join(root, path);
    // a link is shown as a link, never followed out of the workspace
    if (!lstatSync(full).isFile()) return [];
    const content = readFileSync(full, 'utf8').slice(0, MAX_BYTES);
    return [
      `+++ ${path} (new file)`,
      ...content
        .replace(/\n$/, '')
        .split('\n')
        .map((l) => `+${l}`),
    ];
  } catch {
    return [];
  }
}

/** `git diff` of the whole workspace: what changed since the last commit (staged and not). */
export function workspaceDiff(root: string): string[] | undefined {
  const text = gitText(root, ['diff', 'HEAD', '--no-color', '--no-ext-diff', '--stat', '--patch']);
  if (text === undefined) return undefined;
  return text.slice(0, MAX_BYTES).split('\n').filter(Boolean);
}

/** Colour diff lines (each made inert first): additions green, removals red, hunks cyan. */
export function colorDiff(lines: string[], style: Style): string[] {
  return lines.map((raw) => {
    const line = inertLine(raw.replace(/\t/g, '    '));
    if (line.startsWith('+++') || line.startsWith('---')) return style.bold(line);
    if (line.startsWith('+')) return style.green(line);
    if (line.startsWith('-')) return style.red(line);
    if (line.startsWith('@@')) return style.cyan(line);
    return style.dim(line);
  });
}
