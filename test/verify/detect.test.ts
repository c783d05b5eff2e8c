import { describe, expect, it } from 'vitest';
import { detectTestCommand, fromCommand, runnerOf } from '../../src/verify/detect.js';
import { tempDir, writeFiles } from '../helpers/tmp.js';

function project(files: Record<string, string>): string {
  const root = tempDir();
  writeFiles(root, files);
  return root;
}

const pkg = (test: string) => JSON.stringify({ name: 'p', scripts: { test } });

describe('detectTestCommand', () => {
  it('uses package.json scripts.test and names the runner inside it', () => {
    const root = project({ 'package.json': pkg('vitest run') });
    expect(detectTestCommand(root)).toEqual({
      command: 'npm test',
      runner: 'vitest',
      source: 'package.json scripts.test',
      script: 'vitest run',
    });
  });

  it('follows a chain in scripts.test to its steps: the runner, and the rest as checks', () => {
    const root = project({ 'package.json': pkg('tsc -p . && vitest run') });
    expect(detectTestCommand(root)).toEqual({
      command: 'npm test',
      runner: 'vitest',
      source: 'package.json scripts.test',
      steps: [
        { name: 'test: tsc', command: 'tsc -p .', runner: 'unknown' },
        { name: 'test: vitest', command: 'vitest run', runner: 'vitest' },
      ],
    });
  });

  it("skips npm's placeholder script and falls through to the Python tests", () => {
    const root = project({
      'package.json': pkg('echo "Error: no test specified" && exit 1'),
      'tests/test_calc.py': 'def test_x(): pass\n',
    });
    expect(detectTestCommand(root)).toEqual({
      command: 'pytest',
      runner: 'pytest',
      source: 'tests/test_calc.py',
    });
  });

  it('finds pytest from each kind of configuration', () => {
    const cases: Array<[Record<string, string>, string]> = [
      [{ 'pytest.ini': '[pytest]\n' }, 'pytest.ini'],
      [
        { 'pyproject.toml': '[project]\nname="x"\n\n[tool.pytest.ini_options]\naddopts="-q"\n' },
        'pyproject.toml [tool.pytest]',
      ],
      [{ 'setup.cfg': '[metadata]\nname=x\n[tool:pytest]\n' }, 'setup.cfg [tool:pytest]'],
      [{ 'tox.ini': '[tox]\n[testenv]\ncommands = pytest\n' }, 'tox.ini'],
      [{ 'conftest.py': '' }, 'conftest.py'],
      [{ 'test_root.py': '' }, 'test_root.py'],
    ];
    for (const [files, source] of cases) {
      expect(detectTestCommand(project(files))).toMatchObject({ runner: 'pytest', source });
    }
    // a pyproject without pytest settings says nothing about tests
    expect(detectTestCommand(project({ 'pyproject.toml': '[project]\nname="x"\n' }))).toBeUndefined();
  });

  it("prefers the project's virtualenv pytest", () => {
    const root = project({ 'pytest.ini': '', '.venv/bin/pytest': '#!/bin/sh\n' });
    expect(detectTestCommand(root)?.command).toBe('.venv/bin/pytest');
  });

  it('runs go and cargo suites from their manifests', () => {
    expect(detectTestCommand(project({ 'go.mod': 'module x\n' }))).toEqual({
      command: 'go test ./...',
      runner: 'go',
      source: 'go.mod',
    });
    expect(detectTestCommand(project({ 'Cargo.toml': '[package]\n' }))).toEqual({
      command: 'cargo test',
      runner: 'cargo',
      source: 'Cargo.toml',
    });
  });

  it('returns undefined when nothing says how to test', () => {
    expect(
      detectTestCommand(project({ 'README.md': '# hi\n', 'package.json': '{"name":"x"}' })),
    ).toBeUndefined();
    expect(detectTestCommand(project({ 'package.json': 'not json' }))).toBeUndefined();
  });
});

describe('runnerOf', () => {
  it('classifies commands by the runner they start', () => {
    const cases: Array<[string, string]> = [
      ['vitest', 'vitest'],
      ['npx vitest run --coverage', 'vitest'],
      ['tsc && jest --ci', 'jest'],
      ['./node_modules/.bin/jest', 'jest'],
      ['react-scripts test', 'jest'],
      ['node --test', 'node-test'],
      ['node --test-reporter=tap --test test/', 'node-test'],
      ['mocha "test/**/*.spec.js"', 'mocha'],
      ['tape test/*.js', 'tap'],
      ['tap --reporter=tap', 'tap'],
      ['python -m pytest -q', 'pytest'],
      ['python3.11 -m pytest', 'pytest'],
      ['pytest tests/', 'pytest'],
      ['go test ./...', 'go'],
      ['cargo test --workspace', 'cargo'],
      ['cargo build', 'unknown'],
      ['make test', 'unknown'],
      ['node scripts/test.js', 'unknown'],
      ['vitest run && eslint .', 'vitest'],
    ];
    for (const [command, runner] of cases) expect([command, runnerOf(command)]).toEqual([command, runner]);
  });

  it('resolves a package-manager command to the script it runs', () => {
    const root = project({
      'package.json': JSON.stringify({ scripts: { test: 'jest', 'test:unit': 'vitest run' } }),
    });
    expect(fromCommand(root, 'npm test')).toMatchObject({ runner: 'jest', script: 'jest' });
    expect(fromCommand(root, 'npm run test:unit', 'KEEL_TEST_COMMAND')).toEqual({
      command: 'npm run test:unit',
      runner: 'vitest',
      source: 'KEEL_TEST_COMMAND',
      script: 'vitest run',
    });
    expect(fromCommand(root, 'pytest -x')).toEqual({
      command: 'pytest -x',
      runner: 'pytest',
      source: 'test command',
    });
  });
});
