/** Find credentials in text and in a git repository's staged or tracked files, without ever echoing them. */
import { lstatSync, readFileSync } from 'node:fs';
import { basename, isAbsolute, join, relative, resolve } from 'node:path';
import { discoverRepo, GitError, type Repo, runGit } from './git-runner.js';
import { RULES, type RuleId } from './secret-rules.js';

export type { RuleId } from './secret-rules.js';

/** One suspected secret; `preview` is redacted, the secret itself is never kept. */
export interface Finding {
  file: string;
  /** 1-based. */
  line: number;
  /** 1-based, where the secret starts. */
  column: number;
  rule: RuleId;
  preview: string;
}

/** Why a repository could not be scanned: not a repository at all, or git itself failed. */
export class ScanError extends Error {
  constructor(
    readonly code: 'NOT_A_REPO' | 'GIT_FAILED',
    message: string,
  ) {
    super(message);
    this.name = 'ScanError';
  }
}

/** Files larger than this are data, not configuration; scanning them costs more than it finds. */
export const MAX_FILE_BYTES = 2 * 1024 * 1024;
const BINARY_SNIFF_BYTES = 8 * 1024;

// Lock files are full of integrity hashes that look random by design.
const LOCK_FILES = new Set([
  'package-lock.json',
  '.package-lock.json',
  'npm-shrinkwrap.json',
  'yarn.lock',
  'pnpm-lock.yaml',
  'bun.lock',
  'Cargo.lock',
  'go.sum',
  'poetry.lock',
  'Pipfile.lock',
  'uv.lock',
  'Gemfile.lock',
  'composer.lock',
]);

/** True for dependency lock files, where only vendor-shaped tokens are looked for. */
export function isLockFile(path: string): boolean {
  return LOCK_FILES.has(basename(path));
}

/** Show only the start of a secret; short secrets show less so the preview never gives most of it away. */
export function redact(secret: string): string {
  const shown = secret.length >= 16 ? 4 : Math.floor(secret.length / 4);
  return `${secret.slice(0, shown)}****`;
}

/** Scan one file's text; `path` is reported as given and decides whether it is a lock file. */
export function scanText(path: string, text: string): Finding[] {
  const lock = isLockFile(path);
  const rules = RULES.filter(
    (r) => (!lock || r.kind === 'vendor') && (!r.files || r.files(path)) && (!r.hint || r.hint.test(text)),
  );
  const lineStarts = indexLines(text);
  const taken: Array<[number, number]> = [];
  const findings: Array<Finding & { offset: number }> = [];
  for (const rule of rules) {
    for (const match of text.matchAll(rule.pattern)) {
      const span = secretSpan(match);
      if (!span) continue;
      const [start, end] = span;
      const secret = text.slice(start, end);
      if (rule.accept && !rule.accept(secret, { text, matchStart: match.index, start })) continue;
      // an earlier, more specific rule already named this secret
      if (taken.some(([s, e]) => start < e && s < end)) continue;
      const lineIndex = lineOf(lineStarts, start);
      const lineStart = lineStarts[lineIndex] ?? 0;
      if (allowedOnLine(text, lineStarts, lineIndex).has(rule.id)) continue;
      taken.push([start, end]);
      findings.push({
        file: path,
        line: lineIndex + 1,
        column: start - lineStart + 1,
        rule: rule.id,
        preview: redact(secret),
        offset: start,
      });
    }
  }
  return findings.sort((a, b) => a.offset - b.offset).map(({ offset: _, ...finding }) => finding);
}

/** The credential's span: the first of the `secret`, `secret2`, ... groups that matched, else the whole match. */
function secretSpan(match: RegExpExecArray | RegExpMatchArray): [number, number] | undefined {
  const groups = match.indices?.groups;
  if (groups) {
    for (const [name, span] of Object.entries(groups)) if (name.startsWith('secret') && span) return span;
  }
  return match.indices?.[0];
}

function indexLines(text: string): number[] {
  const starts = [0];
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) starts.push(i + 1);
  return starts;
}

function lineOf(starts: number[], offset: number): number {
  let lo = 0;
  let hi = starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if ((starts[mid] ?? 0) <= offset) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

const PRAGMA = /keel-allow:\s*([a-z0-9-]+(?:\s*,\s*[a-z0-9-]+)*)/i;
const ALL_RULES = new Set<string>(RULES.map((r) => r.id));

/** Rule ids a `keel-allow: RULE[,RULE]` (or `all`) comment on this line suppresses. */
function allowedOnLine(text: string, starts: number[], lineIndex: number): Set<string> {
  const next = starts[lineIndex + 1];
  const line = text.slice(starts[lineIndex] ?? 0, next === undefined ? undefined : next);
  const ids = PRAGMA.exec(line)?.[1]
    ?.split(',')
    .map((id) => id.trim().toLowerCase());
  if (!ids) return new Set();
  return ids.includes('all') ? ALL_RULES : new Set(ids);
}

type Git = (args: string[], input?: string) => Buffer;

// every git call goes through the hardened runner: a pinned repository, no program the repository names
function gitIn(repo: Repo, index?: string): Git {
  return (args, input) => {
    try {
      return runGit(repo, repo.top, args, {
        ...(index ? { index } : {}),
        ...(input !== undefined ? { input } : {}),
      });
    } catch (err) {
      if (!(err instanceof GitError)) throw err;
      if (err.status === null) throw new ScanError('GIT_FAILED', 'git is not installed (or not on PATH)');
      const detail = err.message.replace(/^git .*? failed: /s, '');
      throw new ScanError('GIT_FAILED', `git ${args[0] ?? ''} failed${detail ? `: ${detail}` : ''}`);
    }
  };
}

/**
 * A pre-commit hook for `git commit -a` (or `git commit PATH`) sees the commit's content only in
 * the temporary index git names in GIT_INDEX_FILE; keep it when it is this repository's own.
 */
function hookIndexFile(repo: Repo): string | undefined {
  const inherited = process.env.GIT_INDEX_FILE;
  if (!inherited) return undefined;
  const file = resolve(inherited);
  const rel = relative(repo.gitDir, file);
  const inside = rel !== '' && !rel.startsWith('..') && !isAbsolute(rel);
  return inside ? file : undefined;
}

/** The repository that holds `dir` (the scan's one discovery), or a NOT_A_REPO error naming `dir`. */
function topLevel(dir: string): Repo {
  let repo: Repo | undefined;
  try {
    repo = discoverRepo(dir);
  } catch (err) {
    // git missing or refusing the repository (dubious ownership) is not the user's folder choice
    if (!(err instanceof GitError)) throw err;
    throw new ScanError('GIT_FAILED', err.message);
  }
  if (!repo) throw new ScanError('NOT_A_REPO', `not a git repository (or inside one): ${dir}`);
  return repo;
}

function splitZ(out: Buffer): string[] {
  return out
    .toString('utf8')
    .split('\0')
    .filter((s) => s !== '');
}

/** Scan the staged content of added/changed files, or with `allFiles` every tracked file's working copy. */
export function scanRepo(
  repo: string,
  opts: { allFiles: boolean },
): { filesScanned: number; findings: Finding[] } {
  const found = topLevel(repo);
  const git = gitIn(found, hookIndexFile(found));
  const contents = opts.allFiles ? workingFiles(found.top, git) : stagedFiles(git);
  let filesScanned = 0;
  const findings: Finding[] = [];
  for (const { path, read } of contents) {
    const bytes = read();
    if (!bytes || isBinary(bytes)) continue;
    filesScanned++;
    findings.push(...scanText(path, bytes.toString('utf8')));
  }
  return { filesScanned, findings };
}

interface Candidate {
  path: string;
  /** The file's bytes, or undefined when it is skipped (too big, not a regular file, gone). */
  read: () => Buffer | undefined;
}

function isBinary(bytes: Buffer): boolean {
  return bytes.subarray(0, BINARY_SNIFF_BYTES).includes(0);
}

function workingFiles(root: string, git: Git): Candidate[] {
  const paths = [...new Set(splitZ(git(['ls-files', '-z'])))];
  return paths.map((path) => ({
    path,
    read: () => {
      const full = join(root, path);
      try {
        // symlinks and submodules are not file content; deleted-but-tracked files are gone
        const stat = lstatSync(full);
        if (!stat.isFile() || stat.size > MAX_FILE_BYTES) return undefined;
        return readFileSync(full);
      } catch {
        return undefined;
      }
    },
  }));
}

function stagedFiles(git: Git): Candidate[] {
  const changed = splitZ(git(['diff', '--cached', '--name-only', '-z', '--diff-filter=ACMR']));
  if (!changed.length) return [];
  // the index maps each path to its staged blob; read blobs by id so odd path names need no quoting
  const blobs = new Map<string, string>();
  for (const entry of splitZ(git(['ls-files', '-s', '-z']))) {
    const m = /^(\d+) ([0-9a-f]+) 0\t(.*)$/s.exec(entry);
    // regular files only: 120000 is a symlink, 160000 a submodule
    if (m?.[1]?.startsWith('100') && m[2] && m[3] !== undefined) blobs.set(m[3], m[2]);
  }
  const ids = changed.flatMap((p) => blobs.get(p) ?? []);
  const sizes = new Map<string, number>();
  // one git process for every size, so a big staged change costs no more spawns than a small one
  const report = ids.length ? git(['cat-file', '--batch-check'], `${ids.join('\n')}\n`).toString('utf8') : '';
  for (const line of report.split('\n')) {
    const [id, , size] = line.split(' ');
    if (id && size) sizes.set(id, Number(size));
  }
  return changed.map((path) => ({
    path,
    read: () => {
      const id = blobs.get(path);
      if (!id || (sizes.get(id) ?? Number.POSITIVE_INFINITY) > MAX_FILE_BYTES) return undefined;
      return git(['cat-file', 'blob', id]);
    },
  }));
}
