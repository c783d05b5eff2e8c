/**
 * Which files of a repository are its tests and its test configuration: the things a verdict must judge
 * a fix with as they were at baseline, so a "fix" that weakens a test cannot verify itself.
 */
import { basename, posix } from 'node:path';
import type { SuiteRun, TestResult } from './types.js';

/** Folders whose every file belongs to the tests (fixtures, snapshots, helpers). */
export const TEST_DIRS: ReadonlySet<string> = new Set([
  'test',
  'tests',
  '__tests__',
  'spec',
  '__snapshots__',
  '__fixtures__',
  'testdata',
]);

/** File names that are test files by each ecosystem's convention. */
const TEST_NAMES = [
  /\.(test|spec)\.[cm]?[jt]sx?$/,
  /\.(test|spec)\.\w+$/,
  /^test_.*\.py$/,
  /_test\.py$/,
  /_test\.go$/,
  /\.snap$/,
];

/** Files that decide how the tests run: runner configs, preloads, coverage thresholds. */
const CONFIG_NAMES = [
  /^conftest\.py$/,
  /^pytest\.ini$/,
  /^tox\.ini$/,
  /^\.mocharc(\.\w+)?$/,
  /^(jest|vitest|vite|ava|playwright|karma|jasmine|cypress|wdio|babel)\.config\.\w+$/,
  /^vitest\.(workspace|setup)\.\w+$/,
  /^jest\.setup\.\w+$/,
  /^\.taprc(\.\w+)?$/,
  /^\.c8rc(\.\w+)?$/,
  /^\.nycrc(\.\w+)?$/,
  /^\.babelrc(\.\w+)?$/,
  /^setup\.cfg$/,
  /^pyproject\.toml$/,
  /^package\.json$/,
  /^\.coveragerc$/,
  /^noxfile\.py$/,
];

/** package.json keys that change how the tests run; a fix may change the rest (dependencies, exports). */
export const PACKAGE_TEST_KEYS = ['scripts', 'jest', 'ava', 'mocha', 'c8', 'nyc', 'tap', 'vitest', 'xo'];

/** Sections of pyproject.toml / setup.cfg that configure the tests; the rest is the package's own. */
const TEST_SECTION = /^\[(tool[.:](pytest|coverage|tox|hatch\.envs)|pytest|coverage)/;

/** Whether a repository path (forward slashes) is a test file by convention. */
export function isTestFile(path: string): boolean {
  const parts = path.split('/');
  const name = parts.at(-1) ?? path;
  // Rust integration tests live in tests/, like everyone else's; a folder anywhere counts
  if (parts.slice(0, -1).some((dir) => TEST_DIRS.has(dir))) return true;
  return TEST_NAMES.some((pattern) => pattern.test(name));
}

/** Whether a repository path is test configuration (some only in part: see `testConfigView`). */
export function isTestConfig(path: string): boolean {
  const name = basename(path);
  return CONFIG_NAMES.some((pattern) => pattern.test(name));
}

/**
 * The part of a configuration file that matters to the tests, as text to compare: the test keys of a
 * package.json, the test sections of pyproject.toml and setup.cfg, the whole file for the rest.
 */
export function testConfigView(path: string, content: string): string {
  const name = basename(path);
  if (name === 'package.json') {
    const parsed = parseObject(content);
    // unparsable JSON: the whole text decides
    if (parsed === undefined) return content;
    return JSON.stringify(PACKAGE_TEST_KEYS.map((key) => [key, parsed[key] ?? null]));
  }
  if (name === 'pyproject.toml' || name === 'setup.cfg') return testSections(content);
  return content;
}

/**
 * The model's package.json with the test keys put back as they were at baseline, so its dependency
 * changes stay while its script changes do not count; undefined when either side is not a JSON object.
 */
export function packageWithBaselineTestKeys(baseline: string, current: string): string | undefined {
  const base = parseObject(baseline);
  const now = parseObject(current);
  if (base === undefined || now === undefined) return undefined;
  for (const key of PACKAGE_TEST_KEYS) {
    if (key in base) now[key] = base[key];
    else delete now[key];
  }
  return `${JSON.stringify(now, null, 2)}\n`;
}

// Flags that load code into the test process before the tests: node's, and runners' setup options
const PRELOAD_FLAG =
  /(?:^|[\s'"=])(?:--import|--require|-r|--loader|--experimental-loader|--setup-files?|--setupFiles|--globalSetup)(?:=|\s+)(['"]?)([^\s'"]+)\1/g;
// Config keys whose values are files the runner loads (jest/vitest setup files, mocha/ava `require`, tap `node-arg`)
const PRELOAD_KEY =
  /["']?\b(setupFiles\w*|globalSetup|globalTeardown|require|import|loader|testEnvironment|nodeArguments|node-arg|snapshotResolver)\b["']?\s*[:=]\s*(\[[^\]]*\]|'[^']*'|"[^"]*"|[^\s,}]+)/g;
const STRING = /['"]([^'"\n]+)['"]|([^\s'",[\]]+)/g;
const LOADABLE = ['', '.js', '.mjs', '.cjs', '.ts', '.mts', '.cts', '.jsx', '.tsx', '/index.js', '/index.ts'];

/**
 * Files of the repository that the test command or the test configuration loads into the test process:
 * `node --import ./setup.js`, `-r`, NODE_OPTIONS in a script, jest or vitest `setupFiles`, mocha's and
 * ava's `require`. A fix that edits one (to make `assert` always pass, say) weakens the tests as surely as
 * an edit to a test file. `sources` are texts with the folder their paths are relative to; only a path that
 * is a file in `tracked` counts, so package names (`ts-node/register`) and a build's entry points do not.
 */
export function preloadedFiles(
  sources: Array<{ dir: string; text: string }>,
  tracked: Set<string>,
): string[] {
  const found = new Set<string>();
  const add = (dir: string, raw: string): void => {
    const name = raw.replace(/^<rootDir>\//, '').replace(/^file:\/\//, '');
    if (name.startsWith('/') || !/[./]/.test(name)) return;
    const path = posix.normalize(posix.join(dir, name));
    if (path.startsWith('..')) return;
    const hit = LOADABLE.map((ext) => path + ext).find((candidate) => tracked.has(candidate));
    if (hit !== undefined) found.add(hit);
  };
  for (const { dir, text } of sources) {
    for (const match of text.matchAll(PRELOAD_FLAG)) add(dir, match[2] ?? '');
    for (const match of text.matchAll(PRELOAD_KEY)) {
      for (const value of (match[2] ?? '').matchAll(STRING)) add(dir, value[1] ?? value[2] ?? '');
    }
  }
  return [...found].sort();
}

/**
 * The test files a baseline run named, relative to the suite's root (the runner's own report). A Python
 * module whose only results are its doctests (pytest's `--doctest-modules`) is code, not a test file:
 * its doctests still count as tests, and an edit to its code is the fix.
 */
export function reportedTestFiles(run: SuiteRun): string[] {
  const doctests = new Set(reportedDoctestModules(run));
  return reportedFiles(run).filter((file) => !doctests.has(file));
}

/** The Python modules a baseline run named whose only results are their doctests: code with tests in it. */
export function reportedDoctestModules(run: SuiteRun): string[] {
  const doctestOnly = new Map<string, boolean>();
  for (const result of run.results) {
    const file = fileOf(result);
    if (file?.endsWith('.py'))
      doctestOnly.set(file, (doctestOnly.get(file) ?? true) && isDoctest(result, file));
  }
  return [...doctestOnly].filter(([, only]) => only).map(([file]) => file);
}

/**
 * A module's doctest examples as text to compare: each `>>>` line with its `...` continuations and its
 * expected output. An edit that changes them changes the tests, whatever else it fixes.
 */
export function doctestExamples(content: string): string {
  const kept: string[] = [];
  let inExample = false;
  for (const line of content.split('\n')) {
    const text = line.trim();
    if (text.startsWith('>>>')) inExample = true;
    else if (text === '' || text.startsWith('"""') || text.startsWith("'''")) inExample = false;
    if (inExample) kept.push(text);
  }
  return kept.join('\n');
}

function reportedFiles(run: SuiteRun): string[] {
  const files = new Set<string>();
  for (const result of run.results) {
    const file = fileOf(result);
    if (file !== undefined) files.add(file);
  }
  return [...files];
}

/** The repository file a result names, relative to the suite's root; undefined when it names none. */
function fileOf(result: TestResult): string | undefined {
  const file = result.file ?? result.id.split(' > ')[0];
  // only a relative path names a file of the repository; an absolute or `..` one is elsewhere
  if (!file || file.startsWith('/') || file.startsWith('..') || !/\.\w+$/.test(file)) return undefined;
  return file;
}

/**
 * Whether a pytest result is a doctest: pytest names one by the dotted path of what it documents
 * (`inflection.camelize`, or the module itself), which a test function's name (an identifier, perhaps
 * with `[params]`) never is.
 */
function isDoctest(result: TestResult, file: string): boolean {
  const name = (result.name ?? '').split('[')[0] ?? '';
  // a module that could not be collected is reported under its own path
  if (name === file) return false;
  if (name.includes('.')) return true;
  const module = basename(file, '.py');
  const owner = module === '__init__' ? basename(posix.dirname(file)) : module;
  return name === owner;
}

function testSections(content: string): string {
  const kept: string[] = [];
  let inTest = false;
  for (const line of content.split('\n')) {
    const header = /^\s*\[/.test(line);
    if (header) inTest = TEST_SECTION.test(line.trim());
    if (inTest) kept.push(line.trimEnd());
  }
  return kept.join('\n');
}

/** A JSON object from text, or undefined for anything else (absent, not JSON, not an object). */
export function parseObject(text: string | undefined): Record<string, unknown> | undefined {
  if (text === undefined) return undefined;
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}
