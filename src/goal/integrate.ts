/**
 * A goal's integration: every task verified, each one's branch is checked to change only its scope, the
 * branches are merged in dependency order onto the tip of the branch the goal started from (as it is
 * now) into `keel/goal-<id>`, and the repository's whole suite runs there, in keel fix's test sandbox.
 * A conflict ends it and names the files; nothing is merged into the person's branch.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RunError } from '../agent/terminal.js';
import type { LoadedConfig } from '../config/load.js';
import { keelPaths } from '../config/paths.js';
import { suiteRunner } from '../fix/baseline.js';
import { createSnapshot, discardSnapshot, type Snapshot } from '../fix/snapshot.js';
import { testSandbox } from '../fix/test-sandbox.js';
import { GitError, git } from '../policy/git.js';
import { type Sandbox, SandboxError } from '../policy/sandbox.js';
import type { RunQueue } from '../store/queue.js';
import { findSuite } from '../verify/suite.js';
import { baseline } from '../verify/verifier.js';
import { type GoalSpec, type IntegrationRecord, resultCommit } from './goal.js';
import { changedFiles, commitOf, mergeInOrder } from './merge.js';
import { dependencyOrder } from './plan.js';

export interface IntegrateOptions {
  queue: RunQueue;
  runId: string;
  spec: GoalSpec;
  loaded: LoadedConfig;
  signal: AbortSignal;
  env?: NodeJS.ProcessEnv;
  progress?(message: string): void;
}

/** The branch a goal's integration is kept on. */
export function integrationBranch(runId: string): string {
  return `keel/goal-${runId.replace(/^goal-/, '')}`;
}

/** Integrate a goal whose tasks all verified; the outcome is journaled (`integration`) and returned. */
export async function integrate(opts: IntegrateOptions): Promise<IntegrationRecord> {
  let outcome: IntegrationRecord;
  try {
    outcome = await integrateOnce(opts);
  } catch (err) {
    // git or the sandbox refusing is the environment, said in one line and journaled like any end
    if (!(err instanceof GitError || err instanceof SandboxError || err instanceof RunError)) throw err;
    outcome = {
      end: 'environment_error',
      reason: `the integration could not run: ${(err as Error).message.split('\n')[0]}`,
    };
  }
  await opts.queue.record(opts.runId, 'integration', { ...outcome });
  return outcome;
}

async function integrateOnce(opts: IntegrateOptions): Promise<IntegrationRecord> {
  const { spec, runId } = opts;
  const progress = opts.progress ?? (() => {});
  const views = new Map((await opts.queue.tasks(runId)).map((t) => [t.id, t]));
  const steps: Array<{ label: string; commit: string }> = [];
  for (const task of dependencyOrder(spec.tasks)) {
    const view = views.get(task.id);
    const commit = view && resultCommit(spec, view);
    if (!view || !commit)
      return { end: 'tasks_failed', reason: `task ${task.id} has no verified branch to integrate` };
    // the gate kept each fix to its scope; the branch is checked again, against the base it started from
    const base = (view.spec as { base?: string }).base ?? spec.base;
    const outside = changedFiles(spec.repo, base, commit).filter(
      (f) => !task.scope.some((s) => s === '.' || f === s || f.startsWith(`${s}/`)),
    );
    if (outside.length)
      return {
        end: 'scope_violation',
        reason: `task ${task.id}'s branch changes files outside its scope (${task.scope.join(', ')}): ${outside.join(', ')}; not integrated`,
        task: task.id,
        files: outside,
      };
    steps.push({ label: task.id, commit });
  }
  // the integration starts where the person's branch is now: what they would merge it into
  const start = (spec.branch && commitOf(spec.repo, `refs/heads/${spec.branch}`)) || spec.base;
  const onto =
    spec.branch && start !== spec.base
      ? `${spec.branch} (now at ${start.slice(0, 12)})`
      : (spec.branch ?? spec.base.slice(0, 12));
  progress(`integration: merging ${steps.map((s) => s.label).join(', ')} onto ${onto}`);
  const merged = mergeInOrder(spec.repo, start, steps, `keel goal ${runId}`);
  if ('conflict' in merged)
    return {
      end: 'merge_conflict',
      reason: `merging task ${merged.conflict.label} onto ${onto} conflicts in ${merged.conflict.files.join(', ')}; nothing was merged into your branch`,
      task: merged.conflict.label,
      files: merged.conflict.files,
    };
  const branch = integrationBranch(runId);
  git(spec.repo, ['update-ref', `refs/heads/${branch}`, merged.commit]);
  progress(`integration: ${branch} at ${merged.commit.slice(0, 12)}; running the whole suite`);
  return { ...(await runSuite(opts, merged.commit)), branch, commit: merged.commit };
}

/** The repository's whole suite at `commit`, in a throw-away worktree and keel fix's test sandbox. */
async function runSuite(
  opts: IntegrateOptions,
  commit: string,
): Promise<Omit<IntegrationRecord, 'branch' | 'commit'>> {
  const paths = keelPaths(opts.env ?? process.env);
  const reportsDir = mkdtempSync(join(tmpdir(), 'keel-goal-'));
  let snapshot: Snapshot | undefined;
  let sandbox: Sandbox | undefined;
  try {
    snapshot = createSnapshot(
      opts.spec.repo,
      // a fresh name each time: a killed integration's leftover never stands in the way
      `${opts.runId}-${randomBytes(3).toString('hex')}`,
      'goal-integration',
      paths.worktreesDir,
      commit,
    );
    const suite = findSuite(
      snapshot.dir,
      reportsDir,
      opts.spec.test_command ?? opts.loaded.config.test_command,
    );
    if (!suite)
      return {
        end: 'environment_error',
        reason:
          'no test command found for the integration (looked at package.json, pytest, go.mod, Cargo.toml); pass --test-command',
      };
    sandbox = await testSandbox(snapshot, reportsDir, opts.loaded);
    const run = await suiteRunner(opts.signal, suite, snapshot, sandbox)();
    const summary = baseline(run);
    const tests = {
      command: run.command,
      passed: summary.passing.length,
      failed: summary.failing.length,
      failing: summary.failing.slice(0, 50),
    };
    if (opts.signal.aborted)
      return { end: 'stopped', reason: 'interrupted while the integration ran the tests' };
    if (summary.problem)
      return {
        end: 'environment_error',
        reason: `the tests cannot run on the integration branch: ${summary.problem}`,
        tests,
      };
    if (run.exitCode !== 0 || summary.failing.length)
      return {
        end: 'integration_failed',
        reason: summary.failing.length
          ? `${summary.failing.length} test(s) fail on the integration branch: ${summary.failing.slice(0, 10).join(', ')}`
          : `\`${run.command}\` exits ${run.exitCode} on the integration branch`,
        tests,
      };
    return {
      end: 'verified',
      reason: `every task verified, and the whole suite passes on the integration branch (${summary.passing.length} passed)`,
      tests,
    };
  } finally {
    await sandbox?.close();
    if (snapshot) discardSnapshot(snapshot);
    rmSync(reportsDir, { recursive: true, force: true });
  }
}
