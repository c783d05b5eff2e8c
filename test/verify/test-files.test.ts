import { describe, expect, it } from 'vitest';
import { runnerTestMatcher } from '../../src/verify/runner-test-files.js';
import {
  isTestConfig,
  isTestFile,
  packageWithBaselineTestKeys,
  preloadedFiles,
  reportedTestFiles,
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

describe('the files each runner loads as tests', () => {
  const matcher = (files: Record<string, string>) =>
    runnerTestMatcher(Object.keys(files), (path) => files[path]);

  it("reads the runners' defaults and each config's globs, relative to the config's folder", () => {
    const loads = matcher({
      'package.json': JSON.stringify({ jest: { testMatch: ['<rootDir>/checks/**/*.js'] } }),
      'web/.mocharc.yml': 'spec:\n  - specs/**/*.cjs\n',
      'py/setup.cfg': '[tool:pytest]\npython_files = check_*.py\ntestpaths = suite\n',
      'src/index.js': '',
      'app/package.json': JSON.stringify({ jest: { testRegex: '(/checks/.*|\\.check)\\.js$' } }),
    });
    for (const path of [
      'test.js',
      'test-mean.mjs',
      'lib/tests.ts',
      'checks/a/mean.js',
      'web/specs/x.cjs',
      'py/suite/deep/check_mean.py',
      'app/lib/mean.check.js',
    ])
      expect(loads(path), path).toBe(true);
    for (const path of [
      'src/index.js',
      'specs/x.cjs',
      'py/check_mean.py',
      'py/suite/mean.py',
      'testing.js',
      'app/lib/mean.js',
    ])
      expect(loads(path), path).toBe(false);
  });

  it('a module whose only results are doctests is code; a test module is a test file', () => {
    const result = (file: string, name: string) => ({
      id: `${file} > ${name}`,
      name,
      file,
      status: 'passed' as const,
    });
    const run = {
      command: 'pytest',
      runner: 'pytest' as const,
      exitCode: 0,
      timedOut: false,
      durationMs: 1,
      output: '',
      parsed: true,
      collected: 4,
      results: [
        result('inflection/__init__.py', 'inflection.camelize'),
        result('inflection/__init__.py', 'inflection'),
        result('checks.py', 'test_camelize[a.b]'),
        result('mixed.py', 'mixed.helper'),
        result('mixed.py', 'test_helper'),
      ],
    };
    expect(reportedTestFiles(run).sort()).toEqual(['checks.py', 'mixed.py']);
  });
});
