import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { fromCommand } from '../../src/verify/detect.js';
import { tempDir, writeFiles } from '../helpers/tmp.js';
import { byId, runProject } from './run-project.js';

const NODE_TESTS = `import { describe, it, test } from 'node:test';
import assert from 'node:assert/strict';
import { add } from '../src/math.js';
test('adds', () => assert.equal(add(1, 2), 3));
describe('suite', () => {
  it('multiplies', () => assert.equal(2 * 3, 7));
  it.skip('later', () => {});
});
`;

describe("node's test runner", () => {
  it('detects, runs and reads every test with a stable file > suite > test id', async () => {
    const root = tempDir();
    writeFiles(root, {
      'package.json': JSON.stringify({ type: 'module', scripts: { test: 'node --test' } }),
      'src/math.js': 'export const add = (a, b) => a + b;\n',
      'test/math.test.js': NODE_TESTS,
    });
    const run = await runProject(root);
    expect(run).toMatchObject({
      runner: 'node-test',
      parsed: true,
      exitCode: 1,
      collected: 3,
      timedOut: false,
    });
    const results = byId(run);
    expect(results['test/math.test.js > adds']).toMatchObject({
      status: 'passed',
      file: 'test/math.test.js',
    });
    expect(results['test/math.test.js > suite > multiplies']?.status).toBe('failed');
    expect(results['test/math.test.js > suite > multiplies']?.message).toMatch(/6 !== 7/);
    expect(results['test/math.test.js > suite > later']?.status).toBe('skipped');
    // the user still sees the spec reporter's output, and keel leaves no log behind
    expect(run.output).toMatch(/✖ multiplies/);
    expect(run.environmentProblem).toBeUndefined();
  });

  it('filters through npm by reading only the matching results', async () => {
    const root = tempDir();
    writeFiles(root, {
      'package.json': JSON.stringify({ type: 'module', scripts: { test: 'node --test' } }),
      'src/math.js': 'export const add = (a, b) => a + b;\n',
      'test/math.test.js': NODE_TESTS,
    });
    const run = await runProject(root, { filter: 'adds' });
    expect(run.results.map((r) => r.id)).toEqual(['test/math.test.js > adds']);
    expect(run.note).toMatch(/results were filtered/);
  });

  it('counts a project with no test files as zero collected', async () => {
    const root = tempDir();
    writeFiles(root, { 'package.json': JSON.stringify({ scripts: { test: 'node --test' } }) });
    const run = await runProject(root);
    expect(run.exitCode).toBe(0);
    expect(run.collected).toBe(0);
  });
});

describe('vitest', () => {
  it('reads its JSON report through an npm script', async () => {
    const root = tempDir();
    writeFiles(root, {
      'package.json': JSON.stringify({ type: 'module', scripts: { test: 'vitest run' } }),
      'sum.test.ts': `import { describe, expect, it } from 'vitest';
describe('sum', () => {
  it('adds', () => expect(1 + 1).toBe(2));
  it('fails', () => expect(1 + 1).toBe(3));
});
`,
    });
    const run = await runProject(root);
    expect(run).toMatchObject({ runner: 'vitest', parsed: true, exitCode: 1, collected: 2 });
    expect(Object.fromEntries(run.results.map((r) => [r.id, r.status]))).toEqual({
      'sum.test.ts > sum > adds': 'passed',
      'sum.test.ts > sum > fails': 'failed',
    });
  });
});

describe('environment problems', () => {
  it('names a Node package that is not installed', async () => {
    const root = tempDir();
    writeFiles(root, {
      'package.json': JSON.stringify({ type: 'module', scripts: { test: 'node --test' } }),
      'test/a.test.js':
        "import pad from 'left-pad-not-installed';\nimport { test } from 'node:test';\ntest('pads', () => {});\n",
    });
    const run = await runProject(root);
    expect(run.environmentProblem).toBe('Node package not installed: left-pad-not-installed');
  });

  it('does not blame the environment for a missing relative import: that is the code', async () => {
    const root = tempDir();
    writeFiles(root, {
      'package.json': JSON.stringify({ type: 'module', scripts: { test: 'node --test' } }),
      'test/a.test.js':
        "import { x } from '../src/not-written-yet.js';\nimport { test } from 'node:test';\ntest('x', () => {});\n",
    });
    const run = await runProject(root);
    expect(run.exitCode).not.toBe(0);
    expect(run.environmentProblem).toBeUndefined();
    expect(run.results.map((r) => [r.id, r.status])).toEqual([['test/a.test.js', 'failed']]);
  });

  it('names a command that is not installed', async () => {
    const root = tempDir();
    writeFiles(root, {
      'package.json': JSON.stringify({ scripts: { test: 'definitely-not-a-runner-xyz --all' } }),
    });
    const run = await runProject(root);
    expect(run.exitCode).toBe(127);
    expect(run.parsed).toBe(false);
    expect(run.environmentProblem).toBe('command not found: definitely-not-a-runner-xyz');
  });

  it('kills a suite that runs past its timeout, with everything it started', async () => {
    const root = tempDir();
    const detected = fromCommand(root, 'sleep 30 & node -e "setTimeout(() => {}, 30000)"');
    const started = Date.now();
    const run = await runProject(root, { detected, timeoutS: 1 });
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(run.timedOut).toBe(true);
    expect(run.note).toMatch(/timed out after 1s/);
  });
});

const hasCargo = spawnSync('cargo', ['--version']).status === 0;

describe.skipIf(!hasCargo)('cargo', () => {
  it('runs a real crate and reads libtest output across targets', async () => {
    const root = tempDir();
    writeFiles(root, {
      'Cargo.toml': '[package]\nname = "calc"\nversion = "0.1.0"\nedition = "2021"\n',
      'src/lib.rs': `pub fn add(a: u64, b: u64) -> u64 { a + b }

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn it_works() { assert_eq!(add(2, 2), 4); }
    #[test]
    fn it_fails() { assert_eq!(add(2, 2), 5); }
}
`,
      'tests/integ.rs': '#[test]\nfn integ_ok() { assert_eq!(calc::add(1, 1), 2); }\n',
    });
    const run = await runProject(root);
    expect(run.parsed).toBe(true);
    expect(Object.fromEntries(run.results.map((r) => [r.id, r.status]))).toEqual({
      'src/lib.rs > tests::it_works': 'passed',
      'src/lib.rs > tests::it_fails': 'failed',
      // --no-fail-fast: the integration target still runs after the unit target failed
      'tests/integ.rs > integ_ok': 'passed',
    });
  });
});
