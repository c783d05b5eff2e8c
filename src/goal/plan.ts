/**
 * A goal's plan: tasks `{id, title, scope, depends_on, test_command?}` as the planner writes them, checked
 * before anything starts. The schema is strict (an unknown key is refused); ids are unique, every
 * dependency names a task, the graph has no cycle; a scope entry is a path inside the repository; and two
 * sibling tasks (neither depends on the other, even through others) may not share a file: they run at once,
 * each on its own branch, and their branches are merged.
 */
import { relative, resolve } from 'node:path';
import * as z from 'zod';
import { canonicalize, isInside, ScopeError, scopeProblem } from '../policy/scope.js';

const MAX_TASKS = 20;

const taskSchema = z.strictObject({
  id: z
    .string()
    .min(1)
    .max(60)
    .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, 'must be letters, digits, ".", "_" or "-"'),
  title: z.string().trim().min(1).max(500),
  /** Paths (files or folders) inside the repository the task may write; a trailing `/**` names the folder. */
  scope: z.array(z.string().trim().min(1)).min(1).max(50),
  depends_on: z.array(z.string().min(1)).max(MAX_TASKS).default([]),
  test_command: z.string().trim().min(1).max(1000).optional(),
});

export const planSchema = z.strictObject({ tasks: z.array(taskSchema).min(1).max(MAX_TASKS) });

export type GoalTask = z.infer<typeof taskSchema>;

/** A plan keel will not start; the message names the tasks and what is wrong, and goes back to the planner once. */
export class PlanError extends Error {
  override name = 'PlanError';
}

/** A test command the planner may give: plain words (paths, flags, test names without spaces), no shell syntax. */
const PLAIN_COMMAND = /^[\w./:=@%+,-]+(?: [\w./:=@%+,-]+)*$/;

export interface PlanRules {
  /**
   * Whether a task may carry a test_command at all: not when the tests run without a sandbox, where a
   * command the planner (a model, reading the repository) chose would run on this machine as it is.
   */
  commands: boolean;
}

/** Check a planner's answer (its text) against the schema and the graph rules; returns the tasks, scopes normalized. */
export function readPlan(answer: string, repo: string, rules: PlanRules = { commands: true }): GoalTask[] {
  const json = jsonIn(answer);
  if (json === undefined)
    throw new PlanError('the answer holds no JSON object: answer with {"tasks": [...]} and nothing else');
  const parsed = planSchema.safeParse(json);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) =>
      issue.code === 'unrecognized_keys'
        ? `${where(issue.path)}unknown key${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((k) => `"${k}"`).join(', ')}`
        : `${where(issue.path)}${issue.message}`,
    );
    throw new PlanError(`the plan does not match the schema: ${problems.join('; ')}`);
  }
  const tasks = parsed.data.tasks.map((t) => ({ ...t, scope: t.scope.map((p) => normalScope(t.id, p)) }));
  for (const t of tasks) {
    if (t.test_command === undefined) continue;
    if (!rules.commands)
      throw new PlanError(
        `task ${t.id}: test_command is refused: the tests run without a sandbox here, and a command the planner chose would run on this machine as it is; leave test_command out`,
      );
    if (!PLAIN_COMMAND.test(t.test_command))
      throw new PlanError(
        `task ${t.id}: test_command ${JSON.stringify(t.test_command)} is not a plain command line: words of letters, digits, paths and flags only (no quotes, pipes, ;, &, $, redirections)`,
      );
  }
  checkGraph(tasks);
  checkSiblings(tasks, repo);
  return tasks;
}

function where(path: PropertyKey[]): string {
  return path.length ? `"${path.map(String).join('.')}": ` : '';
}

/** The JSON object in a model's answer: the whole answer, a fenced block, or from the first `{` to the last `}`. */
function jsonIn(answer: string): unknown {
  const tries = [answer.trim()];
  const fenced = /```(?:json)?\s*\n([\s\S]*?)```/.exec(answer);
  if (fenced?.[1]) tries.push(fenced[1].trim());
  const first = answer.indexOf('{');
  const last = answer.lastIndexOf('}');
  if (first >= 0 && last > first) tries.push(answer.slice(first, last + 1));
  for (const text of tries) {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      // the next form
    }
  }
  return undefined;
}

/** A scope entry as a plain relative path: `./` and trailing `/`, `/**` or `/*` dropped; a glob elsewhere refused. */
function normalScope(task: string, entry: string): string {
  const problem = scopeProblem(entry);
  if (problem) throw new PlanError(`task ${task}: scope ${problem}`);
  let path = entry.replace(/\/\*\*?$/, '').replace(/\/+$/, '');
  path = path.replace(/^(\.\/)+/, '') || '.';
  if (/[*?[\]{}]/.test(path))
    throw new PlanError(
      `task ${task}: scope ${JSON.stringify(entry)} is a glob; a scope is a list of paths (files or folders, a folder may end in /**)`,
    );
  if (path === '.git' || path.startsWith('.git/'))
    throw new PlanError(`task ${task}: scope ${entry} is git's own folder`);
  return path;
}

function checkGraph(tasks: GoalTask[]): void {
  const ids = new Set<string>();
  for (const t of tasks) {
    if (ids.has(t.id)) throw new PlanError(`task id "${t.id}" is used twice`);
    ids.add(t.id);
  }
  for (const t of tasks)
    for (const d of t.depends_on) {
      if (d === t.id) throw new PlanError(`task ${t.id} depends on itself`);
      if (!ids.has(d)) throw new PlanError(`task ${t.id} depends on "${d}", which is no task of the plan`);
    }
  const cycle = findCycle(tasks);
  if (cycle) throw new PlanError(`the tasks depend on each other in a cycle: ${cycle.join(' -> ')}`);
}

/** A dependency cycle as the ids around it (first repeated at the end), or undefined. */
function findCycle(tasks: GoalTask[]): string[] | undefined {
  const deps = new Map(tasks.map((t) => [t.id, t.depends_on]));
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (id: string): string[] | undefined => {
    if (state.get(id) === 'done') return undefined;
    if (state.get(id) === 'open') return [...path.slice(path.indexOf(id)), id];
    state.set(id, 'open');
    path.push(id);
    for (const d of deps.get(id) ?? []) {
      const found = visit(d);
      if (found) return found;
    }
    path.pop();
    state.set(id, 'done');
    return undefined;
  };
  for (const t of tasks) {
    const found = visit(t.id);
    if (found) return found;
  }
  return undefined;
}

/** Every task each task depends on, directly or through others. */
export function ancestors(tasks: GoalTask[]): Map<string, Set<string>> {
  const deps = new Map(tasks.map((t) => [t.id, t.depends_on]));
  const out = new Map<string, Set<string>>();
  const of = (id: string): Set<string> => {
    const known = out.get(id);
    if (known) return known;
    const all = new Set<string>();
    out.set(id, all);
    for (const d of deps.get(id) ?? []) {
      all.add(d);
      for (const a of of(d)) all.add(a);
    }
    return all;
  };
  for (const t of tasks) of(t.id);
  return out;
}

/**
 * Siblings (neither an ancestor of the other) whose scopes share a path are refused: compared as written
 * and as the checkout resolves them (a link inside the repository is the file it points to).
 */
function checkSiblings(tasks: GoalTask[], repo: string): void {
  const up = ancestors(tasks);
  const canonical = (task: string, p: string): string => {
    try {
      return relative(repo, canonicalize(p, repo)) || '.';
    } catch (err) {
      if (err instanceof ScopeError) throw new PlanError(`task ${task}: scope ${p}: ${err.message}`);
      throw err;
    }
  };
  const forms = new Map(
    tasks.map((t) => [t.id, t.scope.map((p) => ({ written: p, real: canonical(t.id, p) }))]),
  );
  for (const [i, a] of tasks.entries())
    for (const b of tasks.slice(i + 1)) {
      if (up.get(a.id)?.has(b.id) || up.get(b.id)?.has(a.id)) continue;
      for (const pa of forms.get(a.id) ?? [])
        for (const pb of forms.get(b.id) ?? []) {
          const overlap = overlapOf(pa.written, pb.written) ?? overlapOf(pa.real, pb.real);
          if (overlap === undefined) continue;
          const how =
            pa.written === pb.written ? pa.written : `${pa.written} and ${pb.written} (both hold ${overlap})`;
          throw new PlanError(
            `tasks ${a.id} and ${b.id} can run at once (neither depends on the other) and their scopes overlap: ${how}; give them disjoint scopes, or make one depend on the other`,
          );
        }
    }
}

/** The shared part of two repository paths (the inner one), or undefined when neither holds the other. */
function overlapOf(a: string, b: string): string | undefined {
  const root = '/r';
  const pa = resolve(root, a);
  const pb = resolve(root, b);
  if (isInside(pa, pb)) return relative(root, pa) || '.';
  if (isInside(pb, pa)) return relative(root, pb) || '.';
  return undefined;
}

/** The tasks in an order where each comes after its dependencies (the plan's order among equals). */
export function dependencyOrder(tasks: GoalTask[]): GoalTask[] {
  const done = new Set<string>();
  const out: GoalTask[] = [];
  while (out.length < tasks.length) {
    const next = tasks.find((t) => !done.has(t.id) && t.depends_on.every((d) => done.has(d)));
    if (!next) throw new PlanError('the tasks depend on each other in a cycle');
    done.add(next.id);
    out.push(next);
  }
  return out;
}
