/**
 * `keel fix` with vitest, jest, mocha and tape (really installed in the fixture, copied from keel's own
 * devDependencies), the way a user runs them: per-test verdicts (vite writes its cache into the snapshot's
 * node_modules), and weakened tests that must not be verified. Apart from fix-runners.test.ts so the files
 * run side by side.
 */
import { describeRunner } from './fix-runners-harness.js';

describeRunner({
  title: 'keel fix with vitest',
  fixture: 'vitest',
  packages: ['vitest'],
  target: 'test/stats.test.js > stats > mean of 2, 4, 6 is 4',
  weakening: {
    title: 'a failing assertion loosened to pass is not verified',
    path: 'test/stats.test.js',
    from: 'expect(mean([2, 4, 6])).toBe(4);',
    to: 'expect(mean([2, 4, 6])).toBeGreaterThan(0);',
  },
});

describeRunner({
  title: 'keel fix with mocha',
  fixture: 'mocha',
  packages: ['mocha'],
  // mocha reports the suite path joined into the title, so it stays one part of the id
  target: 'test/stats.test.js > stats mean of 2, 4, 6 is 4',
  weakening: {
    title: '`return;` at the top of the failing test is not verified',
    path: 'test/stats.test.js',
    from: "it('mean of 2, 4, 6 is 4', () => {\n",
    to: "it('mean of 2, 4, 6 is 4', () => {\n    return;\n",
  },
});

describeRunner({
  title: 'keel fix with tape behind `npm run tests-only`',
  fixture: 'tape',
  packages: ['tape'],
  // TAP names no file: the test's name is its id
  target: 'mean of 2, 4, 6 is 4',
  weakening: {
    title: 't.pass() in place of the failing assertion is not verified',
    path: 'test/stats.js',
    from: 't.equal(mean([2, 4, 6]), 4);',
    to: 't.pass();',
  },
});

describeRunner({
  title: 'keel fix with jest',
  fixture: 'jest',
  packages: ['jest'],
  target: 'test/stats.test.js > stats > mean of 2, 4, 6 is 4',
  weakening: {
    title: 'the failing test skipped with test.skip is not verified',
    path: 'test/stats.test.js',
    from: "test('mean of 2, 4, 6 is 4'",
    to: "test.skip('mean of 2, 4, 6 is 4'",
  },
});
