import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir, writeFiles } from '../helpers/tmp.js';
import { byId, runProject } from './run-project.js';

describe('pytest', () => {
  const files = {
    // the project root on sys.path, as a real project configures it
    'pytest.ini': '[pytest]\npythonpath = .\n',
    'calc.py': 'def add(a, b):\n    return a + b\n',
    'tests/test_calc.py': `import pytest
from calc import add

def test_add():
    assert add(1, 2) == 3

def test_broken():
    assert add(2, 2) == 5, "two and two"

@pytest.mark.skip(reason="not yet")
def test_later():
    pass

class TestMore:
    def test_method(self):
        assert True
`,
  };

  it('reads pass, fail and skip from its JUnit report without leaving a cache behind', async () => {
    const root = tempDir();
    writeFiles(root, files);
    const run = await runProject(root);
    expect(run).toMatchObject({ runner: 'pytest', parsed: true, exitCode: 1, collected: 4 });
    expect(Object.fromEntries(run.results.map((r) => [r.id, r.status]))).toEqual({
      'tests/test_calc.py > test_add': 'passed',
      'tests/test_calc.py > test_broken': 'failed',
      'tests/test_calc.py > test_later': 'skipped',
      'tests/test_calc.py > TestMore > test_method': 'passed',
    });
    expect(byId(run)['tests/test_calc.py > test_broken']?.message).toMatch(/two and two/);
    expect(existsSync(join(root, '.pytest_cache'))).toBe(false);
  });

  it('selects by name with -k', async () => {
    const root = tempDir();
    writeFiles(root, files);
    const run = await runProject(root, { filter: 'test_add' });
    expect(run.results.map((r) => r.id)).toEqual(['tests/test_calc.py > test_add']);
    expect(run.exitCode).toBe(0);
  });

  it('collects zero tests from an empty suite', async () => {
    const root = tempDir();
    writeFiles(root, { 'pytest.ini': '[pytest]\n', 'tests/test_none.py': '# nothing\n' });
    const run = await runProject(root);
    expect(run).toMatchObject({ exitCode: 5, collected: 0, parsed: true });
  });
});

describe('python environment problems', () => {
  it('names a Python module that is not installed, but not a missing part of the project', async () => {
    const missing = tempDir();
    writeFiles(missing, {
      'tests/test_a.py': 'import requests_not_installed_xyz\n\ndef test_a():\n    pass\n',
    });
    expect((await runProject(missing)).environmentProblem).toBe(
      'Python module not installed: requests_not_installed_xyz',
    );

    const local = tempDir();
    writeFiles(local, {
      'mypkg/__init__.py': '',
      'tests/test_a.py': 'import mypkg.not_written\n\ndef test_a():\n    pass\n',
    });
    const run = await runProject(local);
    expect(run.exitCode).not.toBe(0);
    expect(run.environmentProblem).toBeUndefined();
  });
});
