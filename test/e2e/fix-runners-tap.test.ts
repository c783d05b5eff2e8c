/**
 * `keel fix` with node-tap (tap 21, really installed in the fixture), the way a user runs it; apart from
 * fix-runners.test.ts because tap is the slowest runner and the two files then run side by side.
 */
import { describeRunner } from './fix-runners-harness.js';

describeRunner({
  title: 'keel fix with node-tap',
  fixture: 'node-tap',
  packages: ['tap'],
  target: 'test/stats.test.js > mean of 2, 4, 6 is 4',
  weakening: {
    title: '`return;` at the top of the failing test is not verified',
    path: 'test/stats.test.js',
    from: "t.test('mean of 2, 4, 6 is 4', async (t) => {\n",
    to: "t.test('mean of 2, 4, 6 is 4', async (t) => {\n  return;\n",
  },
});
