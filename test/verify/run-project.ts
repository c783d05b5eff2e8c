/** Run a fixture project the way keel does: detect, build the invocation, run, read results. */
import { join, resolve } from 'node:path';
import { detectTestCommand } from '../../src/verify/detect.js';
import { buildInvocation } from '../../src/verify/reporters.js';
import { runSuite } from '../../src/verify/run.js';
import type { DetectedCommand, SuiteRun } from '../../src/verify/types.js';
import { tempDir } from '../helpers/tmp.js';

const REPO_BIN = resolve('node_modules/.bin');

/** Detect (or take) the project's command, run it with per-test reporting, return the run. */
export async function runProject(
  root: string,
  opts: { filter?: string; detected?: DetectedCommand; timeoutS?: number } = {},
): Promise<SuiteRun> {
  const detected = opts.detected ?? detectTestCommand(root);
  if (detected === undefined) throw new Error(`no test command in ${root}`);
  const reportFile = join(tempDir('keel-report-'), 'report');
  const invocation = buildInvocation(detected, {
    reportFile,
    ...(opts.filter === undefined ? {} : { filter: opts.filter }),
  });
  return runSuite(root, invocation, {
    timeoutS: opts.timeoutS ?? 60,
    signal: new AbortController().signal,
    // the repo's vitest stands in for a project's own install
    env: { ...process.env, PATH: `${REPO_BIN}:${process.env.PATH ?? ''}` },
  });
}

export const byId = (run: SuiteRun) => Object.fromEntries(run.results.map((r) => [r.id, r]));
