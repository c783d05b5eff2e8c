import { describe, expect, it } from 'vitest';
import {
  isTestConfig,
  isTestFile,
  packageWithBaselineTestKeys,
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
