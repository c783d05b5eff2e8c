/**
 * `keel fix` with vitest, jest, mocha and tape (really installed in the fixture, copied from keel's own
 * devDependencies), the way a user runs them: per-test verdicts (vite writes its cache into the snapshot's
 * node_modules), and weakened tests that must not be verified. Apart from fix-runners.test.ts so the files
 * run side by side.
 */
import { beforeAll, describe, it } from 'vitest';
import { fixtureRepo } from './fix-harness.js';
import {
  attempt,
  BUG,
  expectRefused,
  expectVerified,
  FIXED,
  installedModules,
  installInto,
} from './fix-runners-harness.js';

describe('keel fix with vitest', () => {
  let modules: string;
  beforeAll(() => {
    modules = installedModules(['vitest']);
  });
  const repo = () => {
    const dir = fixtureRepo('vitest');
    installInto(dir, modules);
    return dir;
  };
  const target = 'test/stats.test.js > stats > mean of 2, 4, 6 is 4';

  it('the correct fix is verified, with per-test targets named', async () => {
    const result = await attempt(repo(), 'src/stats.js', BUG, FIXED);
    expectVerified(result, target);
  });

  it('a failing assertion loosened to pass is not verified', async () => {
    const result = await attempt(
      repo(),
      'test/stats.test.js',
      'expect(mean([2, 4, 6])).toBe(4);',
      'expect(mean([2, 4, 6])).toBeGreaterThan(0);',
    );
    expectRefused(result, target);
  });
});

describe('keel fix with mocha', () => {
  let modules: string;
  beforeAll(() => {
    modules = installedModules(['mocha']);
  });
  const repo = () => {
    const dir = fixtureRepo('mocha');
    installInto(dir, modules);
    return dir;
  };
  // mocha reports the suite path joined into the title, so it stays one part of the id
  const target = 'test/stats.test.js > stats mean of 2, 4, 6 is 4';

  it('the correct fix is verified, with per-test targets named', async () => {
    const result = await attempt(repo(), 'src/stats.js', BUG, FIXED);
    expectVerified(result, target);
  });

  it('`return;` at the top of the failing test is not verified', async () => {
    const result = await attempt(
      repo(),
      'test/stats.test.js',
      "it('mean of 2, 4, 6 is 4', () => {\n",
      "it('mean of 2, 4, 6 is 4', () => {\n    return;\n",
    );
    expectRefused(result, target);
  });
});

describe('keel fix with tape behind `npm run tests-only`', () => {
  let modules: string;
  beforeAll(() => {
    modules = installedModules(['tape']);
  });
  const repo = () => {
    const dir = fixtureRepo('tape');
    installInto(dir, modules);
    return dir;
  };
  // TAP names no file: the test's name is its id
  const target = 'mean of 2, 4, 6 is 4';

  it('the correct fix is verified, with per-test targets named', async () => {
    const result = await attempt(repo(), 'src/stats.js', BUG, FIXED);
    expectVerified(result, target);
  });

  it('t.pass() in place of the failing assertion is not verified', async () => {
    const result = await attempt(repo(), 'test/stats.js', 't.equal(mean([2, 4, 6]), 4);', 't.pass();');
    expectRefused(result, target);
  });
});

describe('keel fix with jest', () => {
  let modules: string;
  beforeAll(() => {
    modules = installedModules(['jest']);
  });
  const repo = () => {
    const dir = fixtureRepo('jest');
    installInto(dir, modules);
    return dir;
  };
  const target = 'test/stats.test.js > stats > mean of 2, 4, 6 is 4';

  it('the correct fix is verified, with per-test targets named', async () => {
    const result = await attempt(repo(), 'src/stats.js', BUG, FIXED);
    expectVerified(result, target);
  });

  it('the failing test skipped with test.skip is not verified', async () => {
    const result = await attempt(
      repo(),
      'test/stats.test.js',
      "test('mean of 2, 4, 6 is 4'",
      "test.skip('mean of 2, 4, 6 is 4'",
    );
    expectRefused(result, target);
  });
});
