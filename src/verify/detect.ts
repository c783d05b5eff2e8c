/** Test command detection: which command runs a project's suite, and which runner it is. */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { resolveScriptSteps } from './scripts.js';
import type { CommandStep, DetectedCommand, RunnerKind } from './types.js';

const SCRIPT_SOURCE = 'package.json scripts.test';

/** Find the command that runs the project's tests, or undefined when nothing says how. */
export function detectTestCommand(root: string): DetectedCommand | undefined {
  return fromPackageJson(root) ?? fromPytest(root) ?? fromGo(root) ?? fromCargo(root);
}

/**
 * Describe a command the user gave (`--test-command`, `KEEL_TEST_COMMAND`). A package-manager call such
 * as `npm test` is resolved to its script so the runner behind it is known.
 */
export function fromCommand(root: string, command: string, source = 'test command'): DetectedCommand {
  const scriptName = packageScriptName(command);
  const script = scriptName === undefined ? undefined : readScripts(root)?.[scriptName];
  const steps = followedSteps(root, command, scriptName);
  if (steps !== undefined) return { command, runner: firstRunner(steps), source, steps };
  if (typeof script === 'string') return { command, runner: runnerOf(script), source, script };
  return { command, runner: runnerOf(command), source };
}

/**
 * The steps a command's package scripts run, when following them says more than the script's own text:
 * a chain, `pre`/`post` scripts or a nested `npm run`, with at least one test runner among them.
 * Undefined when the scripts cannot be followed exactly or no step is a runner keel knows.
 */
function followedSteps(
  root: string,
  command: string,
  scriptName: string | undefined,
): CommandStep[] | undefined {
  const pkg = readPackage(root);
  if (pkg === undefined) return undefined;
  const scripts = Object.fromEntries(
    Object.entries(pkg.scripts).filter((entry): entry is [string, string] => typeof entry[1] === 'string'),
  );
  const resolved = resolveScriptSteps(command, { scripts, yarnBerry: pkg.yarnBerry });
  if (!resolved.ok) return undefined;
  const steps = resolved.steps;
  if (!steps.some((step) => runnerOf(step.command) !== 'unknown')) return undefined;
  // a script that is one runner call needs no following: `npm test -- FLAGS` reaches it as it is
  const [only] = steps;
  if (steps.length === 1 && only !== undefined && (only.script === scriptName || only.script === '')) {
    return undefined;
  }
  return nameSteps(steps.map((step) => ({ ...step, runner: runnerOf(step.command) })));
}

/** Unique step names: the script, and the program too when one script runs several commands. */
function nameSteps(steps: Array<{ script: string; command: string; runner: RunnerKind }>): CommandStep[] {
  const perScript = new Map<string, number>();
  for (const step of steps) perScript.set(step.script, (perScript.get(step.script) ?? 0) + 1);
  const used = new Map<string, number>();
  return steps.map((step) => {
    const script = step.script === '' ? 'command' : step.script;
    const base = (perScript.get(step.script) ?? 0) > 1 ? `${script}: ${programOf(step.command)}` : script;
    const count = (used.get(base) ?? 0) + 1;
    used.set(base, count);
    return { name: count === 1 ? base : `${base} [${count}]`, command: step.command, runner: step.runner };
  });
}

/** The program a simple command starts, past environment assignments and `npx`. */
function programOf(command: string): string {
  const ws = words(command).filter((word) => !/^\w+=/.test(word));
  const first =
    ws[0] === 'npx' || ws[0] === 'cross-env'
      ? ws.find((w, i) => i > 0 && !w.startsWith('-') && !/^\w+=/.test(w))
      : ws[0];
  return commandName(first ?? command);
}

function firstRunner(steps: CommandStep[]): RunnerKind {
  return steps.find((step) => step.runner !== 'unknown')?.runner ?? 'unknown';
}

/** Classify a shell command by the runner it starts; the last command of a chain that names one wins. */
export function runnerOf(command: string): RunnerKind {
  const segments = command.split(/&&|\|\||;|\||\n/).reverse();
  for (const segment of segments) {
    const runner = segmentRunner(words(segment));
    if (runner !== 'unknown') return runner;
  }
  return 'unknown';
}

/** The runner of one simple command, given its words. */
function segmentRunner(ws: string[]): RunnerKind {
  const names = ws.map(commandName);
  if (names.includes('vitest')) return 'vitest';
  if (names.includes('jest') || (names.includes('react-scripts') && names.includes('test'))) return 'jest';
  if (names.includes('mocha') || names.includes('_mocha')) return 'mocha';
  if (names.includes('pytest') || names.includes('py.test')) return 'pytest';
  const at = (name: string): number => names.indexOf(name);
  if (names.some((name) => /^python[\d.]*$/.test(name)) && ws.includes('-m') && ws.includes('pytest')) {
    return 'pytest';
  }
  if (at('node') >= 0 && ws.slice(at('node')).includes('--test')) return 'node-test';
  if (names.includes('ava')) return 'ava';
  if (names.includes('uvu')) return 'uvu';
  if (names.includes('tap') || names.includes('tape')) return 'tap';
  if (at('go') >= 0 && ws[at('go') + 1] === 'test') return 'go';
  if (at('cargo') >= 0 && ws[at('cargo') + 1] === 'test') return 'cargo';
  return 'unknown';
}

/** Whitespace-separated words with simple quotes removed; enough to spot a program name. */
export function words(segment: string): string[] {
  return segment
    .trim()
    .split(/\s+/)
    .filter((word) => word !== '')
    .map((word) => word.replace(/^['"]|['"]$/g, ''));
}

/** `./node_modules/.bin/jest` and `jest` are the same program. */
function commandName(word: string): string {
  const base = word.slice(word.lastIndexOf('/') + 1);
  return base.replace(/\.(c|m)?js$/, '');
}

/** The script a package-manager call runs: `npm test`, `npm run test:unit`, `yarn test`, `pnpm t`. */
function packageScriptName(command: string): string | undefined {
  const ws = words(command);
  const [tool, verb, name] = ws;
  if (tool !== 'npm' && tool !== 'yarn' && tool !== 'pnpm') return undefined;
  if (verb === 'test' || verb === 't' || verb === 'tst') return 'test';
  if ((verb === 'run' || verb === 'run-script') && name !== undefined) return name;
  if (tool !== 'npm' && verb !== undefined && !verb.startsWith('-')) return verb;
  return undefined;
}

function readScripts(root: string): Record<string, unknown> | undefined {
  return readPackage(root)?.scripts;
}

/** The scripts of package.json, and whether its `packageManager` is yarn 2 or later. */
function readPackage(root: string): { scripts: Record<string, unknown>; yarnBerry: boolean } | undefined {
  const text = readText(join(root, 'package.json'));
  if (text === undefined) return undefined;
  try {
    const pkg: unknown = JSON.parse(text);
    if (typeof pkg !== 'object' || pkg === null || !('scripts' in pkg)) return undefined;
    const scripts = pkg.scripts;
    if (typeof scripts !== 'object' || scripts === null) return undefined;
    const manager =
      'packageManager' in pkg && typeof pkg.packageManager === 'string' ? pkg.packageManager : '';
    return { scripts: scripts as Record<string, unknown>, yarnBerry: /^yarn@[2-9]|^yarn@\d\d/.test(manager) };
  } catch {
    return undefined;
  }
}

function fromPackageJson(root: string): DetectedCommand | undefined {
  const script = readScripts(root)?.test;
  if (typeof script !== 'string' || script.trim() === '') return undefined;
  // npm init writes a test script that only fails; it says nothing about the project's tests
  if (/no test specified/i.test(script)) return undefined;
  // npm works for any package.json; yarn and pnpm pass `--` through differently between versions
  const steps = followedSteps(root, 'npm test', 'test');
  if (steps !== undefined)
    return { command: 'npm test', runner: firstRunner(steps), source: SCRIPT_SOURCE, steps };
  return { command: 'npm test', runner: runnerOf(script), source: SCRIPT_SOURCE, script };
}

function fromPytest(root: string): DetectedCommand | undefined {
  const source = pytestEvidence(root);
  if (source === undefined) return undefined;
  // a project virtualenv has the pytest (and the dependencies) the project expects
  const venv = ['.venv/bin/pytest', 'venv/bin/pytest'].find((path) => existsSync(join(root, path)));
  return { command: venv ?? 'pytest', runner: 'pytest', source };
}

function pytestEvidence(root: string): string | undefined {
  if (existsSync(join(root, 'pytest.ini'))) return 'pytest.ini';
  if (/^\[tool\.pytest/m.test(readText(join(root, 'pyproject.toml')) ?? '')) {
    return 'pyproject.toml [tool.pytest]';
  }
  if (/^\[tool:pytest\]/m.test(readText(join(root, 'setup.cfg')) ?? '')) return 'setup.cfg [tool:pytest]';
  const tox = readText(join(root, 'tox.ini'));
  if (tox !== undefined && /pytest/.test(tox)) return 'tox.ini';
  if (existsSync(join(root, 'conftest.py'))) return 'conftest.py';
  for (const dir of ['tests', 'test', '.']) {
    const found = listDir(join(root, dir)).find((name) => /^test_.*\.py$|^.+_test\.py$/.test(name));
    if (found !== undefined) return dir === '.' ? found : `${dir}/${found}`;
  }
  return undefined;
}

function fromGo(root: string): DetectedCommand | undefined {
  if (!existsSync(join(root, 'go.mod'))) return undefined;
  return { command: 'go test ./...', runner: 'go', source: 'go.mod' };
}

function fromCargo(root: string): DetectedCommand | undefined {
  if (!existsSync(join(root, 'Cargo.toml'))) return undefined;
  return { command: 'cargo test', runner: 'cargo', source: 'Cargo.toml' };
}

function readText(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

function listDir(path: string): string[] {
  try {
    return readdirSync(path);
  } catch {
    return [];
  }
}
