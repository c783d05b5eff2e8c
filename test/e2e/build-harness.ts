/** Helpers for the `keel build` tests: a tiny node --test project, the scripted test-writing turns, a run. */
import { createHash } from 'node:crypto';
import { expect } from 'vitest';
import type { ScriptTurn } from '../../src/model/script.js';
import type { ScriptServer } from '../../src/model/script-server.js';
import { gitRepo } from '../helpers/tmp.js';
import { type FixDoc, fingerprint } from './fix-harness.js';
import { type KeelRun, keel, keelHome, modelFlags } from './harness.js';

export const SUM = 'export function sum(values) {\n  return values.reduce((a, b) => a + b, 0);\n}\n';
export const MEDIAN =
  'export function median(values) {\n  const s = [...values].sort((a, b) => a - b);\n  return s[Math.floor(s.length / 2)];\n}\n';
export const MEDIAN_TEST = [
  "import assert from 'node:assert/strict';",
  "import { test } from 'node:test';",
  "import * as stats from '../src/stats.js';",
  '',
  "test('median of 3, 1, 2 is 2', () => {",
  '  assert.equal(stats.median?.([3, 1, 2]), 2);',
  '});',
  '',
].join('\n');

/** A tiny project with one passing test; `withMedian` when the feature is there already. */
export function tinyProject(withMedian = false): string {
  return gitRepo({
    'package.json': JSON.stringify({
      name: 'tiny',
      private: true,
      type: 'module',
      scripts: { test: 'node --test' },
    }),
    'src/stats.js': withMedian ? SUM + MEDIAN : SUM,
    'test/sum.test.js':
      "import assert from 'node:assert/strict';\nimport { test } from 'node:test';\nimport { sum } from '../src/stats.js';\n\ntest('sum adds', () => {\n  assert.equal(sum([1, 2]), 3);\n});\n",
  });
}

/** The test-writing session: one new test file, then the model's account. */
export const TESTS_TURNS: ScriptTurn[] = [
  { tool_calls: [{ name: 'write_file', arguments: { path: 'test/median.test.js', content: MEDIAN_TEST } }] },
  { text: 'The test checks median([3, 1, 2]) is 2.' },
];

/** The fix run's turns once the tests are approved: a plan, median written, the model's account. */
export const BUILD_TURNS: ScriptTurn[] = [
  { text: '1. Add median to src/stats.js.' },
  { tool_calls: [{ name: 'write_file', arguments: { path: 'src/stats.js', content: SUM + MEDIAN } }] },
  { text: 'Added median.' },
];

export const MEDIAN_TEST_SHA = createHash('sha256').update(MEDIAN_TEST).digest('hex');

export interface BuildDoc extends Omit<FixDoc, 'status'> {
  status: 'verified' | 'failed' | 'already_exists';
  tests_written: { path: string; sha256: string }[];
}

/** `keel build --json --yes` on `repo`; the user's checkout must be untouched. */
export async function build(
  repo: string,
  server: ScriptServer,
  args: string[],
): Promise<{ run: KeelRun; doc: BuildDoc; home: string }> {
  const home = keelHome();
  const before = fingerprint(repo);
  const run = await keel(['build', '--repo', repo, '--json', '--yes', ...modelFlags(server), ...args], {
    cwd: home,
    home,
    timeoutMs: 40_000,
  });
  let doc: BuildDoc;
  try {
    doc = JSON.parse(run.stdout) as BuildDoc;
  } catch {
    throw new Error(`stdout is not one JSON document (exit ${run.code}):\n${run.stdout}\n${run.stderr}`);
  }
  expect(fingerprint(repo), 'the user checkout changed').toEqual(before);
  expect(doc.exit_code).toBe(run.code);
  return { run, doc, home };
}
