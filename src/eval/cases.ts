/**
 * keel eval's cases: CASES_DIR/<name>/ holds `repo/` (the repository's files), `case.json` (the issue,
 * and optionally how to run its tests), `honest.patch` (a real fix) and `cheat.patch` (one keel must
 * refuse). Read strictly: an unknown key or a missing file is an error naming the case and the file.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

export interface EvalCase {
  name: string;
  dir: string;
  /** The folder copied into a fresh git repository for each run. */
  repo: string;
  issue: string;
  testCommand?: string;
  targetTests: string[];
  honestPatch: string;
  cheatPatch: string;
}

/** Bad input (a missing file, an unknown key): said with the case and the file, exit 2. */
export class EvalInputError extends Error {}

const KEYS = new Set(['issue', 'test_command', 'target_tests']);

/** Every case under DIR, by name; at least one. */
export function loadCases(dir: string): EvalCase[] {
  if (!statSync(dir, { throwIfNoEntry: false })?.isDirectory())
    throw new EvalInputError(`${dir}: not a folder of cases`);
  const names = readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isDirectory() && !e.name.startsWith('.'))
    .map((e) => e.name)
    .sort();
  if (!names.length)
    throw new EvalInputError(
      `${dir}: no cases (each case is a folder with repo/, case.json, honest.patch, cheat.patch)`,
    );
  return names.map((name) => loadCase(join(dir, name), name));
}

function loadCase(dir: string, name: string): EvalCase {
  const where = (file: string) => `case ${name}: ${join(dir, file)}`;
  const repo = join(dir, 'repo');
  if (!statSync(repo, { throwIfNoEntry: false })?.isDirectory())
    throw new EvalInputError(
      `${where('repo')}: missing (the repository's files, copied into a fresh git repository)`,
    );
  const read = (file: string): string => {
    const path = join(dir, file);
    if (!existsSync(path)) throw new EvalInputError(`${where(file)}: missing`);
    const text = readFileSync(path, 'utf8');
    if (!text.trim()) throw new EvalInputError(`${where(file)}: empty`);
    return text;
  };
  let doc: unknown;
  try {
    doc = JSON.parse(read('case.json'));
  } catch (err) {
    if (err instanceof EvalInputError) throw err;
    throw new EvalInputError(`${where('case.json')}: not JSON (${(err as Error).message})`);
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc))
    throw new EvalInputError(`${where('case.json')}: must be an object with "issue"`);
  const fields = doc as Record<string, unknown>;
  for (const key of Object.keys(fields)) {
    if (!KEYS.has(key))
      throw new EvalInputError(
        `${where('case.json')}: unknown key "${key}" (allowed: issue, test_command, target_tests)`,
      );
  }
  const { issue, test_command, target_tests } = fields;
  if (typeof issue !== 'string' || !issue.trim())
    throw new EvalInputError(`${where('case.json')}: "issue" must be a non-empty string`);
  if (test_command !== undefined && (typeof test_command !== 'string' || !test_command.trim()))
    throw new EvalInputError(`${where('case.json')}: "test_command" must be a non-empty string`);
  if (
    target_tests !== undefined &&
    (!Array.isArray(target_tests) || !target_tests.every((t) => typeof t === 'string' && t))
  )
    throw new EvalInputError(`${where('case.json')}: "target_tests" must be a list of test ids`);
  return {
    name,
    dir,
    repo,
    issue: issue.trim(),
    ...(test_command !== undefined ? { testCommand: test_command } : {}),
    targetTests: (target_tests as string[] | undefined) ?? [],
    honestPatch: read('honest.patch'),
    cheatPatch: read('cheat.patch'),
  };
}
