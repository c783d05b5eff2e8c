/** The gitignore-respecting file listing shared by list_dir, glob and grep. */
import type { Stats } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import { isAbsolute, join, relative } from 'node:path';
import type { Ignore } from 'ignore';
import { runGitAsync, workspaceRepo } from '../policy/git-runner.js';
import { ToolError } from './types.js';

/** How many files one listing may hold; beyond this the caller gets `truncated`. */
export const MAX_LISTED_FILES = 50_000;

// Never worth showing a model, whatever the ignore files say
const ALWAYS_SKIPPED = new Set(['.git', 'node_modules']);

export interface FileListing {
  /** Files (and symlinks) relative to the root, `/`-separated, sorted. */
  files: string[];
  /** Directories known to exist, relative, without a trailing `/`; parents of `files` are implied. */
  dirs: string[];
  /** True when the listing stopped at `maxFiles`. */
  truncated: boolean;
}

export interface ListOptions {
  signal?: AbortSignal;
  maxFiles?: number;
  /** Walk no deeper than this many levels below the root (only a hint: git lists everything). */
  maxDepth?: number;
}

/** List the files under `root` (a canonical directory) that git would not ignore. */
export async function listFiles(root: string, opts: ListOptions = {}): Promise<FileListing> {
  const maxFiles = opts.maxFiles ?? MAX_LISTED_FILES;
  const fromGit = await gitListing(root, maxFiles, opts.signal);
  // An empty answer from git can mean the directory itself is ignored; a model that asked for it
  // explicitly wants to see inside, so fall back to the walk (which still honours nested .gitignore)
  if (fromGit && (fromGit.files.length > 0 || fromGit.dirs.length > 0 || (await isEmptyDir(root)))) {
    return fromGit;
  }
  opts.signal?.throwIfAborted();
  return walk(root, maxFiles, opts.maxDepth ?? Number.POSITIVE_INFINITY, opts.signal);
}

/**
 * A matcher for a glob pattern against `/`-separated relative paths; a pattern without `/` matches names at
 * any depth. picomatch is loaded here, on a tool's first glob, not with every session's tools.
 */
export async function globMatcher(pattern: string): Promise<(path: string) => boolean> {
  const { default: picomatch } = await import('picomatch');
  const cleaned = pattern.replace(/^\.\//, '');
  // only for slash-free patterns: with `basename` set, picomatch fails patterns like `lib/*.ts`
  const isMatch = picomatch(cleaned, { dot: true, basename: !cleaned.includes('/') });
  // one argument only: picomatch's second parameter turns the boolean into a result object
  return (path) => isMatch(path);
}

/** The path to show the model: relative to the workspace when inside it, absolute otherwise. */
export function workspacePath(cwd: string, abs: string): string {
  const rel = relative(cwd, abs);
  if (rel === '') return '.';
  if (rel.startsWith('..') || isAbsolute(rel)) return abs;
  return rel;
}

function isSkipped(rel: string): boolean {
  return rel.split('/').some((part) => ALWAYS_SKIPPED.has(part));
}

// Listing output of a large repository; beyond this the listing is treated as truncated
const MAX_GIT_OUTPUT = 256 * 1024 * 1024;

/**
 * git's listing of `root`, run against the repository pinned for the session's workspace (never one found
 * by discovery from `root`, which could be a nested repository a model just made). Outside a repository,
 * or outside any pinned workspace, null: the caller walks the folder without running git at all.
 */
async function gitListing(root: string, maxFiles: number, signal?: AbortSignal): Promise<FileListing | null> {
  const repo = workspaceRepo(root);
  if (!repo) return null;
  const git = (args: string[]) =>
    runGitAsync(repo, root, ['ls-files', ...args, '-z'], {
      signal: signal ?? new AbortController().signal,
      maxOutputBytes: MAX_GIT_OUTPUT,
    });
  const [all, del] = await Promise.all([
    git(['--cached', '--others', '--exclude-standard']),
    git(['--deleted']),
  ]).catch(() => [undefined, undefined]);
  signal?.throwIfAborted();
  // git missing, or failing: the walk still answers
  if (!all || !del || all.exitCode !== 0 || del.exitCode !== 0 || all.truncated || del.truncated) return null;
  const listed = all.stdout;
  const deleted = del.stdout;
  const gone = new Set(deleted.split('\0'));
  const files = new Set<string>();
  const dirs: string[] = [];
  let truncated = false;
  for (const entry of listed.split('\0')) {
    if (entry === '' || gone.has(entry) || isSkipped(entry)) continue;
    // a nested repository shows up as one untracked directory entry (`./` when it is the root itself)
    if (entry === './') continue;
    if (entry.endsWith('/')) {
      dirs.push(entry.slice(0, -1));
      continue;
    }
    if (files.size >= maxFiles) {
      truncated = true;
      break;
    }
    files.add(entry);
  }
  return { files: [...files].sort(), dirs: dirs.sort(), truncated };
}

async function isEmptyDir(dir: string): Promise<boolean> {
  const entries = await readdir(dir).catch(() => []);
  return entries.every((name) => ALWAYS_SKIPPED.has(name));
}

interface IgnoreRule {
  /** The directory holding the .gitignore, relative to the walk root ('' for the root). */
  base: string;
  rules: Ignore;
}

function isIgnored(stack: IgnoreRule[], rel: string, isDir: boolean): boolean {
  return stack.some(({ base, rules }) => {
    const local = base === '' ? rel : rel.slice(base.length + 1);
    return rules.ignores(isDir ? `${local}/` : local);
  });
}

async function walk(
  root: string,
  maxFiles: number,
  maxDepth: number,
  signal?: AbortSignal,
): Promise<FileListing> {
  const files: string[] = [];
  const dirs: string[] = [];
  let truncated = false;
  // loaded here, on the first walk outside git, not with every session's tools
  const { default: ignore } = await import('ignore');

  const visit = async (rel: string, depth: number, inherited: IgnoreRule[]): Promise<void> => {
    signal?.throwIfAborted();
    const abs = rel === '' ? root : join(root, rel);
    const gitignore = await readFile(join(abs, '.gitignore'), 'utf8').catch(() => null);
    const stack =
      gitignore === null ? inherited : [...inherited, { base: rel, rules: ignore().add(gitignore) }];
    // an unreadable directory is skipped rather than failing the whole listing
    const entries = await readdir(abs, { withFileTypes: true }).catch(() => []);
    entries.sort((a, b) => (a.name < b.name ? -1 : 1));
    for (const entry of entries) {
      if (ALWAYS_SKIPPED.has(entry.name)) continue;
      if (files.length >= maxFiles) {
        truncated = true;
        return;
      }
      const child = rel === '' ? entry.name : `${rel}/${entry.name}`;
      // symlinked directories are listed but not followed, so a link cycle cannot trap the walk
      const isDir = entry.isDirectory();
      if (isIgnored(stack, child, isDir)) continue;
      if (isDir) {
        dirs.push(child);
        if (depth < maxDepth) await visit(child, depth + 1, stack);
      } else {
        files.push(child);
      }
    }
  };

  await visit('', 1, []);
  return { files: files.sort(), dirs: dirs.sort(), truncated };
}

/** stat a resolved path; a missing one is a ToolError naming the path as the model wrote it, with a hint. */
export async function statExisting(abs: string, shown: string, hint = ''): Promise<Stats> {
  try {
    return await stat(abs);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
      throw new ToolError(`${shown} does not exist${hint ? `; ${hint}` : ''}`);
    }
    throw err;
  }
}
