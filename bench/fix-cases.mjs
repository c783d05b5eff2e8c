// The fixtures bench/fix-runners.mjs measures keel fix on, one per test runner: the bug's issue text, the
// one edit that fixes it, and the command a user would type to run the same suite by hand.
import { spawnSync } from 'node:child_process';
import { symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
// keel's own node_modules holds every JavaScript runner measured here; the sandbox shows a linked one read-only
const linkModules = (dir) => symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'));
const STATS_EDIT = {
  path: 'src/stats.js',
  old: 'return sum(values) / (values.length + 1);',
  new: 'return sum(values) / values.length;',
};
const js = (runner, fixture) => ({
  runner,
  fixture,
  issue: 'mean() of [2, 4, 6] returns 3, not 4',
  edit: STATS_EDIT,
  bare: 'npm test',
  setup: linkModules,
});

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
  { ...js('npm test -> lint steps -> node --test', 'chain'), setup: undefined },
  js('mocha', 'mocha'),
  js('vitest', 'vitest'),
  js('jest', 'jest'),
  js('ava', 'ava'),
  js('uvu', 'uvu'),
  js('node-tap', 'node-tap'),
  js('tape behind npm run tests-only', 'tape'),
  {
    runner: 'cargo test',
    fixture: 'cargo-stats',
    issue: 'mean of [2, 4, 6] is not 4',
    edit: {
      path: 'src/lib.rs',
      old: 'sum(values) / (values.len() as f64 + 1.0)',
      new: 'sum(values) / values.len() as f64',
    },
    bare: 'cargo test -q',
    skip: () => (has('cargo') ? undefined : 'no cargo'),
  },
];

export { has };
