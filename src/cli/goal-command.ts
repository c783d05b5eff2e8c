/** `keel goal "…"`, `keel goal status [GOAL]`, `keel goal resume GOAL`: a goal as a graph of verified tasks. */
import { randomBytes } from 'node:crypto';
import { realpathSync, statSync } from 'node:fs';
import { type BatchEnd, supervise } from '../batch/supervisor.js';
import type { LoadedConfig } from '../config/load.js';
import {
  type GoalEnd,
  type GoalSpec,
  type GoalTaskView,
  goalSpec,
  type IntegrationRecord,
  lastIntegration,
  readyTasks,
  standing,
  taskViews,
} from '../goal/goal.js';
import { integrate } from '../goal/integrate.js';
import { PlanError } from '../goal/plan.js';
import { LedgerStoreError, openRunLedger } from '../model/open-ledger.js';
import { currentBranch, findRepo, gitTry } from '../policy/git.js';
import type { Store } from '../store/engine.js';
import { RunQueue, type RunView } from '../store/queue.js';
import { EXIT } from '../term/exit-codes.js';
import { inertLine } from '../term/inert.js';
import { ConfigError, load, workspace } from '../term/options.js';
import { reportError } from './errors.js';
import { dim, red } from './render.js';
import { withStore } from './team-store.js';

interface Flags {
  json?: boolean;
  cwd?: string;
  profile?: string;
}

export interface GoalFlags extends Flags {
  repo?: string;
  testCommand?: string;
  concurrency?: number;
}

/** The exit status of each end; a merge conflict has its own. */
export const GOAL_EXIT: Record<GoalEnd, number> = {
  verified: EXIT.ok,
  tasks_failed: EXIT.failed,
  scope_violation: EXIT.failed,
  integration_failed: EXIT.failed,
  cost_cap: EXIT.failed,
  plan_error: EXIT.failed,
  environment_error: EXIT.environment,
  paused_provider: EXIT.model,
  merge_conflict: 5,
  cancelled: EXIT.interrupted,
  stopped: EXIT.interrupted,
  // a goal still running (keel goal status): not done, and not failed either
  running: EXIT.failed,
};

/** `keel goal "…"`: plan, run every task as a batch task, integrate. */
export async function runGoal(words: string[], flags: GoalFlags): Promise<number> {
  const goal = words.join(' ').trim();
  if (!goal)
    return reportError(flags.json, 'CONFIG_ERROR', 'say the goal: keel goal "what to build, in words"');
  const given = workspace({ cwd: flags.repo ?? flags.cwd });
  if (!statSync(given, { throwIfNoEntry: false })?.isDirectory())
    return reportError(flags.json, 'CONFIG_ERROR', `--repo ${given} is not a folder`);
  const top = findRepo(realpathSync(given));
  if (!top)
    return reportError(
      flags.json,
      'CONFIG_ERROR',
      `${given} is not in a git repository: keel goal works on branches`,
    );
  const repo = realpathSync(top);
  const base = gitTry(repo, ['rev-parse', '--verify', '-q', 'HEAD^{commit}'])?.trim();
  if (!base)
    return reportError(
      flags.json,
      'ENVIRONMENT_ERROR',
      `${repo} has no commits yet: keel goal branches from HEAD; commit your work first`,
    );
  let loaded: LoadedConfig;
  try {
    loaded = load({ ...flags, cwd: repo }).loaded;
  } catch (err) {
    if (err instanceof ConfigError) return reportError(flags.json, 'CONFIG_ERROR', err.message);
    throw err;
  }
  for (const warning of loaded.warnings)
    process.stderr.write(`${red('keel: warning:')} ${inertLine(warning)}\n`);
  const goalId = `goal-${new Date().toISOString().slice(0, 19).replace(/[-:T]/g, '')}-${randomBytes(3).toString('hex')}`;
  const say = (message: string) => {
    if (!flags.json) process.stderr.write(`${dim('keel goal:')} ${inertLine(message)}\n`);
  };
  // the plan: one call (and one repair round), recorded in the ledger under the goal
  const { createModelClient } = await import('../model/create.js');
  const { askPlan } = await import('../goal/planner.js');
  let ledger: Awaited<ReturnType<typeof openRunLedger>>;
  try {
    ledger = await openRunLedger(loaded.config, { runId: goalId });
  } catch (err) {
    if (err instanceof LedgerStoreError) return reportError(flags.json, 'ENVIRONMENT_ERROR', err.message);
    throw err;
  }
  const controller = new AbortController();
  const onSignal = () => controller.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  let tasks: GoalSpec['tasks'];
  try {
    const client = createModelClient(loaded.config, process.env, { cwd: repo, calls: ledger.calls });
    // a command the planner chose runs only in the test sandbox: without one, the plan may not name any
    const { sandboxInUse } = await import('../policy/sandbox.js');
    const sandboxed = !(await sandboxInUse(loaded.config.sandbox)).startsWith('none');
    say(`planning ${goalId}`);
    tasks = (await askPlan(client, goal, repo, controller.signal, { commands: sandboxed })).tasks;
  } catch (err) {
    if (err instanceof PlanError) return planFailed(flags, goalId, err.message);
    if (err instanceof ConfigError) return reportError(flags.json, 'CONFIG_ERROR', err.message);
    if (controller.signal.aborted) return reportError(flags.json, 'CANCELLED', 'interrupted while planning');
    return reportError(flags.json, 'MODEL_ERROR', `planning: ${(err as Error).message}`, { goal_id: goalId });
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await ledger.close();
  }
  const spec: GoalSpec = {
    kind: 'goal',
    goal,
    repo,
    base,
    branch: currentBranch(repo)?.replace(/^refs\/heads\//, '') ?? null,
    ...(flags.testCommand ? { test_command: flags.testCommand } : {}),
    tasks,
  };
  for (const t of tasks)
    say(
      `task ${t.id}: ${firstLine(t.title)} [${t.scope.join(', ')}]${t.depends_on.length ? ` after ${t.depends_on.join(', ')}` : ''}`,
    );
  return withStore(flags, true, async (store) => {
    if (!store) throw new Error('no store');
    // the plan is stored with the run: a resume never asks for it again
    await new RunQueue(store).createRun(goalId, { concurrency: flags.concurrency ?? 4, spec, tasks: [] });
    say(`goal ${goalId}: ${tasks.length} tasks; resume with keel goal resume ${goalId}`);
    return superviseGoal(store, goalId, spec, loaded, flags);
  });
}

function planFailed(flags: Flags, goalId: string, message: string): number {
  const text = `the plan was refused, nothing started: ${message}`;
  if (flags.json)
    process.stdout.write(
      `${JSON.stringify({ goal_id: goalId, end: 'plan_error', exit_code: EXIT.failed, error: text }, null, 2)}\n`,
    );
  else process.stderr.write(`${red('keel goal:')} ${inertLine(text)}\n`);
  return EXIT.failed;
}

/** `keel goal resume GOAL`: go on from the stored plan and queue; verified tasks stay verified. */
export async function resumeGoal(goalId: string, flags: Flags): Promise<number> {
  return withStore(flags, false, async (store, opened) => {
    const queue = store && new RunQueue(store);
    const spec = goalSpec(await queue?.run(goalId));
    if (!store || !queue || !spec)
      return reportError(flags.json, 'CONFIG_ERROR', `no goal ${JSON.stringify(goalId)} in ${opened.where}`);
    let loaded: LoadedConfig;
    try {
      loaded = load({ ...flags, cwd: spec.repo }).loaded;
    } catch (err) {
      if (err instanceof ConfigError) return reportError(flags.json, 'CONFIG_ERROR', err.message);
      throw err;
    }
    // keel runs git only in a repository it opened: the goal's, found again (it may have moved or gone)
    if (!statSync(spec.repo, { throwIfNoEntry: false })?.isDirectory() || findRepo(spec.repo) === undefined)
      return reportError(
        flags.json,
        'ENVIRONMENT_ERROR',
        `goal ${goalId}: its repository ${spec.repo} is gone or is no git repository`,
      );
    await queue.resume(goalId);
    return superviseGoal(store, goalId, spec, loaded, flags);
  });
}

const SUPERVISOR_END: Record<BatchEnd | 'stopped', GoalEnd | undefined> = {
  verified: undefined,
  failed: 'tasks_failed',
  paused_provider: 'paused_provider',
  cost_cap: 'cost_cap',
  cancelled: 'cancelled',
  stopped: 'stopped',
};

/** Supervise the goal's tasks to their end, integrate when all verified, print; returns the exit status. */
async function superviseGoal(
  store: Store,
  goalId: string,
  spec: GoalSpec,
  loaded: LoadedConfig,
  flags: Flags,
): Promise<number> {
  const queue = new RunQueue(store);
  const abort = new AbortController();
  const stop = () => abort.abort();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  let line = '';
  const say = (message: string) => {
    if (!flags.json) process.stderr.write(`${dim('keel goal:')} ${inertLine(message)}\n`);
  };
  let outcome: IntegrationRecord | undefined;
  try {
    const end = await supervise({
      store,
      runId: goalId,
      keel: [process.execPath, process.argv[1] ?? 'keel'],
      signal: abort.signal,
      beforeClaim: readyTasks(queue, goalId, spec),
      onProgress: (run) => {
        const now = progressLine(run, spec);
        if (now !== line) say(now);
        line = now;
      },
    });
    const stopped = SUPERVISOR_END[end];
    const views = taskViews(spec, await queue.tasks(goalId), await queue.events(goalId));
    if (stopped) outcome = { end: stopped, reason: `the tasks ended ${end}` };
    else if (views.some((t) => t.state === 'blocked'))
      outcome = {
        end: views.some((t) => t.conflict) ? 'merge_conflict' : 'tasks_failed',
        reason: views
          .filter((t) => t.state === 'blocked')
          .map((t) => `task ${t.id}: ${t.error}`)
          .join('; '),
      };
    else if (views.some((t) => t.state !== 'verified'))
      outcome = {
        end: 'tasks_failed',
        reason: `not every task verified: ${views
          .filter((t) => t.state !== 'verified')
          .map((t) => `${t.id} ${t.state}`)
          .join(', ')}`,
      };
    else
      outcome = await integrate({
        queue,
        runId: goalId,
        spec,
        loaded,
        signal: abort.signal,
        progress: say,
      });
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
  }
  return printGoal(store, goalId, spec, flags, outcome);
}

function progressLine(run: RunView, spec: GoalSpec): string {
  const c = run.counts;
  const waiting = spec.tasks.length - Object.values(c).reduce((a, b) => a + b, 0);
  return `${c.done}/${spec.tasks.length} verified · ${c.running} running · ${c.queued} queued · ${waiting} waiting${c.failed ? ` · ${c.failed} failed` : ''}`;
}

async function printGoal(
  store: Store,
  goalId: string,
  spec: GoalSpec,
  flags: Flags,
  ended?: IntegrationRecord,
): Promise<number> {
  const queue = new RunQueue(store);
  const run = await queue.run(goalId);
  const events = await queue.events(goalId);
  const tasks = taskViews(spec, await queue.tasks(goalId), events);
  const integration = lastIntegration(events);
  const end = ended?.end ?? (run ? standing(run, tasks, events) : 'running');
  const exit = GOAL_EXIT[end];
  const reason = ended?.reason ?? (integration && end === integration.end ? integration.reason : undefined);
  if (flags.json) {
    process.stdout.write(
      `${JSON.stringify(
        {
          goal_id: goalId,
          goal: spec.goal,
          repo: spec.repo,
          base: spec.base,
          branch: spec.branch,
          end,
          exit_code: exit,
          ...(reason ? { reason } : {}),
          integration: integration ?? null,
          tasks,
        },
        null,
        2,
      )}\n`,
    );
    return exit;
  }
  printTasks(tasks);
  const head = end === 'verified' ? 'VERIFIED' : end === 'running' ? 'RUNNING' : `NOT VERIFIED (${end})`;
  process.stdout.write(`goal ${inertLine(goalId)}: ${head}${reason ? `: ${inertLine(reason)}` : ''}\n`);
  if (integration?.branch && (end === 'verified' || end === 'integration_failed'))
    process.stdout.write(
      `branch:  ${inertLine(integration.branch)} @ ${integration.commit?.slice(0, 12)} (not merged into your branch)\n`,
    );
  if (end === 'merge_conflict' && integration?.files)
    process.stdout.write(`conflict: ${integration.files.map(inertLine).join(', ')}\n`);
  return exit;
}

function printTasks(tasks: GoalTaskView[]): void {
  for (const t of tasks) {
    const detail = t.error ?? t.branch ?? '';
    process.stdout.write(
      `${inertLine(t.id)}  ${t.state}  ${dim(inertLine(firstLine(t.title)))}${detail ? `  ${dim(inertLine(detail))}` : ''}\n`,
    );
  }
}

/** `keel goal status [GOAL]`: one goal's tasks and integration, or the newest goals. */
export async function goalStatus(goalId: string | undefined, flags: Flags): Promise<number> {
  return withStore(flags, false, async (store, opened) => {
    const queue = store && new RunQueue(store);
    if (goalId === undefined) {
      const goals = [];
      for (const run of queue ? await queue.runs(200) : []) {
        const spec = goalSpec(run);
        if (!spec || !queue) continue;
        const events = await queue.events(run.id);
        const tasks = taskViews(spec, await queue.tasks(run.id), events);
        goals.push({
          goal_id: run.id,
          goal: spec.goal,
          end: standing(run, tasks, events),
          tasks: tasks.length,
        });
      }
      if (flags.json) process.stdout.write(`${JSON.stringify({ store: opened.engine, goals }, null, 2)}\n`);
      else if (!goals.length) process.stdout.write(`no goals (${inertLine(opened.where)})\n`);
      else
        for (const g of goals)
          process.stdout.write(
            `${g.goal_id}  ${g.end}  ${g.tasks} tasks  ${dim(inertLine(firstLine(g.goal)).slice(0, 80))}\n`,
          );
      return EXIT.ok;
    }
    const spec = goalSpec(await queue?.run(goalId));
    if (!store || !spec)
      return reportError(flags.json, 'CONFIG_ERROR', `no goal ${JSON.stringify(goalId)} in ${opened.where}`);
    if (statSync(spec.repo, { throwIfNoEntry: false })?.isDirectory()) findRepo(spec.repo);
    return printGoal(store, goalId, spec, flags);
  });
}

function firstLine(text: string): string {
  return text.trim().split('\n')[0] ?? '';
}
