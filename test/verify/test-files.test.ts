import { describe, expect, it } from 'vitest';
import {
  isTestConfig,
  isTestFile,
  packageWithBaselineTestKeys,
  preloadedFiles,
  testConfigView,
} from '../../src/verify/test-files.js';

describe('test files and test configuration', () => {
  it('knows each ecosystem’s test files and leaves the code alone', () => {
    for (const path of [
      'test/stats.test.js',
      'src/a.spec.ts',
      'tests/test_stats.py',
      'pkg/stats_test.py',
      'stats_test.go',
      'tests/integration.rs',
      'src/__tests__/a.js',
      'src/__snapshots__/a.test.js.snap',
      'test/fixtures/input.json',
    ])
      expect(isTestFile(path), path).toBe(true);
    for (const path of ['src/stats.js', 'stats.py', 'lib/testing.go', 'README.md'])
      expect(isTestFile(path), path).toBe(false);
    for (const path of [
      'conftest.py',
      'sub/conftest.py',
      'pytest.ini',
      '.mocharc.yml',
      'vitest.config.ts',
      'package.json',
    ])
      expect(isTestConfig(path), path).toBe(true);
    expect(isTestConfig('src/config.js')).toBe(false);
  });

  it('a package.json counts as a test edit only where the tests are configured', () => {
    const base = JSON.stringify({ name: 'a', scripts: { test: 'node --test' }, dependencies: { x: '1' } });
    const deps = JSON.stringify({ name: 'a', scripts: { test: 'node --test' }, dependencies: { x: '2' } });
    const script = JSON.stringify({
      name: 'a',
      scripts: { test: 'node --test || true' },
      dependencies: { x: '2' },
    });
    expect(testConfigView('package.json', deps)).toBe(testConfigView('package.json', base));
    expect(testConfigView('package.json', script)).not.toBe(testConfigView('package.json', base));
    expect(JSON.parse(packageWithBaselineTestKeys(base, script) ?? '{}')).toEqual({
      name: 'a',
      scripts: { test: 'node --test' },
      dependencies: { x: '2' },
    });
  });

  it('pyproject.toml counts only in its test sections', () => {
    const base = '[project]\nversion = "1"\n\n[tool.pytest.ini_options]\naddopts = "-q"\n';
    expect(testConfigView('pyproject.toml', base.replace('"1"', '"2"'))).toBe(
      testConfigView('pyproject.toml', base),
    );
    expect(testConfigView('pyproject.toml', base.replace('-q', '-q -k not_even'))).not.toBe(
      testConfigView('pyproject.toml', base),
    );
  });
});

describe('preloadedFiles', () => {
  const tracked = new Set([
    'support/setup.js',
    'support/register.mjs',
    'web/jest.setup.ts',
    'web/src/index.ts',
    'lib/mocha-hooks.cjs',
    'src/index.js',
  ]);

  it('finds what the command and the configuration load into the test process', () => {
    const found = preloadedFiles(
      [
        { dir: '.', text: 'node --import ./support/setup.js --test' },
        { dir: '.', text: `NODE_OPTIONS='-r support/register.mjs' node --test` },
        { dir: 'web', text: "export default { test: { setupFiles: ['./jest.setup'] } }" },
        { dir: 'lib', text: 'require: ./mocha-hooks.cjs\nspec: test/**/*.js' },
      ],
      tracked,
    );
    expect(found).toEqual([
      'lib/mocha-hooks.cjs',
      'support/register.mjs',
      'support/setup.js',
      'web/jest.setup.ts',
    ]);
  });

  it('ignores packages, entry points and paths outside the repository', () => {
    const found = preloadedFiles(
      [
        { dir: '.', text: 'node -r ts-node/register --import=../outside.js --test' },
        { dir: 'web', text: "export default { build: { lib: { entry: 'src/index.ts' } } }" },
        { dir: '.', text: '{"main": "src/index.js", "require": "/etc/passwd"}' },
      ],
      tracked,
    );
    expect(found).toEqual([]);
  });
});
