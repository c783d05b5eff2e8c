/** What the `keel goal` tests share: a three-function project, a planner's answer, and each task's scripted fix. */
import type { ScriptTurn } from '../../src/model/script.js';
import { gitRepo } from '../helpers/tmp.js';
import { editTurns, planTurns } from './fix-harness.js';

/** double() and triple() are wrong alone; both() is wrong and needs the other two right to pass. */
export function goalRepo(): string {
  return gitRepo({
    'package.json': JSON.stringify({ type: 'module', scripts: { test: 'node --test' } }),
    'src/double.js': 'export function double(x) {\n  return x;\n}\n',
    'src/triple.js': 'export function triple(x) {\n  return x;\n}\n',
    'src/both.js':
      "import { double } from './double.js';\nimport { triple } from './triple.js';\n\nexport function both(x) {\n  return 0;\n}\n",
    'test/double.test.js':
      "import assert from 'node:assert/strict';\nimport { test } from 'node:test';\nimport { double } from '../src/double.js';\n\ntest('double of 2 is 4', () => {\n  assert.equal(double(2), 4);\n});\n",
    'test/triple.test.js':
      "import assert from 'node:assert/strict';\nimport { test } from 'node:test';\nimport { triple } from '../src/triple.js';\n\ntest('triple of 2 is 6', () => {\n  assert.equal(triple(2), 6);\n});\n",
    'test/both.test.js':
      "import assert from 'node:assert/strict';\nimport { test } from 'node:test';\nimport { both } from '../src/both.js';\n\ntest('both of 1 is 5', () => {\n  assert.equal(both(1), 5);\n});\n",
  });
}

/** The planner's answer: a JSON plan. */
export function planAnswer(tasks: unknown[]): ScriptTurn {
  return { text: JSON.stringify({ tasks }) };
}

/** A task's scripted fix (a plan session, then one attempt), answering only the requests whose task holds `key`. */
export function taskTurns(key: string, path: string, from: string, to: string): ScriptTurn[] {
  return [
    ...planTurns(path, `1. ${path} is wrong.\n2. Fix it.`),
    ...editTurns(path, from, to, `${path} fixed.`),
  ].map((t) => ({ ...t, task: key }));
}

export const DOUBLE = taskTurns('DBL:', 'src/double.js', '  return x;', '  return x * 2;');
export const TRIPLE = taskTurns('TPL:', 'src/triple.js', '  return x;', '  return x * 3;');
export const BOTH = taskTurns('BOTH:', 'src/both.js', '  return 0;', '  return double(x) + triple(x);');

export const PLAN = [
  {
    id: 'dbl',
    title: 'DBL: make double() double its argument',
    scope: ['src/double.js'],
    depends_on: [],
    test_command: 'node --test test/double.test.js',
  },
  {
    id: 'tpl',
    title: 'TPL: make triple() triple its argument',
    scope: ['src/triple.js'],
    test_command: 'node --test test/triple.test.js',
  },
  {
    id: 'both',
    title: 'BOTH: both(x) returns double(x) + triple(x)',
    scope: ['src/both.js'],
    depends_on: ['dbl', 'tpl'],
    test_command: 'node --test test/both.test.js',
  },
];
