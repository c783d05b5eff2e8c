/**
 * The merges of a goal, made without touching any checkout: `git merge-tree --write-tree` merges two
 * commits in git's object store, `git commit-tree` records the merge (keel authors it). A conflict names
 * its files. A task's base and the integration branch are both made this way.
 */
import { git, gitTry, KEEL_IDENT } from '../policy/git.js';

export interface MergeStep {
  /** Who the commit is, for the message and a conflict: a task id. */
  label: string;
  commit: string;
}

export type MergeResult = { commit: string } | { conflict: { label: string; files: string[] } };

/** Merge each step into `start` in order; the first conflict stops it. */
export function mergeInOrder(repo: string, start: string, steps: MergeStep[], message: string): MergeResult {
  let head = start;
  for (const step of steps) {
    // already in (a dependency's result holds its own dependencies): nothing to merge
    if (gitTry(repo, ['merge-base', '--is-ancestor', step.commit, head]) !== undefined) continue;
    if (gitTry(repo, ['merge-base', '--is-ancestor', head, step.commit]) !== undefined) {
      head = step.commit;
      continue;
    }
    const out = git(repo, ['merge-tree', '--write-tree', '--name-only', '--no-messages', head, step.commit], {
      tolerate: [1],
    });
    const [tree, ...rest] = out.split('\n').filter(Boolean);
    if (!tree) throw new Error(`git merge-tree gave no tree for ${step.label}`);
    if (rest.length) return { conflict: { label: step.label, files: [...new Set(rest)].sort() } };
    head = git(
      repo,
      [
        'commit-tree',
        '--no-gpg-sign',
        tree,
        '-p',
        head,
        '-p',
        step.commit,
        '-m',
        `${message}: merge ${step.label}`,
      ],
      {
        env: {
          GIT_AUTHOR_NAME: KEEL_IDENT.name,
          GIT_AUTHOR_EMAIL: KEEL_IDENT.email,
          GIT_COMMITTER_NAME: KEEL_IDENT.name,
          GIT_COMMITTER_EMAIL: KEEL_IDENT.email,
        },
      },
    ).trim();
  }
  return { commit: head };
}

/** The files that differ between two commits (paths from the repository's top). */
export function changedFiles(repo: string, from: string, to: string): string[] {
  return git(repo, ['diff', '--name-only', '--no-renames', from, to, '--']).split('\n').filter(Boolean);
}

/** The commit a ref names, or undefined. */
export function commitOf(repo: string, ref: string): string | undefined {
  return gitTry(repo, ['rev-parse', '--verify', '-q', `${ref}^{commit}`])?.trim() || undefined;
}
