/**
 * Whether a session that acts can write where it must: the work tree, and the repository's git folder
 * (the safety net's snapshot and refs live there). Checked before the session starts, so a read-only
 * repository is said in one line that names the folder, not as a failed git command after a model round.
 */
import { accessSync, constants } from 'node:fs';
import { join } from 'node:path';
import { runGitUnpinned } from '../policy/git-runner.js';

/**
 * What cannot be written and why (`/repo/.git is on a read-only file system`), or undefined when all
 * can be; `workTree: false` checks only the git folder (a fix works in a worktree of its own).
 */
export function unwritable(root: string, opts: { workTree: boolean }): string | undefined {
  const places = opts.workTree ? [root] : [];
  const common = gitCommonDir(root);
  if (common) places.push(common, join(common, 'objects'), join(common, 'refs'));
  for (const place of places) {
    try {
      accessSync(place, constants.W_OK);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') continue;
      if (code === 'EROFS') return `${place} is on a read-only file system`;
      if (code === 'EACCES' || code === 'EPERM') return `${place} is not writable by this user`;
      return `${place} cannot be written (${code})`;
    }
  }
  return undefined;
}

/** The git folder that holds the objects and refs (a linked worktree's is its main repository's); none outside git. */
function gitCommonDir(root: string): string | undefined {
  try {
    const out = runGitUnpinned(root, ['rev-parse', '--path-format=absolute', '--git-common-dir']);
    return out.toString('utf8').trim() || undefined;
  } catch {
    return undefined;
  }
}
