/**
 * The files each runner loads as tests, by its own defaults and the project's configuration: ava's
 * `files`, jest's `testMatch`, vitest's `include`, mocha's `spec`, pytest's `python_files` within its
 * `testpaths`. A folder-name convention misses a root `test.js` (ava's and tap's default) or a
 * `checks/*.js` that `ava.files` names; this reads what the runner would.
 */
import { posix } from 'node:path';
import picomatch from 'picomatch';
import { parseObject } from './test-files.js';

/** Read a repository file (repository-top path) as text; undefined when it is not there. */
export type ReadFile = (path: string) => string | undefined;

/** Runners' defaults that no folder name catches: ava's `test.js` and `test-*.js`, tap's `test(s).js`. */
const DEFAULT_GLOBS = ['**/test?(s).?(c|m)[jt]s?(x)', '**/test-*.?(c|m)[jt]s?(x)'];

// Config files whose arrays of globs name the test files: ava, jest, vitest/vite, mocha
const JS_CONFIG = /^(ava|jest|vitest|vite)\.config\.\w+$|^vitest\.workspace\.\w+$|^\.mocharc(\.\w+)?$/;
// `files: [...]`, `testMatch: [...]`, `include: [...]`, `spec: [...]` (or a single string) in JS/JSON/YAML
const GLOB_KEYS = /["']?\b(files|testMatch|include|spec)\b["']?\s*[:=]\s*(\[[^\]]*\]|'[^']*'|"[^"]*")/g;
const STRINGS = /['"]([^'"\n]+)['"]/g;
// .mocharc.yml: `spec:` followed by `- glob` lines
const YAML_LIST = /^spec:\s*\n((?:\s*-\s*.+\n?)+)/m;

// pytest's ini-style options, in pytest.ini, tox.ini, setup.cfg and pyproject.toml
const PYTEST_FILES = ['pytest.ini', 'tox.ini', 'setup.cfg', 'pyproject.toml'];
const PYTEST_DEFAULT_FILES = ['test_*.py', '*_test.py'];

/**
 * A matcher for the paths (repository-top, forward slashes) the runners of this repository load as
 * tests. `tracked` is every tracked path, to find the config files in any package folder.
 */
export function runnerTestMatcher(tracked: string[], read: ReadFile): (path: string) => boolean {
  const globs = [...DEFAULT_GLOBS];
  for (const path of tracked) {
    const dir = posix.dirname(path);
    const name = posix.basename(path);
    const under = (glob: string): string =>
      dir === '.' ? glob.replace(/^\.\//, '') : posix.join(dir, glob.replace(/^\.\//, ''));
    if (name === 'package.json') globs.push(...packageGlobs(read(path)).map(under));
    else if (JS_CONFIG.test(name)) globs.push(...configGlobs(read(path) ?? '').map(under));
    else if (PYTEST_FILES.includes(name)) globs.push(...pytestGlobs(read(path) ?? '').map(under));
  }
  // a negated glob (`!**/fixtures/**`) narrows what runs; protecting more is the safe side, so it is ignored
  const matchers = globs
    .filter((glob) => !glob.startsWith('!'))
    .map((glob) => picomatch(glob, { dot: true }));
  const regexes = tracked.flatMap((path) => jestRegexes(path, read));
  return (path) => [...matchers, ...regexes].some((isMatch) => isMatch(path));
}

/** jest's `testRegex` (package.json or jest.config), matched against the path below the config's folder. */
function jestRegexes(path: string, read: ReadFile): Array<(path: string) => boolean> {
  const name = posix.basename(path);
  let sources: string[] = [];
  if (name === 'package.json') {
    const value = parseObject(JSON.stringify(parseObject(read(path))?.jest ?? null))?.testRegex;
    sources = typeof value === 'string' ? [value] : Array.isArray(value) ? value.map(String) : [];
  } else if (/^jest\.config\.\w+$/.test(name)) {
    const match = /\btestRegex\s*:\s*(\[[^\]]*\]|'[^']*'|"[^"]*"|\/.+\/\w*)/.exec(read(path) ?? '');
    const value = match?.[1] ?? '';
    sources = value.startsWith('/')
      ? [value.slice(1, value.lastIndexOf('/'))]
      : [...value.matchAll(STRINGS)].map((m) => (m[1] ?? '').replace(/\\\\/g, '\\'));
  }
  const dir = posix.dirname(path);
  return sources.flatMap((source) => {
    try {
      const re = new RegExp(source);
      const prefix = dir === '.' ? '' : `${dir}/`;
      return [(p: string) => p.startsWith(prefix) && re.test(p.slice(prefix.length))];
    } catch {
      return [];
    }
  });
}

/** `ava.files`, `jest.testMatch`, `mocha.spec`, `vitest.include` of a package.json. */
function packageGlobs(text: string | undefined): string[] {
  const pkg = parseObject(text);
  if (pkg === undefined) return [];
  const pick = (section: string, key: string): string[] => {
    const value = parseObject(JSON.stringify(pkg[section] ?? null))?.[key];
    if (typeof value === 'string') return [value];
    return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
  };
  return [
    ...pick('ava', 'files'),
    ...pick('jest', 'testMatch'),
    ...pick('mocha', 'spec'),
    ...pick('vitest', 'include'),
  ].map(rootDirless);
}

/** The glob strings a runner's config file names under its test-file keys. */
function configGlobs(text: string): string[] {
  const found: string[] = [];
  for (const match of text.matchAll(GLOB_KEYS)) {
    for (const value of (match[2] ?? '').matchAll(STRINGS)) found.push(value[1] ?? '');
  }
  const yaml = YAML_LIST.exec(text)?.[1] ?? '';
  for (const line of yaml.split('\n')) {
    const item = /^\s*-\s*['"]?([^'"\n]+?)['"]?\s*$/.exec(line)?.[1];
    if (item !== undefined) found.push(item);
  }
  return found.filter((glob) => /[*/.]/.test(glob)).map(rootDirless);
}

/**
 * pytest's test modules: `python_files` patterns (default `test_*.py`, `*_test.py`) anywhere under each of
 * `testpaths` (default: everywhere). A module outside them that pytest collects is a doctest module: code.
 */
function pytestGlobs(text: string): string[] {
  const section = pytestSection(text);
  if (section === undefined) return [];
  const files = option(section, 'python_files') ?? PYTEST_DEFAULT_FILES;
  const paths = option(section, 'testpaths') ?? ['.'];
  return paths.flatMap((dir) =>
    files.map((file) => (dir === '.' ? `**/${file}` : `${dir.replace(/\/$/, '')}/**/${file}`)),
  );
}

/** The text of the pytest section of an ini/cfg/toml file, or undefined when it has none. */
function pytestSection(text: string): string | undefined {
  const lines = text.split('\n');
  const start = lines.findIndex((line) =>
    /^\s*\[(pytest|tool:pytest|tool\.pytest\.ini_options)\]/.test(line),
  );
  if (start < 0) return undefined;
  const end = lines.findIndex((line, i) => i > start && /^\s*\[/.test(line));
  return lines.slice(start + 1, end < 0 ? undefined : end).join('\n');
}

/** An option's words: ini style (`key = a b` with continuation lines) or toml (`key = ["a", "b"]`). */
function option(section: string, key: string): string[] | undefined {
  const match = new RegExp(`^${key}\\s*=\\s*(.*(?:\\n[ \\t]+.*)*)`, 'm').exec(section);
  if (match === null) return undefined;
  const value = match[1] ?? '';
  const words = value.startsWith('[')
    ? [...value.matchAll(STRINGS)].map((m) => m[1] ?? '')
    : value.split(/\s+/).filter(Boolean);
  return words.length === 0 ? undefined : words;
}

/** jest's `<rootDir>/` means the config's folder; a leading `./` means the same. */
function rootDirless(glob: string): string {
  return glob.replace(/^<rootDir>\//, '').replace(/^\.\//, '');
}
