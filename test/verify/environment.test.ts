import { describe, expect, it } from 'vitest';
import { findEnvironmentProblem } from '../../src/verify/environment.js';
import type { TestResult } from '../../src/verify/types.js';

const problem = (output: string, exitCode: number | null = 1, results: TestResult[] = []) =>
  findEnvironmentProblem({ exitCode, output, results, isLocalModule: (name) => name === 'myapp' });

describe('findEnvironmentProblem', () => {
  it('never blames the environment for a run that passed', () => {
    expect(problem("Error: Cannot find module 'lodash'", 0)).toBeUndefined();
  });

  it('names missing commands from the shell, not from lines tests print', () => {
    expect(problem('sh: 1: jest: not found', 127)).toBe('command not found: jest');
    expect(problem('bash: line 1: cargo: command not found', 127)).toBe('command not found: cargo');
    expect(problem('zsh: command not found: go', 127)).toBe('command not found: go');
    expect(problem('/bin/sh: 1: pytest: not found', 127)).toBe(
      'pytest is not installed (command not found: pytest)',
    );
    expect(problem('user.json: not found')).toBeUndefined();
    expect(problem('', 127)).toBe('a command the tests need was not found (exit 127)');
  });

  it('names missing packages and modules, but not missing parts of the project', () => {
    expect(
      problem("Error [ERR_MODULE_NOT_FOUND]: Cannot find package '@scope/pkg' imported from /p/a.js"),
    ).toBe('Node package not installed: @scope/pkg');
    expect(problem("Cannot find module 'lodash/fp' from 'src/a.test.js'")).toBe(
      'Node package not installed: lodash',
    );
    expect(problem("Cannot find module '/p/node_modules/x/dist/index.js'")).toBe(
      'Node package install is broken: /p/node_modules/x/dist/index.js is missing',
    );
    expect(problem("Cannot find module './helpers' from 'src/a.test.js'")).toBeUndefined();
    expect(problem('/usr/bin/python3: No module named pytest')).toBe(
      'pytest is not installed (No module named pytest)',
    );
    expect(problem("ModuleNotFoundError: No module named 'numpy.linalg'")).toBe(
      'Python module not installed: numpy.linalg',
    );
    expect(problem("ModuleNotFoundError: No module named 'myapp.models'")).toBeUndefined();
    expect(problem('calc.go:3:2: no required module provides package github.com/x/y; to add it:')).toBe(
      'Go module not available: github.com/x/y',
    );
    expect(problem('npm error Missing script: "test"')).toBe('package.json has no "test" script');
  });

  it('reads failure messages too, where a runner puts what the log does not', () => {
    const results: TestResult[] = [
      { id: 'a', name: 'a', status: 'failed', message: "ModuleNotFoundError: No module named 'yaml'" },
    ];
    expect(problem('1 failed', 1, results)).toBe('Python module not installed: yaml');
  });

  it('names an unreachable network host, but not a refused connection to this machine', () => {
    expect(problem('npm error getaddrinfo ENOTFOUND registry.npmjs.org')).toBe(
      'network unavailable: cannot reach registry.npmjs.org',
    );
    expect(problem('Error: getaddrinfo EAI_AGAIN pypi.org')).toBe(
      'network unavailable: cannot reach pypi.org',
    );
    expect(problem('Error: connect ECONNREFUSED 10.0.0.5:5432')).toBe(
      'network unavailable: cannot reach 10.0.0.5',
    );
    expect(problem('Error: connect ECONNREFUSED 127.0.0.1:5432')).toBeUndefined();
    expect(problem('Error: connect ECONNREFUSED ::1:8080')).toBeUndefined();
    expect(problem('warning: spurious network error: Could not resolve host: index.crates.io')).toBe(
      'network unavailable: cannot reach index.crates.io',
    );
  });

  it("names the host from npm's own lines, not a word on the next line", () => {
    const npm = [
      'npm error code ENOTFOUND',
      'npm error syscall getaddrinfo',
      'npm error errno ENOTFOUND',
      'npm error network request to https://registry.npmjs.org/left-pad failed, reason: getaddrinfo ENOTFOUND registry.npmjs.org',
    ].join('\n');
    expect(problem(npm)).toBe('network unavailable: cannot reach registry.npmjs.org');
  });

  it('names the package manager corepack would download and the field that pins it', () => {
    const found = problem(
      "Network access disabled by the environment; can't reach https://registry.npmjs.org/pnpm/-/pnpm-9.1.0.tgz",
    );
    expect(found).toContain('corepack would download pnpm@9.1.0');
    expect(found).toContain('"packageManager" field');
    // with the network namespace empty, corepack says it was about to download, then that the request failed
    const offline = [
      '! Corepack is about to download https://registry.npmjs.org/pnpm/-/pnpm-9.15.0.tgz',
      'Error: Error when performing the request to https://registry.npmjs.org/pnpm/-/pnpm-9.15.0.tgz; for troubleshooting help, see https://github.com/nodejs/corepack#troubleshooting',
      '  [cause]: TypeError: fetch failed',
      'getaddrinfo ENOTFOUND registry.npmjs.org',
    ].join('\n');
    expect(problem(offline)).toContain('corepack would download pnpm@9.15.0');
  });

  it('calls a write to a read-only folder the environment, naming the folder', () => {
    expect(problem("Error: EROFS: read-only file system, mkdir '/p/node_modules/.cache/xo-linter'")).toBe(
      'a tool the tests run wrote to a read-only folder: /p/node_modules/.cache/xo-linter (the sandbox keeps dependency folders and .git read-only)',
    );
    expect(problem("OSError: [Errno 30] Read-only file system: '/p/.venv/x'")).toContain('/p/.venv/x');
  });
});
