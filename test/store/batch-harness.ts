/** What the `keel batch` tests share: the scripted fix of the stats fixture, a home that runs it, task lines, processes. */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { editTurns, planTurns } from '../e2e/fix-harness.js';
import { keelHome } from '../e2e/harness.js';
import { tempDir } from '../helpers/tmp.js';

export const BUGGY_DIVISOR = '  return sum(values) / (values.length + 1);';
export const PLAN = planTurns(
  'src/stats.js',
  '1. mean divides by one too many.\n2. Divide by values.length.',
);
export const EDIT = editTurns(
  'src/stats.js',
  BUGGY_DIVISOR,
  '  return sum(values) / values.length;',
  'mean now divides by the length.',
);
/** The model's side of a verified fix of the stats fixture's mean(). */
export const TURNS = [...PLAN, ...EDIT];

/** A KEEL_HOME whose user config runs every worker on the scripted model (`turns`, written to `script`). */
export function scriptedHome(
  script = join(tempDir('keel-script-'), 'script.json'),
  turns: unknown[] = TURNS,
): string {
  writeFileSync(script, JSON.stringify({ turns }));
  return keelHome(`provider = "scripted"\nmodel = "scripted"\nscript = "${script}"\n`);
}

/** One line of a tasks.jsonl file. */
export const line = (task: Record<string, unknown>) => `${JSON.stringify(task)}\n`;

/** Pids of the processes whose command line matches `pattern` (none: an empty list). */
export function pgrep(pattern: string): number[] {
  try {
    return execFileSync('pgrep', ['-f', pattern], { encoding: 'utf8' })
      .split('\n')
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
}

/** Whether a process runs (a zombie does not: it holds nothing, and only its parent can reap it). */
export function alive(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

/** The most tasks a run's journal shows holding a slot at once. */
export function mostRunning(journal: Array<{ type: string }>): number {
  let held = 0;
  let most = 0;
  for (const e of journal) {
    if (e.type === 'claimed') held++;
    if (e.type === 'finished') held--;
    most = Math.max(most, held);
  }
  return most;
}
