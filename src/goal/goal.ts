/**
 * A goal on the run queue: the queue run's spec holds the goal, the repository, the commit it started
 * from and the plan; each task becomes a batch task (batch/tasks-file.ts) once every task it depends on
 * has verified, branching from a base that merges their verified branches. The plan and the queue are the
 * whole state: a supervisor killed mid-run is resumed from them, and a verified task is never redone.
 */
import type { BatchTask } from '../batch/tasks-file.js';
import type { TaskResult } from '../batch/worker.js';
import type { QueueEvent, RunQueue, RunView, TaskView } from '../store/queue.js';
import { commitOf, type MergeResult, mergeInOrder } from './merge.js';
import { dependencyOrder, type GoalTask } from './plan.js';

/** What the queue run of a goal holds as its spec. */
export interface GoalSpec {
  kind: 'goal';
  goal: string;
  /** The repository's top (real path). */
  repo: string;
  /** The commit the goal started from: the base of every task without dependencies. */
  base: string;
  /** The branch checked out when the goal started (the integration starts at its tip), or null (detached). */
  branch: string | null;
  /** How the integration runs the tests (default: detected, or the config's test_command). */
  test_command?: string;
  tasks: GoalTask[];
}

export function goalSpec(run: Pick<RunView, 'spec'> | undefined): GoalSpec | undefined {
  const spec = run?.spec as Partial<GoalSpec> | undefined;
  return spec?.kind === 'goal' && Array.isArray(spec.tasks) ? (spec as GoalSpec) : undefined;
}

/** The issue a task's `keel fix` works on: its title, then where it stands in the goal. */
export function taskIssue(spec: GoalSpec, task: GoalTask): string {
  return [
    task.title,
    '',
    `This is task ${task.id} of a larger goal: ${spec.goal}`,
    `Change only ${task.scope.join(', ')}: writes anywhere else are refused.`,
  ].join('\n');
}

/** The batch task of a goal task, from its base. */
export function batchTask(spec: GoalSpec, task: GoalTask, base: string): BatchTask {
  const testCommand = task.test_command ?? spec.test_command;
  return {
    id: task.id,
    repo: spec.repo,
    issue: taskIssue(spec, task),
    scope: task.scope,
    base,
    ...(testCommand ? { test_command: testCommand } : {}),
  };
}

/** The commit a verified task came to: its branch's tip, or its base when it verified with nothing to change. */
export function resultCommit(spec: GoalSpec, view: TaskView): string | undefined {
  const result = view.result as TaskResult | undefined;
  if (result?.branch) return commitOf(spec.repo, `refs/heads/${result.branch}`);
  return (view.spec as BatchTask).base ?? spec.base;
}

/**
 * The supervisor's hook: queue each task whose dependencies have all verified, from a base that merges
 * their results in dependency order. A base that cannot be made (the dependencies' branches conflict, or
 * one is gone) leaves the task out, said once in the run's journal (`task_blocked`).
 */
export function readyTasks(queue: RunQueue, runId: string, spec: GoalSpec): () => Promise<void> {
  const said = new Set<string>();
  const order = dependencyOrder(spec.tasks);
  return async () => {
    const views = new Map((await queue.tasks(runId)).map((t) => [t.id, t]));
    for (const task of order) {
      if (views.has(task.id)) continue;
      if (!task.depends_on.every((d) => views.get(d)?.state === 'done')) continue;
      const deps = order.filter((t) => task.depends_on.includes(t.id));
      const steps: Array<{ label: string; commit: string }> = [];
      let gone: string | undefined;
      for (const d of deps) {
        const view = views.get(d.id);
        const commit = view && resultCommit(spec, view);
        if (!commit) gone = d.id;
        else steps.push({ label: d.id, commit });
      }
      let merged: MergeResult | undefined;
      let failed = gone ? `the verified branch of task ${gone} is gone` : undefined;
      try {
        merged = gone
          ? undefined
          : mergeInOrder(spec.repo, spec.base, steps, `keel goal ${runId}: base of ${task.id}`);
      } catch (err) {
        // git refusing (too old for merge-tree --write-tree, a broken repository): said, not thrown
        failed = `its base cannot be made: ${firstLine((err as Error).message)}`;
      }
      if (!merged || 'conflict' in merged) {
        if (said.has(task.id)) continue;
        said.add(task.id);
        await queue.record(runId, 'task_blocked', {
          task: task.id,
          ...(merged && 'conflict' in merged
            ? { reason: 'merge_conflict', with: merged.conflict.label, files: merged.conflict.files }
            : { reason: failed ?? 'its base cannot be made' }),
        });
        continue;
      }
      await queue.addTask(runId, { id: task.id, spec: batchTask(spec, task, merged.commit) });
    }
  };
}

/** How a goal ended, or `running` while it has not. */
export type GoalEnd =
  | 'verified'
  | 'tasks_failed'
  | 'merge_conflict'
  | 'scope_violation'
  | 'integration_failed'
  | 'environment_error'
  | 'plan_error'
  | 'paused_provider'
  | 'cost_cap'
  | 'cancelled'
  | 'stopped'
  | 'running';

/** The integration's line in the run's journal (its newest one counts). */
export interface IntegrationRecord {
  end: GoalEnd;
  reason: string;
  branch?: string;
  commit?: string;
  task?: string;
  files?: string[];
  tests?: { command: string; passed: number; failed: number; failing: string[] };
}

export function lastIntegration(events: QueueEvent[]): IntegrationRecord | undefined {
  return events.findLast((e) => e.type === 'integration')?.data as IntegrationRecord | undefined;
}

/** A goal task as it stands: the queue's state, or `waiting` for dependencies (`blocked`: its base could not be made). */
export interface GoalTaskView {
  id: string;
  title: string;
  scope: string[];
  depends_on: string[];
  state: 'waiting' | 'blocked' | 'queued' | 'running' | 'verified' | 'failed' | 'cancelled';
  attempts: number;
  branch: string | null;
  error?: string;
  /** A blocked task's base: the files where merging its dependencies' branches conflicts. */
  conflict?: string[];
}

export function taskViews(spec: GoalSpec, views: TaskView[], events: QueueEvent[]): GoalTaskView[] {
  const byId = new Map(views.map((v) => [v.id, v]));
  const blocked = new Map(
    events.filter((e) => e.type === 'task_blocked').map((e) => [String(e.data.task), e.data]),
  );
  return spec.tasks.map((t) => {
    const v = byId.get(t.id);
    const result = v?.result as TaskResult | undefined;
    const block = blocked.get(t.id);
    const state: GoalTaskView['state'] = !v
      ? block
        ? 'blocked'
        : 'waiting'
      : v.state === 'done'
        ? 'verified'
        : v.state;
    const error =
      result?.error ??
      (state === 'blocked' && block
        ? block.reason === 'merge_conflict'
          ? `its base cannot be made: merging ${String(block.with)} conflicts in ${(block.files as string[]).join(', ')}`
          : String(block.reason)
        : undefined);
    return {
      id: t.id,
      title: t.title,
      scope: t.scope,
      depends_on: t.depends_on,
      state,
      attempts: v?.attempt ?? 0,
      branch: result?.branch ?? null,
      ...(error ? { error } : {}),
      ...(state === 'blocked' && block?.reason === 'merge_conflict'
        ? { conflict: block.files as string[] }
        : {}),
    };
  });
}

/** Where a goal stands from its stored state alone (keel goal status). */
export function standing(run: RunView, tasks: GoalTaskView[], events: QueueEvent[]): GoalEnd {
  const integration = lastIntegration(events);
  if (run.status === 'cancelled') return 'cancelled';
  if (run.status === 'paused_provider') return 'paused_provider';
  if (tasks.some((t) => t.state === 'running' || t.state === 'queued')) return 'running';
  if (tasks.some((t) => t.conflict)) return 'merge_conflict';
  if (tasks.some((t) => t.state === 'blocked')) return 'tasks_failed';
  if (tasks.some((t) => t.state === 'failed' || t.state === 'cancelled')) return 'tasks_failed';
  if (tasks.some((t) => t.state === 'waiting')) return 'running';
  return integration?.end ?? 'running';
}

function firstLine(text: string): string {
  return text.trim().split('\n')[0] ?? '';
}
