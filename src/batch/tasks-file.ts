/**
 * A batch's tasks file: JSON Lines (one task per line) or a JSON array. A task is
 * `{id, repo, issue, test_command?, model?, scope?, base?}`; unknown keys, a duplicate id or a file keel cannot read
 * stop the batch before anything starts. A repository that is missing or is not git is that task's
 * error alone (`repoProblem`): the other tasks run.
 */
import { readFileSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import * as z from 'zod';
import { discoverRepo } from '../policy/git-runner.js';
import { scopeProblem } from '../policy/scope.js';

export const taskSchema = z.strictObject({
  /** Names the task in the queue, the ledger and the worker's branch: letters, digits, `.`, `_`, `-`. */
  id: z
    .string()
    .min(1)
    .max(100)
    .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, 'must be letters, digits, ".", "_" or "-"'),
  /** The repository, relative to the tasks file's folder or absolute. */
  repo: z.string().min(1),
  issue: z.string().min(1),
  test_command: z.string().min(1).optional(),
  model: z.string().min(1).optional(),
  /**
   * The fix's writable scope: paths relative to the repository's top, none of them `..`, absolute or
   * empty (default: the whole repository). keel goal gives each task its own.
   */
  scope: z.array(scopeEntry()).min(1).optional(),
  /** The commit (or ref) the fix branches from instead of HEAD: keel goal's base holding a task's dependencies. */
  base: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9._/@^~-]*$/, 'must be a commit id or a ref name')
    .optional(),
});
export type BatchTask = z.infer<typeof taskSchema>;

/** A writable scope entry: a path inside the repository, as written (no `..`, not absolute). */
export function scopeEntry() {
  return z
    .string()
    .min(1)
    .refine((p) => scopeProblem(p) === undefined, { message: 'must be a path inside the repository' });
}

/** A tasks file keel will not start: names the file, the line (or item) and what is wrong. */
export class TasksFileError extends Error {
  override name = 'TasksFileError';
}

/** Read and check a tasks file; every repo comes back absolute. */
export function readTasksFile(path: string): BatchTask[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new TasksFileError(`cannot read tasks file ${path}: ${(err as Error).message}`);
  }
  const items: Array<{ where: string; value: unknown }> = [];
  if (path.endsWith('.json')) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (err) {
      throw new TasksFileError(`${path}: invalid JSON: ${(err as Error).message}`);
    }
    if (!Array.isArray(parsed)) throw new TasksFileError(`${path}: expected an array of tasks`);
    parsed.forEach((value, i) => {
      items.push({ where: `${path}: item ${i + 1}`, value });
    });
  } else {
    for (const [i, line] of text.split('\n').entries()) {
      if (!line.trim()) continue;
      try {
        items.push({ where: `${path}: line ${i + 1}`, value: JSON.parse(line) });
      } catch (err) {
        throw new TasksFileError(`${path}: line ${i + 1}: invalid JSON: ${(err as Error).message}`);
      }
    }
  }
  if (!items.length) throw new TasksFileError(`${path}: no tasks`);
  const base = dirname(resolve(path));
  const seen = new Map<string, string>();
  return items.map(({ where, value }) => {
    const result = taskSchema.safeParse(value);
    if (!result.success) {
      const problems = result.error.issues.map((issue) =>
        issue.code === 'unrecognized_keys'
          ? `unknown key${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((k) => `"${k}"`).join(', ')}`
          : `"${issue.path.join('.')}": ${issue.message}`,
      );
      throw new TasksFileError(`${where}: ${problems.join('; ')}`);
    }
    const task = result.data;
    const first = seen.get(task.id);
    if (first) throw new TasksFileError(`${where}: task id "${task.id}" is used twice (first at ${first})`);
    seen.set(task.id, where);
    return { ...task, repo: resolve(base, task.repo) };
  });
}

/** Why a task's repository cannot be worked on, or undefined when it is a git work tree. */
export function repoProblem(repo: string): string | undefined {
  if (!statSync(repo, { throwIfNoEntry: false })?.isDirectory()) return `repo ${repo} does not exist`;
  try {
    return discoverRepo(repo) ? undefined : `repo ${repo} is not a git repository`;
  } catch (err) {
    return `repo ${repo}: ${(err as Error).message}`;
  }
}
