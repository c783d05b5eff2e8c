/**
 * `keel build "feature"`: acceptance tests first, approved by a person (or a quorum of reviewer agents
 * through the hub, build-review.ts), frozen; then the fix loop builds it.
 */
import { realpathSync, statSync } from 'node:fs';
import type { BuildResult } from '../fix/build.js';
import { exitCodeFor } from '../term/exit-codes.js';
import { inertLine } from '../term/inert.js';
import { type CommonFlags, ConfigError, load, workspace } from '../term/options.js';
import { askLine, Interrupted } from './ask-line.js';
import { describeRequest, parseAnswer } from './ask-person.js';
import type { ReviewOutcome, ReviewSetup } from './build-review.js';
import { fixDocument } from './fix-command.js';
import { dim, renderEvent } from './render.js';
import { abortOnInterrupt, openVerbLedger, verbFailure, warn } from './run-verb.js';

export interface BuildFlags extends CommonFlags {
  repo?: string;
  testCommand?: string;
  maxAttempts?: number;
  yes?: boolean;
  /** Reviewer agents on the hub who approve the tests instead of the person at the terminal. */
  reviewers?: string;
  minApprovals?: number;
  /** Seconds to wait for the reviewers' replies. */
  reviewTimeout?: number;
}

/** Run `keel build`; returns the exit status. */
export async function runBuildCommand(feature: string, flags: BuildFlags): Promise<number> {
  const fail = verbFailure('build', flags.json, { status: true });
  if (!feature.trim()) return fail('CONFIG_ERROR', 'say what to build: keel build "the feature, in words"');
  // a quorum of reviewer agents through the hub, instead of the person at the terminal
  let review: ReviewSetup | undefined;
  if (flags.reviewers !== undefined) {
    if (flags.yes) return fail('CONFIG_ERROR', '--yes and --reviewers: choose one way to approve the tests');
    const url = process.env.KEEL_HUB_URL?.trim();
    const projectToken = process.env.KEEL_HUB_TOKEN?.trim();
    const name = process.env.KEEL_AGENT_NAME?.trim();
    if (!url || !projectToken || !name)
      return fail(
        'CONFIG_ERROR',
        '--reviewers asks them through the hub: set KEEL_HUB_URL, KEEL_HUB_TOKEN (a project token) and KEEL_AGENT_NAME (who keel build is on the hub)',
      );
    const { reviewerList } = await import('./build-review.js');
    const list = reviewerList(flags.reviewers, flags.minApprovals, name);
    if (typeof list === 'string') return fail('CONFIG_ERROR', list);
    const timeoutS = flags.reviewTimeout ?? 600;
    if (!(timeoutS > 0))
      return fail('CONFIG_ERROR', `--review-timeout ${timeoutS}: a number of seconds above 0`);
    const { keelPaths } = await import('../config/paths.js');
    review = {
      url: url.replace(/\/+$/, ''),
      projectToken,
      name,
      stateDir: keelPaths().stateDir,
      reviewers: list.reviewers,
      minApprovals: list.min,
      timeoutS,
    };
    // every reviewer must be an agent of the project before any model call is paid for
    const problem = await unknownReviewers(review);
    if (problem) return fail(problem.code, problem.message);
  } else if (flags.minApprovals !== undefined || flags.reviewTimeout !== undefined)
    return fail('CONFIG_ERROR', '--min-approvals and --review-timeout go with --reviewers NAME,NAME');
  // the tests are a person's to approve: without a terminal to ask at, only --yes (or reviewers) says it
  else if (!flags.yes && !(process.stdin.isTTY && process.stderr.isTTY))
    return fail(
      'CONFIG_ERROR',
      'the acceptance tests need your approval and there is no terminal to ask at; pass --yes to accept them unseen, or --reviewers NAME,NAME to have reviewer agents approve them through the hub',
    );
  const given = workspace({ cwd: flags.repo ?? flags.cwd });
  if (!statSync(given, { throwIfNoEntry: false })?.isDirectory())
    return fail('CONFIG_ERROR', `--repo ${given} is not a folder`);
  const repo = realpathSync(given);
  let loaded: ReturnType<typeof load>['loaded'];
  try {
    loaded = load({ ...flags, cwd: repo }).loaded;
    const { createModelClient } = await import('../model/create.js');
    createModelClient(loaded.config, process.env, { cwd: repo });
  } catch (err) {
    if (err instanceof ConfigError) return fail('CONFIG_ERROR', err.message);
    throw err;
  }
  for (const warning of loaded.warnings) warn(warning);
  const { unwritable } = await import('./writable.js');
  const why = unwritable(repo, { workTree: false });
  if (why) return fail('ENVIRONMENT_ERROR', `this repository cannot take a build branch: ${why}`);

  const { newSessionId } = await import('../agent/session.js');
  const runId = newSessionId();
  const runLedger = await openVerbLedger(loaded.config, { runId });
  if ('error' in runLedger) return fail('ENVIRONMENT_ERROR', runLedger.error);
  const interrupt = abortOnInterrupt();
  const progress = (message: string) => process.stderr.write(`${dim('keel build:')} ${inertLine(message)}\n`);
  const { runBuild } = await import('../fix/build.js');
  let outcome: ReviewOutcome | undefined;
  let result: BuildResult;
  try {
    result = await runBuild({
      repo,
      feature: feature.trim(),
      ...(flags.testCommand ? { testCommand: flags.testCommand } : {}),
      maxAttempts: flags.maxAttempts ?? 3,
      loaded,
      signal: interrupt.signal,
      calls: runLedger.calls,
      approve: async (tests) => {
        if (review) {
          const { hubReview } = await import('./build-review.js');
          outcome = await hubReview(
            review,
            { runId, feature: feature.trim(), tests },
            { signal: interrupt.signal, progress },
          );
          return outcome;
        }
        return flags.yes ? true : askApproval(tests);
      },
      onProgress: progress,
      ...(flags.json ? {} : { onEvent: renderEvent }),
    });
  } finally {
    interrupt.release();
    await runLedger.close();
  }
  const exit = exitCodeFor(result.code);
  if (flags.json) {
    const doc = { ...buildDocument(result, exit), ...(outcome ? { review: outcome } : {}) };
    process.stdout.write(`${JSON.stringify(doc, null, 2)}\n`);
    return exit;
  }
  const head =
    result.status === 'already_exists'
      ? 'ALREADY EXISTS'
      : result.status === 'verified'
        ? 'VERIFIED'
        : `NOT VERIFIED (${result.code})`;
  process.stdout.write(`\n${head}: ${inertLine(result.fix?.summary ?? result.reason)}\n`);
  if (result.tests.length)
    process.stdout.write(`tests:     ${result.tests.map((t) => inertLine(t.path)).join(', ')} (frozen)\n`);
  const branch = result.status === 'already_exists' ? null : result.fix?.branch;
  if (branch)
    process.stdout.write(
      `branch:    ${inertLine(branch)}${result.fix?.commit ? ` @ ${result.fix.commit.slice(0, 12)}` : ''}\n`,
    );
  return exit;
}

/** A reviewer that is not an agent of the hub project, or a hub that does not answer, before any model call. */
async function unknownReviewers(
  review: ReviewSetup,
): Promise<{ code: 'CONFIG_ERROR' | 'ENVIRONMENT_ERROR'; message: string } | undefined> {
  const { agentKey, hubFetch, HubCallError } = await import('../tools/hub-client.js');
  try {
    const key = await agentKey(review);
    const { json } = await hubFetch(review.url, key, 'GET', '/v1/agents');
    const known = new Set((json.agents as Array<{ name: string }>).map((a) => a.name));
    const missing = review.reviewers.filter((r) => !known.has(r));
    if (missing.length)
      return {
        code: 'CONFIG_ERROR',
        message: `--reviewers: ${missing.join(', ')} ${missing.length === 1 ? 'is' : 'are'} not an agent of the hub project (keel hub peers lists them)`,
      };
    return undefined;
  } catch (err) {
    if (err instanceof HubCallError)
      return {
        code: err.code === 'UNREACHABLE' ? 'ENVIRONMENT_ERROR' : 'CONFIG_ERROR',
        message: `the hub at ${review.url}: ${err.message}`,
      };
    throw err;
  }
}

/** The written tests on the terminal, as a write approval reads (ask-person), then [y/N]. */
async function askApproval(tests: { files: string[]; patch: string }): Promise<boolean> {
  process.stderr.write(
    describeRequest({
      id: 'build-tests',
      callId: 'build-tests',
      tool: 'keel build',
      kind: 'write',
      reason: `the acceptance tests the feature will be built against (${tests.files.join(', ')}); approved, they are frozen`,
      path: tests.files.join(', '),
      diff: tests.patch,
      args: {},
    }),
  );
  try {
    const answer = parseAnswer(await askLine(`  ${dim('approve these tests? [y/N]')} `));
    return answer.allow && answer.always !== true;
  } catch (err) {
    if (err instanceof Interrupted) return false;
    throw err;
  }
}

/** The `--json` document: keel fix's, plus the frozen tests; "already exists" builds nothing. */
function buildDocument(r: BuildResult, exit: number): Record<string, unknown> {
  const base = r.fix
    ? fixDocument(r.fix, exit)
    : {
        session_id: r.testsSession,
        exit_code: exit,
        reason: r.reason,
        summary: r.reason,
        files_changed: [],
        attempts: 0,
        branch: null,
        commit: null,
        verification: null,
      };
  const nothing = r.status === 'already_exists';
  return {
    ...base,
    mode: 'build',
    code: r.code,
    exit_code: exit,
    status: r.status,
    reason: r.reason,
    ...(nothing || !r.fix ? { summary: r.reason } : {}),
    ...(nothing ? { branch: null, commit: null, files_changed: [] } : {}),
    tests_session: r.testsSession,
    tests_written: r.tests,
  };
}
