/** `keel build "feature"`: acceptance tests first, approved by a person, frozen; then the fix loop builds it. */
import { realpathSync, statSync } from 'node:fs';
import type { BuildResult } from '../fix/build.js';
import { exitCodeFor } from '../term/exit-codes.js';
import { inertLine } from '../term/inert.js';
import { type CommonFlags, ConfigError, load, workspace } from '../term/options.js';
import { askLine, Interrupted } from './ask-line.js';
import { describeRequest, parseAnswer } from './ask-person.js';
import { fixDocument } from './fix-command.js';
import { dim, renderEvent } from './render.js';
import { abortOnInterrupt, openVerbLedger, verbFailure, warn } from './run-verb.js';

export interface BuildFlags extends CommonFlags {
  repo?: string;
  testCommand?: string;
  maxAttempts?: number;
  yes?: boolean;
}

/** Run `keel build`; returns the exit status. */
export async function runBuildCommand(feature: string, flags: BuildFlags): Promise<number> {
  const fail = verbFailure('build', flags.json, { status: true });
  if (!feature.trim()) return fail('CONFIG_ERROR', 'say what to build: keel build "the feature, in words"');
  // the tests are a person's to approve: without a terminal to ask at, only --yes says it
  if (!flags.yes && !(process.stdin.isTTY && process.stderr.isTTY))
    return fail(
      'CONFIG_ERROR',
      'the acceptance tests need your approval and there is no terminal to ask at; pass --yes to accept them unseen (approval through keel serve or a hub quorum is not there yet)',
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
  const runLedger = await openVerbLedger(loaded.config, { runId: newSessionId() });
  if ('error' in runLedger) return fail('ENVIRONMENT_ERROR', runLedger.error);
  const interrupt = abortOnInterrupt();
  const progress = (message: string) => process.stderr.write(`${dim('keel build:')} ${inertLine(message)}\n`);
  const { runBuild } = await import('../fix/build.js');
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
      approve: (tests) => (flags.yes ? Promise.resolve(true) : askApproval(tests)),
      onProgress: progress,
      ...(flags.json ? {} : { onEvent: renderEvent }),
    });
  } finally {
    interrupt.release();
    await runLedger.close();
  }
  const exit = exitCodeFor(result.code);
  if (flags.json) {
    process.stdout.write(`${JSON.stringify(buildDocument(result, exit), null, 2)}\n`);
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
