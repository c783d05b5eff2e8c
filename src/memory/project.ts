/**
 * The project a memory belongs to: the repository (its first commit) at its place (the canonical folder of
 * its top). A clone or fork of the same upstream elsewhere has the same first commit but is another place,
 * so it neither reads nor adds to this one's memory until the person shares it (`keel memory share`).
 * Outside git (or before the first commit) the key is the canonical folder alone.
 */
import { realpathSync, statSync } from 'node:fs';
import { discoverRepo, GitError, type Repo, repoAt, runGit } from '../policy/git-runner.js';

export interface ProjectKey {
  /** `git:<root commit>@<canonical top>` or `path:<canonical folder>`. */
  key: string;
  /** The repository whatever its place (`git:<root commit>`; for a path key, the key itself). */
  identity: string;
  /** How the key was found, for `keel memory stats`. */
  source: 'root-commit' | 'path';
  /** The repository's top (or the folder) the key was read from. */
  root: string;
}

/**
 * The project key of `dir`. git runs only through the hardened runner, which never starts a program the
 * repository configures. With several root commits (merged histories) the smallest hash wins, so the key
 * does not depend on commit dates.
 */
export function projectKey(dir: string, opts: { pinned?: boolean } = {}): ProjectKey {
  const canonical = realpathSync.native(dir);
  // a session asks twice (memory injected at its start, observed at its end), a server for every session;
  // a root commit does not change under a running process, so it is read once (a path key is not kept:
  // the first commit turns it into a git one)
  // (the folder's inode is part of the key: a folder removed and cloned again anew is asked again)
  const { dev, ino } = statSync(canonical);
  const memo = `${opts.pinned ? 'pinned' : 'found'}:${dev}:${ino}:${canonical}`;
  const known = rootKeys.get(memo);
  if (known) return known;
  const found = readProjectKey(canonical, opts);
  if (found.source === 'root-commit') rootKeys.set(memo, found);
  return found;
}

const rootKeys = new Map<string, ProjectKey>();

function readProjectKey(canonical: string, opts: { pinned?: boolean }): ProjectKey {
  let repo: Repo | undefined;
  try {
    repo = opts.pinned ? repoAt(canonical) : discoverRepo(canonical);
  } catch (err) {
    if (!(err instanceof GitError)) throw err;
  }
  if (repo) {
    try {
      const roots = runGit(repo, repo.top, ['rev-list', '--max-parents=0', 'HEAD'])
        .toString('utf8')
        .split('\n')
        .filter((l) => /^[0-9a-f]{40,64}$/.test(l))
        .sort();
      if (roots[0]) {
        const identity = `git:${roots[0]}`;
        return { key: `${identity}@${repo.top}`, identity, source: 'root-commit', root: repo.top };
      }
    } catch (err) {
      // no commits yet: HEAD does not resolve
      if (!(err instanceof GitError)) throw err;
    }
    return { key: `path:${repo.top}`, identity: `path:${repo.top}`, source: 'path', root: repo.top };
  }
  return { key: `path:${canonical}`, identity: `path:${canonical}`, source: 'path', root: canonical };
}

/**
 * The place a key names, as a person reads it: the folder, or undefined for a key from before memory was
 * kept per place (`git:<root commit>` alone).
 */
export function placeOf(key: string): string | undefined {
  const git = /^git:[0-9a-f]{40,64}@(.+)$/.exec(key);
  if (git) return git[1];
  return key.startsWith('path:') ? key.slice('path:'.length) : undefined;
}
