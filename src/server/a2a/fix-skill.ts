/** The A2A fix skill: a verified `keel fix` run of the server's FixRuns, reported as the task's artifact. */
import { readFileSync } from 'node:fs';
import type { LoadedConfig } from '../../config/load.js';
import type { FixResult } from '../../fix/run.js';
import type { FixRuns } from '../fixes.js';
import type { FixReport, StartFixFn } from './executor.js';

/** Start each fix task as a run of `fixes`, so `/v1/runs` and the web page show it too. */
export function startFixWith(fixes: FixRuns, configFor: () => LoadedConfig): StartFixFn {
  return ({ task, signal }) => {
    const { runId, done } = fixes.start({ task, loaded: configFor(), signal });
    return { runId, done: done.then(fixReportOf) };
  };
}

/** What a task reports of a run: its verdict, and the PR text and diff it wrote. */
export function fixReportOf(result: FixResult): FixReport {
  const read = (path: string | undefined) => {
    try {
      return path ? readFileSync(path, 'utf8') : '';
    } catch {
      return '';
    }
  };
  return {
    runId: result.runId,
    code: result.code,
    verified: result.status === 'verified',
    reason: result.reason,
    summary: result.summary,
    attempts: result.attempts,
    branch: result.branch,
    pr: read(result.paths?.pr),
    diff: read(result.paths?.diff),
  };
}
