/**
 * The verdict judges a fix with the repository's own tests as they were at baseline: before the
 * verifier's run, the model's edits to existing test files and test configuration are set aside and the
 * baseline's versions put back; afterwards the model's versions return, so the attempt's diff is what it
 * wrote. New test files stay and run on top.
 */
import { createHash } from 'node:crypto';
import {
  chmodSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { basename, dirname, join, relative } from 'node:path';
import { gitBuffer, gitTry } from '../policy/git.js';
import { runnerTestMatcher } from '../verify/runner-test-files.js';
import {
  doctestExamples,
  isTestConfig,
  isTestFile,
  packageWithBaselineTestKeys,
  preloadedFiles,
  reportedDoctestModules,
  reportedTestFiles,
  testConfigView,
} from '../verify/test-files.js';
import type { SuiteRun } from '../verify/types.js';
import type { Snapshot } from './snapshot.js';

/** What a path held: a file (bytes and mode), a symbolic link, or nothing. */
type Entry =
  | { kind: 'file'; data: Buffer; mode: number }
  | { kind: 'link'; target: string }
  | { kind: 'none' };

/** The model's edits to the tests, and how to put its versions back after the verdict. */
export interface TestGuard {
  /** Existing test files and test configuration the attempt changed, and test configuration it added. */
  edits: string[];
  /** Why the baseline's tests could not be put in place (a test folder replaced by a link); the verdict fails. */
  unsafe?: string;
  /** Put the model's versions back; a no-op when nothing was set aside. */
  restore(): void;
}

/** Names a fix may legitimately add that only look like test configuration (a new package's manifest). */
const ADDABLE_CONFIG = new Set(['package.json', 'pyproject.toml', 'setup.cfg']);

/** The modules whose only tests are their doctests (pytest's `--doctest-modules`), as repository-top paths. */
export function baselineDoctestModules(snapshot: Snapshot, baseline: SuiteRun): Set<string> {
  const prefix = relative(snapshot.top, snapshot.dir);
  return new Set(reportedDoctestModules(baseline).map((file) => (prefix ? join(prefix, file) : file)));
}

/**
 * The test files and configuration the snapshot holds at its base commit, as repository-top paths: the
 * files the runner's own baseline report named, each ecosystem's conventions, the files each runner's
 * defaults and configuration load as tests (ava's root `test.js`, jest's `testMatch`...), and the files the test
 * command and configuration load into the test process (preloads, setup files).
 */
export function baselineTestPaths(snapshot: Snapshot, baseline: SuiteRun): Set<string> {
  const tracked = (gitTry(snapshot.dir, ['ls-files', '--full-name', '-z', '--', '.']) ?? '')
    .split('\0')
    .filter(Boolean);
  const prefix = relative(snapshot.top, snapshot.dir);
  const reported = new Set(reportedTestFiles(baseline).map((file) => (prefix ? join(prefix, file) : file)));
  const loaded = runnerTestMatcher(tracked, (path) => readText(join(snapshot.top, path)));
  const paths = tracked.filter(
    (path) => reported.has(path) || isTestFile(path) || loaded(path) || isTestConfig(path),
  );
  const configs = paths.filter(isTestConfig).map((path) => ({
    dir: dirname(path),
    text: testConfigView(path, readText(join(snapshot.top, path)) ?? ''),
  }));
  const commands = [baseline.command, ...(baseline.checks ?? []).map((c) => c.command)];
  const sources = [...commands.map((text) => ({ dir: prefix || '.', text })), ...configs];
  return new Set([...paths, ...preloadedFiles(sources, new Set(tracked))]);
}

function readText(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

/**
 * Find the attempt's test edits among `changed` (repository-top paths) and, unless `countEdits`, put the
 * baseline's versions in place for the verifier's run.
 */
export function guardTests(
  snapshot: Snapshot,
  protectedPaths: Set<string>,
  changed: string[],
  countEdits: boolean,
  doctestModules: Set<string> = new Set(),
): TestGuard {
  const replacements: { path: string; baseline: Entry }[] = [];
  let unsafe: string | undefined;
  for (const path of changed) {
    const abs = join(snapshot.top, path);
    const linked = linkedAncestor(snapshot.top, path);
    if (linked !== undefined) {
      // writing through a link would land outside the snapshot: never follow it, fail the verdict instead
      if (protectedPaths.has(path))
        unsafe ??= `${linked} was replaced by a link; the baseline's tests cannot be restored`;
      continue;
    }
    const current = readEntry(abs);
    if (doctestModules.has(path) && current.kind === 'file') {
      // a module with doctests is code: its code edits are the fix, an edit to its examples is a test edit
      const base = gitBuffer(snapshot.top, ['show', `HEAD:${path}`]).toString('utf8');
      if (doctestExamples(base) !== doctestExamples(current.data.toString('utf8')))
        replacements.push({ path, baseline: { kind: 'file', data: Buffer.from(base), mode: current.mode } });
    } else if (protectedPaths.has(path)) {
      const base = gitBuffer(snapshot.top, ['show', `HEAD:${path}`]);
      const baseline = configBaseline(path, base, current);
      if (baseline !== undefined) replacements.push({ path, baseline });
    } else if (current.kind !== 'none' && isTestConfig(path) && !ADDABLE_CONFIG.has(basename(path))) {
      // a new conftest.py or runner config changes how the existing tests run: set aside too
      replacements.push({ path, baseline: { kind: 'none' } });
    }
  }
  const edits = replacements.map((r) => r.path);
  if (countEdits || unsafe !== undefined) return { edits, ...(unsafe ? { unsafe } : {}), restore: () => {} };

  const saved = replacements.map(({ path, baseline }) => {
    const abs = join(snapshot.top, path);
    const model = readEntry(abs);
    writeEntry(abs, baseline);
    return { abs, model };
  });
  return {
    edits,
    restore() {
      for (const { abs, model } of saved) writeEntry(abs, model);
    },
  };
}

/**
 * What to put in place of a changed baseline test path: its baseline bytes, or for a configuration file
 * whose test part did not change, nothing (undefined); a package.json keeps the model's other keys.
 */
function configBaseline(path: string, base: Buffer, current: Entry): Entry | undefined {
  const mode = 0o644;
  if (!isTestConfig(path) || isTestFile(path) || current.kind !== 'file')
    return { kind: 'file', data: base, mode };
  const before = base.toString('utf8');
  const now = current.data.toString('utf8');
  if (testConfigView(path, before) === testConfigView(path, now)) return undefined;
  if (basename(path) === 'package.json') {
    const merged = packageWithBaselineTestKeys(before, now);
    if (merged !== undefined) return { kind: 'file', data: Buffer.from(merged), mode: current.mode };
  }
  return { kind: 'file', data: base, mode: current.mode };
}

/** The first folder on the way to `path` (below `top`) that is not a real folder, or undefined. */
function linkedAncestor(top: string, path: string): string | undefined {
  const parts = path.split('/').slice(0, -1);
  for (let i = 1; i <= parts.length; i++) {
    const rel = parts.slice(0, i).join('/');
    const stat = lstatSync(join(top, rel), { throwIfNoEntry: false });
    if (stat === undefined) return undefined;
    if (!stat.isDirectory()) return rel;
  }
  return undefined;
}

function readEntry(abs: string): Entry {
  const stat = lstatSync(abs, { throwIfNoEntry: false });
  if (stat === undefined) return { kind: 'none' };
  if (stat.isSymbolicLink()) return { kind: 'link', target: readlinkSync(abs) };
  if (!stat.isFile()) return { kind: 'none' };
  return { kind: 'file', data: readFileSync(abs), mode: stat.mode & 0o777 };
}

/** Replace whatever is at `abs` (never following a link there) with `entry`. */
function writeEntry(abs: string, entry: Entry): void {
  rmSync(abs, { force: true, recursive: true });
  if (entry.kind === 'none') return;
  mkdirSync(dirname(abs), { recursive: true });
  if (entry.kind === 'link') {
    symlinkSync(entry.target, abs);
    return;
  }
  writeFileSync(abs, entry.data, { flag: 'wx' });
  chmodSync(abs, entry.mode);
}

/** A test approved by a person and frozen by its hash (keel build's acceptance tests). */
export interface FrozenTest {
  /** Repository-top path. */
  path: string;
  sha256: string;
}

export function sha256(path: string): string {
  return createHash('sha256').update(readFileSync(path)).digest('hex');
}

/** The frozen tests whose bytes in `top` are not the approved ones: changed, removed, or a link now. */
export function changedFrozen(top: string, frozen: FrozenTest[]): string[] {
  return frozen
    .filter((t) => {
      const entry = readEntry(join(top, t.path));
      return entry.kind !== 'file' || createHash('sha256').update(entry.data).digest('hex') !== t.sha256;
    })
    .map((t) => t.path);
}
