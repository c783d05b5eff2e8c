/**
 * `keel build "feature"`: tests first. The model writes acceptance tests in a session whose writable scope
 * is the repository's test folders only; a person approves them; they are committed and frozen by hash;
 * then the unchanged fix loop runs with them as its target, judged with the frozen versions.
 */
import { existsSync } from 'node:fs';
import { join, relative } from 'node:path';
import type { SessionEvent } from '../agent/events.js';
import { openRuntime, type Runtime } from '../agent/runtime.js';
import { newSessionId } from '../agent/session.js';
import type { TerminalCode } from '../agent/terminal.js';
import type { LoadedConfig } from '../config/load.js';
import type { CallLedger } from '../model/call-ledger.js';
import { createModelClient } from '../model/create.js';
import { gitTry } from '../policy/git.js';
import { isTestFile, TEST_DIRS } from '../verify/test-files.js';
import { testsSlug } from './build-leftovers.js';
import { type FixResult, runFix } from './run.js';
import { attemptDiff, commitAttempt, createSnapshot, discardSnapshot, type Snapshot } from './snapshot.js';
import { type FrozenTest, sha256 } from './test-guard.js';
import { worktreeJournal } from './worktree-journal.js';

/** At most this many test files are written: acceptance tests a person can read, not a suite. */
export const MAX_TEST_FILES = 3;

export interface BuildOptions {
  repo: string;
  feature: string;
  testCommand?: string;
  maxAttempts: number;
  loaded: LoadedConfig;
  env?: NodeJS.ProcessEnv;
  signal: AbortSignal;
  /**
   * Show the written tests to a person (or a quorum of reviewers); true to go on with them. An object
   * says why too (the reviewers' verdicts), and its reason is the build's when they are not approved.
   */
  approve(tests: {
    files: string[];
    patch: string;
    /** The session that wrote them (where a person's answer is logged). */
    session: string;
  }): Promise<boolean | { approved: boolean; reason: string }>;
  /** The id of the tests' snapshot, known before it is made (keel serve records it: `testsSnapshot`). */
  testsId?: string;
  /** The fix run's id, known before it starts (keel serve names the build by it). */
  runId?: string;
  /** A runtime to run in (keel serve's); by default the build opens its own and closes it. */
  runtime?: Runtime;
  onProgress?(message: string): void;
  onWaiting?(label: string): () => void;
  onEvent?(event: SessionEvent): void;
  calls?: CallLedger;
}

export interface BuildResult {
  status: 'verified' | 'failed' | 'already_exists' | 'blocked_uncertain';
  code: TerminalCode;
  reason: string;
  /** The approved tests and their hashes (empty before approval). */
  tests: FrozenTest[];
  /** The session that wrote the tests. */
  testsSession: string | null;
  /** The fix loop's result (null when it did not run). */
  fix: FixResult | null;
}

/** Write, approve and freeze the tests, then run the fix loop against them. */
export async function runBuild(opts: BuildOptions): Promise<BuildResult> {
  const env = opts.env ?? process.env;
  const progress = opts.onProgress ?? (() => {});
  const runtime = opts.runtime ?? openRuntime(env);
  const id = opts.testsId ?? newSessionId();
  let snapshot: Snapshot | undefined;
  const end = (
    r: Omit<BuildResult, 'tests' | 'testsSession' | 'fix'> & Partial<BuildResult>,
  ): BuildResult => ({
    tests: [],
    testsSession: null,
    fix: null,
    ...r,
  });
  try {
    snapshot = createSnapshot(opts.repo, id, testsSlug(opts.feature), runtime.paths.worktreesDir);
    const dirs = testDirs(snapshot);
    progress(`tests: the model writes acceptance tests; it may write only in ${dirs.join(', ')}`);
    const config = {
      ...opts.loaded.config,
      // the policy, not the model, keeps this phase to test files
      scope: dirs,
      ...(opts.testCommand ? { test_command: opts.testCommand } : {}),
    };
    const model = createModelClient(config, env, {
      cwd: opts.repo,
      ...(opts.calls ? { calls: opts.calls } : {}),
    });
    const outcome = await runtime.start({
      mode: 'edit',
      prompt: testsPrompt(opts.feature, dirs, examples(snapshot)),
      worktree: worktreeJournal(snapshot),
      loaded: { ...opts.loaded, config },
      cwd: snapshot.dir,
      signal: opts.signal,
      model,
      safetyNet: false,
      readOnlyDirs: snapshot.linkedFrom,
      ...(opts.onEvent ? { onEvent: opts.onEvent } : {}),
    });
    const testsSession = outcome.sessionId;
    if (outcome.code !== 'COMPLETED')
      return end({
        status: 'failed',
        code: outcome.code,
        reason: `writing the tests: ${outcome.reason}`,
        testsSession,
      });
    const diff = attemptDiff(snapshot);
    const top = (path: string) => relative(snapshot?.top ?? '', join(snapshot?.dir ?? '', path));
    const outside = diff.files.filter((f) => !isTestFile(f) || !dirs.some((d) => inside(f, top(d))));
    if (outside.length)
      return end({
        status: 'failed',
        code: 'SCOPE_VIOLATION',
        reason: `the test-writing session changed files that are not tests (${outside.join(', ')}); refused`,
        testsSession,
      });
    if (!diff.files.length)
      return end({
        status: 'failed',
        code: 'VERIFICATION_FAILED',
        reason: 'the model wrote no tests; nothing to build against',
        testsSession,
      });
    if (diff.files.length > MAX_TEST_FILES)
      return end({
        status: 'failed',
        code: 'VERIFICATION_FAILED',
        reason: `the model wrote ${diff.files.length} test files (${diff.files.join(', ')}); at most ${MAX_TEST_FILES}`,
        testsSession,
      });
    const approval = await opts.approve({ ...diff, session: testsSession });
    const approved = typeof approval === 'boolean' ? approval : approval.approved;
    if (!approved)
      return end({
        status: 'failed',
        code: 'CANCELLED',
        reason:
          typeof approval === 'boolean' ? 'the tests were not approved; nothing built' : approval.reason,
        testsSession,
      });
    if (typeof approval !== 'boolean') progress(approval.reason);
    commitAttempt(
      snapshot,
      diff.files,
      `keel build: acceptance tests for ${firstLine(opts.feature).slice(0, 48)}`,
    );
    const tests = diff.files.map((path) => ({ path, sha256: sha256(join(snapshot?.top ?? '', path)) }));
    progress(
      `tests: approved and frozen: ${tests.map((t) => `${t.path} ${t.sha256.slice(0, 12)}`).join(', ')}`,
    );
    const fix = await runFix({
      repo: snapshot.dir,
      issue: `${opts.feature}\n\nImplement this feature. The acceptance tests (${tests.map((t) => t.path).join(', ')}) are frozen: make them pass without changing them.`,
      targetTests: diff.files.map((f) => relative(snapshot?.dir ?? '', join(snapshot?.top ?? '', f))),
      ...(opts.testCommand ? { testCommand: opts.testCommand } : {}),
      maxAttempts: opts.maxAttempts,
      loaded: opts.loaded,
      env,
      runtime,
      signal: opts.signal,
      frozenTests: tests,
      ...(opts.runId ? { runId: opts.runId } : {}),
      memoryRepo: opts.repo,
      ...(opts.calls ? { calls: opts.calls } : {}),
      ...(opts.onProgress ? { onProgress: opts.onProgress } : {}),
      ...(opts.onWaiting ? { onWaiting: opts.onWaiting } : {}),
      ...(opts.onEvent ? { onEvent: opts.onEvent } : {}),
    });
    // the target passing before any change (no attempt made): the feature is there already
    if (fix.status === 'verified' && fix.attempts === 0)
      return end({
        status: 'already_exists',
        code: 'COMPLETED',
        reason: `already exists: the approved tests pass on the baseline, before any change; nothing built, no implementation asked for`,
        tests,
        testsSession,
        fix,
      });
    return end({ status: fix.status, code: fix.code, reason: fix.reason, tests, testsSession, fix });
  } finally {
    // the tests live on in the fix branch's history when anything was built; this worktree and branch go
    if (snapshot) discardSnapshot(snapshot);
    if (!opts.runtime) runtime.close();
  }
}

/**
 * Where the tests may be written, relative to the snapshot's folder: the test folders the repository
 * already has (the repository's own style), else a new `test/` folder.
 */
function testDirs(snapshot: Snapshot): string[] {
  const tracked = (gitTry(snapshot.dir, ['ls-files', '-z', '--', '.']) ?? '').split('\0').filter(Boolean);
  const dirs = new Set<string>();
  for (const path of tracked) {
    const parts = path.split('/');
    const at = parts.slice(0, -1).findIndex((p) => TEST_DIRS.has(p));
    if (at >= 0) dirs.add(parts.slice(0, at + 1).join('/'));
  }
  return dirs.size ? [...dirs].sort() : ['test'];
}

/** Up to two of the repository's test files, for the model to copy the style of. */
function examples(snapshot: Snapshot): string[] {
  const tracked = (gitTry(snapshot.dir, ['ls-files', '-z', '--', '.']) ?? '').split('\0').filter(Boolean);
  return tracked.filter((p) => isTestFile(p) && existsSync(join(snapshot.dir, p))).slice(0, 2);
}

function testsPrompt(feature: string, dirs: string[], examples: string[]): string {
  return [
    'Write acceptance tests for this feature, and nothing else: do not implement it.',
    `Write at most ${MAX_TEST_FILES} new or changed test files, only in ${dirs.join(', ')}; writes anywhere else are refused.`,
    examples.length
      ? `Follow the repository's own test style: read ${examples.join(' and ')} first.`
      : "Follow the repository's test runner and conventions.",
    'The tests must fail now (the feature is missing) and pass once it is implemented. A person reviews them before anything is built.',
    'When you are done, reply with one paragraph: what the tests check.',
    '',
    `Feature:\n${feature}`,
  ].join('\n');
}

function inside(path: string, dir: string): boolean {
  return dir === '' || dir === '.' || path.startsWith(`${dir}/`);
}

function firstLine(text: string): string {
  return text.trim().split('\n')[0] ?? '';
}
