/**
 * Helpers for the runner fixtures' `keel fix` tests: one scripted attempt and its expected verdicts, and
 * real, installed node_modules for the fixtures (ava, uvu, node-tap), copied from keel's own
 * devDependencies. The sandbox sees neither keel's folder nor links into it, so each package of a
 * runner's dependency closure is copied (dereferenced) once per test file into a temporary folder, then
 * hard-linked into each fixture repository, which costs next to nothing per test.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, symlinkSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/tmp.js';
import { editTurns, type FixRun, fix, fixtureRepo, planTurns } from './fix-harness.js';
import { model } from './harness.js';

const KEEL_ROOT = fileURLToPath(new URL('../../', import.meta.url)).replace(/\/$/, '');
const installed = new Map<string, string>();

/** A node_modules folder (outside keel's tree) holding `packages` and everything they depend on. */
export function installedModules(packages: string[]): string {
  const key = packages.join(' ');
  const known = installed.get(key);
  if (known !== undefined) return known;
  const target = join(tempDir('keel-modules-'), 'node_modules');
  for (const dir of closure(packages)) {
    const rel = relative(KEEL_ROOT, dir);
    // nested node_modules are packages of the closure in their own right, copied when reached
    cpSync(dir, join(target, '..', rel), {
      recursive: true,
      dereference: true,
      filter: (src) => relative(dir, src).split('/')[0] !== 'node_modules',
    });
  }
  for (const name of packages) linkBins(target, name);
  installed.set(key, target);
  return target;
}

/** Put `modules` into `repo` as an untracked node_modules folder, the way `npm install` leaves it. */
export function installInto(repo: string, modules: string): void {
  // hard links: the copy is instant, and the sandbox binds the folder read-only anyway
  execFileSync('cp', ['-al', modules, join(repo, 'node_modules')]);
}

/** Package folders in keel's node_modules that `packages` need at run time, found the way node finds them. */
function closure(packages: string[]): string[] {
  const seen = new Set<string>();
  const queue = packages.map((name) => resolvePackage(KEEL_ROOT, name));
  while (queue.length > 0) {
    const dir = queue.pop();
    if (dir === undefined || seen.has(dir)) continue;
    seen.add(dir);
    const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as {
      dependencies?: Record<string, string>;
      optionalDependencies?: Record<string, string>;
      peerDependencies?: Record<string, string>;
    };
    const names = Object.keys({
      ...manifest.dependencies,
      ...manifest.optionalDependencies,
      ...manifest.peerDependencies,
    });
    for (const name of names) {
      const found = resolvePackage(dir, name);
      if (found !== undefined) queue.push(found);
    }
  }
  return [...seen];
}

/** Where `name` resolves from a package folder: its own node_modules, then each one above it. */
function resolvePackage(from: string, name: string): string | undefined {
  for (let dir = from; dir === KEEL_ROOT || dir.startsWith(`${KEEL_ROOT}/`); dir = dirname(dir)) {
    const candidate = join(dir, 'node_modules', name);
    if (existsSync(join(candidate, 'package.json'))) return candidate;
  }
  return undefined;
}

/** The `node_modules/.bin` links npm makes for a package's programs. */
function linkBins(modules: string, name: string): void {
  const manifest = JSON.parse(readFileSync(join(modules, name, 'package.json'), 'utf8')) as {
    bin?: string | Record<string, string>;
  };
  const bins = typeof manifest.bin === 'string' ? { [name]: manifest.bin } : (manifest.bin ?? {});
  mkdirSync(join(modules, '.bin'), { recursive: true });
  for (const [program, path] of Object.entries(bins)) {
    symlinkSync(join('..', name, path), join(modules, '.bin', program));
  }
}

/** The fixtures' bug in src/stats.js, and its fix. */
export const BUG = 'return sum(values) / (values.length + 1);';
export const FIXED = 'return sum(values) / values.length;';
const PLAN = planTurns('src/stats.js', '1. Divide by values.length.');
const ISSUE = ['--issue', 'mean is off by one', '--max-attempts', '1'];

/** Run a fix whose only attempt replaces `from` with `to` in `path`. */
export async function attempt(repo: string, path: string, from: string, to: string): Promise<FixRun> {
  const server = await model([...PLAN, ...editTurns(path, from, to, 'Fixed mean.')]);
  return fix(repo, server, ISSUE);
}

/** Exit 0, verified, judged per test, with `target` among the passing targets. */
export function expectVerified({ run, doc }: FixRun, target: string): void {
  expect(run.code, run.stderr).toBe(0);
  expect(doc).toMatchObject({ code: 'COMPLETED', status: 'verified', test_command: 'npm test' });
  expect(doc.verification).toMatchObject({ mode: 'per-test', targetsPassing: [target], regressions: [] });
}

/** Exit 1, VERIFICATION_FAILED, with `target` still failing. */
export function expectRefused({ run, doc }: FixRun, target: string): void {
  expect(run.code, run.stderr).toBe(1);
  expect(doc).toMatchObject({ code: 'VERIFICATION_FAILED', status: 'failed' });
  expect(doc.verification?.targetsFailing).toEqual([target]);
}

/** A runner's two end-to-end cases: the correct fix verified, and one weakening of the failing test refused. */
export interface RunnerCase {
  title: string;
  fixture: string;
  /** The runner's packages, installed into each fixture repository; none for a runner node ships. */
  packages: string[];
  target: string;
  weakening: { title: string; path: string; from: string; to: string };
  /** More to check of the verified run. */
  alsoVerified?: (result: FixRun) => void;
}

/** Declare a runner's describe block: real modules installed once, a fresh fixture repository per test. */
export function describeRunner(c: RunnerCase): void {
  describe(c.title, () => {
    let modules: string | undefined;
    beforeAll(() => {
      if (c.packages.length > 0) modules = installedModules(c.packages);
    });
    const repo = () => {
      const dir = fixtureRepo(c.fixture);
      if (modules !== undefined) installInto(dir, modules);
      return dir;
    };

    it('the correct fix is verified, with per-test targets named', async () => {
      const result = await attempt(repo(), 'src/stats.js', BUG, FIXED);
      expectVerified(result, c.target);
      c.alsoVerified?.(result);
    });

    it(c.weakening.title, async () => {
      const { path, from, to } = c.weakening;
      expectRefused(await attempt(repo(), path, from, to), c.target);
    });
  });
}
