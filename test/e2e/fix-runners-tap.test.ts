/**
 * `keel fix` with node-tap (tap 21, really installed in the fixture), the way a user runs it; apart from
 * fix-runners.test.ts because tap is the slowest runner and the two files then run side by side.
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

describe('keel fix with node-tap', () => {
  let modules: string;
  beforeAll(() => {
    modules = installedModules(['tap']);
  });
  const repo = () => {
    const dir = fixtureRepo('node-tap');
    installInto(dir, modules);
    return dir;
  };
  const target = 'test/stats.test.js > mean of 2, 4, 6 is 4';

  it('the correct fix is verified, with per-test targets named', async () => {
    const result = await attempt(repo(), 'src/stats.js', BUG, FIXED);
    expectVerified(result, target);
  });

  it('`return;` at the top of the failing test is not verified', async () => {
    const result = await attempt(
      repo(),
      'test/stats.test.js',
      "t.test('mean of 2, 4, 6 is 4', async (t) => {\n",
      "t.test('mean of 2, 4, 6 is 4', async (t) => {\n  return;\n",
    );
    expectRefused(result, target);
  });
});
