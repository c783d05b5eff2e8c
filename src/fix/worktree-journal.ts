/**
 * A fix snapshot's files as git trees, for a run that may be killed and resumed: each shell or test
 * command's intent records the tree it starts from, and a resume puts the snapshot back to that tree
 * before it runs the command again (agent/effect-resume.ts), so a command that appends to a file does
 * not append twice. Dependency folders linked from the user's checkout are never touched.
 */
import { join } from 'node:path';
import type { WorktreeJournal } from '../agent/loop.js';
import { checkoutPaths, diffTrees, git } from '../policy/git.js';
import { snapshotTree } from '../policy/snapshot-tree.js';
import { removeNoFollow } from '../policy/undo-paths.js';
import type { Snapshot } from './snapshot.js';

/** The snapshot's files as a tree, and back (`restore`). */
export function worktreeJournal(snapshot: Snapshot): WorktreeJournal {
  const top = snapshot.top;
  const head = () => git(top, ['rev-parse', 'HEAD']).trim();
  // linked names are relative to `dir`; the trees are relative to `top`
  const sub = snapshot.dir === top ? '' : `${snapshot.dir.slice(top.length + 1)}/`;
  const linked = (path: string) =>
    snapshot.linked.some((name) => path === `${sub}${name}` || path.startsWith(`${sub}${name}/`));
  const tree = () => snapshotTree(top, head()).tree;
  return {
    tree,
    restore(target) {
      const now = tree();
      if (now === target) return;
      const changes = diffTrees(top, now, target).filter((c) => !linked(c.path));
      // a file the command made is removed; a file it changed or removed is written back from the tree
      for (const c of changes.filter((c) => /^0+$/.test(c.newMode)))
        removeNoFollow(join(top, c.path), top, top);
      checkoutPaths(
        top,
        target,
        changes.filter((c) => !/^0+$/.test(c.newMode)).map((c) => c.path),
      );
    },
  };
}
