/** Helpers for the `keel fix` end-to-end tests: fixture repositories, checkout fingerprints, scripted turns. */
import { createHash } from 'node:crypto';
import { existsSync, lstatSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import type { ScriptTurn } from '../../src/model/script.js';
import type { ScriptServer } from '../../src/model/script-server.js';
import { git, gitRepo, writeFiles } from '../helpers/tmp.js';
import { type KeelRun, keel, keelHome, modelFlags } from './harness.js';

const FIXTURES = fileURLToPath(new URL('../fixtures/fix/', import.meta.url));

/** Every file of a fixture folder, path -> content. */
function fixtureFiles(name: string): Record<string, string> {
  const root = join(FIXTURES, name);
  const files: Record<string, string> = {};
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else files[relative(root, path)] = readFileSync(path, 'utf8');
    }
  };
  walk(root);
  return files;
}

/** A temporary git repository holding the fixture `name`, committed on main. */
export function fixtureRepo(name: string): string {
  return gitRepo(fixtureFiles(name));
}

/** Leave the user's checkout the way people leave theirs: an uncommitted edit and an untracked file. */
export function dirtyCheckout(repo: string, edit: string): void {
  const before = readFileSync(join(repo, edit), 'utf8');
  writeFiles(repo, { [edit]: `${before}work in progress, not committed\n`, 'notes.txt': 'my notes\n' });
}

/**
 * A fingerprint of the user's checkout: every file (tracked, untracked, ignored; .git left out) by
 * content, mode and link target, plus `git status --porcelain` and `git stash list`.
 */
export function fingerprint(repo: string): { files: Record<string, string>; status: string; stash: string } {
  const files: Record<string, string> = {};
  const walk = (dir: string) => {
    for (const name of readdirSync(dir).sort()) {
      const path = join(dir, name);
      const rel = relative(repo, path);
      if (rel === '.git') continue;
      const stat = lstatSync(path);
      if (stat.isSymbolicLink()) files[rel] = `link ${readlinkSync(path)}`;
      else if (stat.isDirectory()) {
        files[`${rel}/`] = `dir ${stat.mode.toString(8)}`;
        walk(path);
      } else {
        const hash = createHash('sha256').update(readFileSync(path)).digest('hex');
        files[rel] = `${stat.mode.toString(8)} ${hash}`;
      }
    }
  };
  walk(repo);
  return {
    files,
    status: git(repo, 'status', '--porcelain', '--untracked-files=all', '--ignored'),
    stash: git(repo, 'stash', 'list'),
  };
}

/** The `--json` document of `keel fix`; fields this file asserts on. */
export interface FixDoc {
  session_id: string | null;
  mode: string;
  code: string;
  exit_code: number;
  reason?: string;
  summary: string;
  rounds: number;
  files_changed: string[];
  status: 'verified' | 'failed';
  attempts: number;
  branch: string | null;
  commit: string | null;
  verification: {
    status: string;
    mode: string;
    targetsPassing: string[];
    targetsFailing: string[];
    regressions: string[];
    flaky: string[];
    testEdits?: string[];
    reason: string;
  } | null;
  test_command: string | null;
  snapshot: { kind: string; dir: string; linked: string[] } | null;
  run_dir: string | null;
  trace: string | null;
  rationale: string | null;
  pr_description: string | null;
  diff: string | null;
}

export interface FixRun {
  run: KeelRun;
  doc: FixDoc;
  home: string;
}

/**
 * Run `keel fix --json` on `repo` against `server`, check that stdout is one JSON document and that the
 * user's checkout is byte-for-byte what it was, and return the document.
 */
export async function fix(repo: string, server: ScriptServer, args: string[]): Promise<FixRun> {
  const home = keelHome();
  const before = fingerprint(repo);
  const run = await keel(['fix', '--repo', repo, '--json', ...modelFlags(server), ...args], {
    cwd: home,
    home,
    timeoutMs: 25_000,
  });
  let doc: FixDoc;
  try {
    doc = JSON.parse(run.stdout) as FixDoc;
  } catch {
    throw new Error(`stdout is not one JSON document (exit ${run.code}):\n${run.stdout}\n${run.stderr}`);
  }
  expect(fingerprint(repo), 'the user checkout changed').toEqual(before);
  expect(doc.exit_code).toBe(run.code);
  return { run, doc, home };
}

/** POSTs the model server received (chat requests); none means no model was called. */
export function modelPosts(server: ScriptServer): number {
  return server.requests.filter((r) => r.method === 'POST').length;
}

/** The commits on `branch` in the user's repository that are not on main, newest first. */
export function branchCommits(repo: string, branch: string): string[] {
  return git(repo, 'log', '--format=%H', `main..${branch}`).split('\n').filter(Boolean);
}

/** The keel branches and the extra worktrees a run left in the user's repository. */
export function leftovers(repo: string): { branches: string[]; worktrees: number } {
  const branches = git(repo, 'branch', '--list', '--format=%(refname:short)', 'keel/*')
    .split('\n')
    .filter(Boolean);
  const worktrees = git(repo, 'worktree', 'list', '--porcelain').match(/^worktree /gm)?.length ?? 0;
  return { branches, worktrees: worktrees - 1 };
}

/** A plan session: read one file, then answer with the plan. */
export function planTurns(path: string, plan: string): ScriptTurn[] {
  return [{ tool_calls: [{ name: 'read_file', arguments: { path } }] }, { text: plan }];
}

/** An attempt: one edit, then the model's account of it. */
export function editTurns(path: string, oldString: string, newString: string, claim: string): ScriptTurn[] {
  return [
    {
      tool_calls: [{ name: 'edit_file', arguments: { path, old_string: oldString, new_string: newString } }],
    },
    { text: claim },
  ];
}

/** Whether a run folder holds the report files a fix leaves. */
export function reportFilesExist(doc: FixDoc): boolean {
  return [doc.trace, doc.rationale, doc.pr_description, doc.diff].every(
    (p) => typeof p === 'string' && p.startsWith(doc.run_dir ?? '\0') && existsSync(p),
  );
}
