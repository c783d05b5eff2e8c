/** A script chain run step by step, and its checks in the verdict. */
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { fromCommand } from '../../src/verify/detect.js';
import { TestSuite } from '../../src/verify/suite.js';
import type { CheckRun, SuiteRun } from '../../src/verify/types.js';
import { verify } from '../../src/verify/verifier.js';
import { tempDir, writeFiles } from '../helpers/tmp.js';

function check(name: string, passed: boolean): CheckRun {
  return {
    name,
    command: `${name}-tool --fix`,
    passed,
    exitCode: passed ? 0 : 1,
    timedOut: false,
    durationMs: 1,
    output: '',
  };
}

function run(failing: boolean, checks: CheckRun[]): SuiteRun {
  return {
    command: 'npm test',
    runner: 'ava',
    exitCode: failing ? 1 : 0,
    timedOut: false,
    durationMs: 1,
    results: [
      { id: 'a > adds', name: 'adds', status: failing ? 'failed' : 'passed' },
      { id: 'a > keeps', name: 'keeps', status: 'passed' },
    ],
    output: '',
    parsed: true,
    collected: 2,
    checks,
  };
}

describe('checks in the verdict', () => {
  it('a check that passed before and fails after makes the change not verified, by name', async () => {
    const verdict = await verify({
      baseline: run(true, [check('lint', true)]),
      after: run(false, [check('lint', false)]),
      targets: [],
    });
    expect(verdict).toMatchObject({
      status: 'failed',
      targetsPassing: ['a > adds'],
      regressions: [],
      checksBroken: ['lint'],
    });
    expect(verdict.reason).toMatch(
      /^not verified: check `lint` \(lint-tool --fix\) passed before and fails after the change \(the tests alone would verify: 1 target passes/,
    );
  });

  it('a check already failing at baseline is listed and does not block', async () => {
    const verdict = await verify({
      baseline: run(true, [check('lint', false), check('types', true)]),
      after: run(false, [check('lint', false), check('types', true)]),
      targets: [],
    });
    expect(verdict.status).toBe('verified');
    expect(verdict.checksBroken).toEqual([]);
    expect(verdict.checks).toEqual([
      { name: 'lint', command: 'lint-tool --fix', before: 'failed', after: 'failed', broken: false },
      { name: 'types', command: 'types-tool --fix', before: 'passed', after: 'passed', broken: false },
    ]);
    expect(verdict.reason).toContain(
      'check `lint` (lint-tool --fix) already failed at baseline and does not count',
    );
  });

  it('a failing target and a broken check are both named', async () => {
    const verdict = await verify({
      baseline: run(true, [check('lint', true)]),
      after: run(true, [check('lint', false)]),
      targets: [],
    });
    expect(verdict.status).toBe('failed');
    expect(verdict.reason).toContain('target still failing: a > adds');
    expect(verdict.reason).toContain(
      'check `lint` (lint-tool --fix) passed before and fails after the change',
    );
  });
});

describe('a followed chain, run step by step', () => {
  const project = (scripts: Record<string, string>) => {
    const root = tempDir();
    writeFiles(root, {
      'package.json': JSON.stringify({ type: 'module', scripts }),
      'test/a.test.js':
        "import { test } from 'node:test';\nimport assert from 'node:assert';\ntest('adds', () => assert.equal(1 + 1, 3));\ntest('keeps', () => {});\n",
      'lint.js': 'process.exit(Number(process.argv[2]));\n',
    });
    return root;
  };
  const runIt = (root: string, filter?: string) =>
    new TestSuite(root, fromCommand(root, 'npm test'), tempDir('keel-reports-')).run({
      signal: new AbortController().signal,
      timeoutS: 60,
      ...(filter === undefined ? {} : { filter }),
    });

  it('a failing pre step hides no test; every step runs, the checks by name', async () => {
    const root = project({
      pretest: 'node lint.js 1',
      test: 'npm run format && npm run unit',
      format: 'node lint.js 0',
      unit: 'node --test',
    });
    const result = await runIt(root);
    expect(result).toMatchObject({ command: 'npm test', runner: 'node-test', parsed: true, exitCode: 1 });
    expect(result.results.map((r) => [r.id, r.status])).toEqual([
      ['test/a.test.js > adds', 'failed'],
      ['test/a.test.js > keeps', 'passed'],
    ]);
    expect(result.checks?.map((c) => [c.name, c.command, c.passed])).toEqual([
      ['pretest', 'node lint.js 1', false],
      ['format', 'node lint.js 0', true],
    ]);
  });

  it('a filtered run (the model asking for one test) runs only the test steps', async () => {
    const root = project({ test: 'node lint.js 1 && node --test' });
    const result = await runIt(root, 'adds');
    expect(result.checks).toEqual([]);
    // node reports the tests the pattern left out as skipped
    expect(result.results.map((r) => [r.id, r.status])).toEqual([
      ['test/a.test.js > adds', 'failed'],
      ['test/a.test.js > keeps', 'skipped'],
    ]);
  });

  it("two runs of the same tests stay apart, each under its step's name", async () => {
    const root = project({ test: 'npm run t:a && npm run t:b', 't:a': 'node --test', 't:b': 'node --test' });
    const result = await runIt(root);
    expect(result.results.map((r) => r.id)).toEqual([
      't:a > test/a.test.js > adds',
      't:a > test/a.test.js > keeps',
      't:b > test/a.test.js > adds',
      't:b > test/a.test.js > keeps',
    ]);
  });

  it("puts the package's node_modules/.bin on PATH, as npm would", async () => {
    const root = project({ test: 'mytool && node --test' });
    writeFiles(root, { 'node_modules/.bin/mytool': '#!/bin/sh\nexit 0\n' });
    const { chmodSync } = await import('node:fs');
    chmodSync(resolve(root, 'node_modules/.bin/mytool'), 0o755);
    const result = await runIt(root);
    expect(result.checks?.map((c) => [c.name, c.passed])).toEqual([['test: mytool', true]]);
  });
});

describe('a check that cannot run', () => {
  const offline = {
    ...check('posttest', false),
    environmentProblem: 'the network is off: example.invalid',
  };

  it('after the change, having passed before, is an environment problem naming the check and what is missing', async () => {
    const verdict = await verify({
      baseline: run(true, [check('posttest', true)]),
      after: run(false, [offline]),
      targets: [],
    });
    expect(verdict).toMatchObject({
      status: 'failed',
      environmentProblem:
        'check `posttest` (posttest-tool --fix) could not run: the network is off: example.invalid',
    });
  });

  it('before and after the change alike does not block the verdict: it already failed', async () => {
    const verdict = await verify({
      baseline: run(true, [offline]),
      after: run(false, [offline]),
      targets: [],
    });
    expect(verdict.status).toBe('verified');
    expect(verdict.environmentProblem).toBeUndefined();
    expect(verdict.reason).toContain('check `posttest` (posttest-tool --fix) already failed at baseline');
  });
});
