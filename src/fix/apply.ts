/**
 * Applying a verified fix to the branch a person has checked out: `keel runs apply` and the page's
 * "Merge into the current branch" (POST /v1/runs/:id/apply) both come here. Only a verified fix run
 * of this repository whose keel/fix-* branch is still there is applied, and only by a fast-forward:
 * what lands is exactly the tree the tests verified. A branch that moved since the run started is
 * refused with the way on (the patch, or a merge the person makes), never merged into something no
 * test ran on. The run's log and the audit chain record it.
 */
import { realpathSync } from 'node:fs';
import { findRepo, GitError, git, gitTry } from '../policy/git.js';
import type { RunSummary } from './runs.js';

/** Why a run cannot be applied; `status` is what an HTTP face answers with. */
export class ApplyError extends Error {
  override name = 'ApplyError';
  constructor(
    readonly status: 404 | 409,
    message: string,
  ) {
    super(message);
  }
}

export interface ApplyPlan {
  run: RunSummary;
  repo: string;
  branch: string;
  /** The branch checked out in the repository, which moves to the fix. */
  into: string;
  from: string;
  to: string;
}

/** What applying `run` to the repository at `root` would do, or the ApplyError that says why it may not. */
export function applyPlan(run: RunSummary, root: string): ApplyPlan {
  const repo = findRepo(realpathSync(root));
  if (!repo || !run.repo || realpathSync(run.repo) !== realpathSync(repo))
    throw new ApplyError(404, `run ${run.id} is not a fix of this repository`);
  if (run.kind !== 'fix') throw new ApplyError(409, `run ${run.id} is a ${run.kind} run, not a fix`);
  if (run.verdict !== 'verified' || run.code !== 'COMPLETED')
    throw new ApplyError(
      409,
      `run ${run.id} is not verified (${run.code === 'running' ? 'still running' : `${run.verdict}, ${run.code}`}): only a verified fix is applied`,
    );
  if (!run.branch)
    throw new ApplyError(409, `run ${run.id}'s branch is gone (pruned or deleted): nothing to apply`);
  const into = gitTry(repo, ['symbolic-ref', '-q', '--short', 'HEAD'])?.trim();
  if (!into)
    throw new ApplyError(409, `${repo} has no branch checked out (a detached HEAD): check one out first`);
  const from = git(repo, ['rev-parse', 'HEAD']).trim();
  const to = git(repo, ['rev-parse', `refs/heads/${run.branch}^{commit}`]).trim();
  if (from === to) throw new ApplyError(409, `${into} already holds the fix of run ${run.id}`);
  if (gitTry(repo, ['merge-base', '--is-ancestor', from, to]) === undefined)
    throw new ApplyError(
      409,
      `${into} moved since run ${run.id} started, so the fix would land on code no test ran on: download the patch, or merge ${run.branch} yourself`,
    );
  return { run, repo, branch: run.branch, into, from, to };
}

/**
 * Fast-forward the checked-out branch to the fix (git refuses, and nothing changes, when an uncommitted
 * edit would be overwritten) and record it in the run's log through `record`.
 */
export function applyFix(
  plan: ApplyPlan,
  record: (runId: string, type: string, data: Record<string, unknown>) => void,
): { into: string; commit: string } {
  try {
    git(plan.repo, ['merge', '--ff-only', '--no-edit', '-q', plan.to]);
  } catch (err) {
    if (!(err instanceof GitError)) throw err;
    const why = err.message.split('\n').find((l) => /error|fatal|overwritten/i.test(l)) ?? err.message;
    throw new ApplyError(409, `git did not apply the fix to ${plan.into}: ${why.trim()}`);
  }
  record(plan.run.id, 'fix_applied', {
    into: plan.into,
    from: plan.from,
    commit: plan.to,
    branch: plan.branch,
  });
  return { into: plan.into, commit: plan.to };
}
