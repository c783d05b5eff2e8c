// The fixtures bench/fix-runners.mjs measures keel fix on, one per test runner: the bug's issue text, the
// one edit that fixes it, and the command a user would type to run the same suite by hand.
import { spawnSync } from 'node:child_process';

const has = (cmd) => spawnSync('/bin/sh', ['-c', `command -v ${cmd}`]).status === 0;

export const FIX_CASES = [
  {
    runner: 'node --test',
    fixture: 'stats',
    issue: 'mean() of [2, 4, 6] returns 3, not 4',
    edit: {
      path: 'src/stats.js',
      old: '  return sum(values) / (values.length + 1);',
      new: '  return sum(values) / values.length;',
    },
    bare: 'npm test',
  },
  {
    runner: 'pytest',
    fixture: 'py-stats',
    issue: 'median of [1, 2, 3, 4] should be 2.5',
    edit: {
      path: 'stats.py',
      old: '        return ordered[middle]\n    return ordered[middle]\n',
      new: '        return ordered[middle]\n    return (ordered[middle - 1] + ordered[middle]) / 2\n',
    },
    bare: 'python3 -m pytest -q',
    skip: () => (spawnSync('python3', ['-m', 'pytest', '--version']).status === 0 ? undefined : 'no pytest'),
  },
];

export { has };
