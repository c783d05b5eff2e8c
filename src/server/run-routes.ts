/** The fix-run routes: start a fix, list the project's fix and loop runs, read one. */
import type { Hono } from 'hono';
import { keelPaths } from '../config/paths.js';
import { readRuns, recordedIn, runReport, summarizeRun } from '../fix/runs.js';
import { FixBody } from './api.js';
import type { AppOptions } from './app.js';
import { body, fail, projectGuard } from './http.js';
import { NotFound } from './sessions.js';

export function mountRuns(app: Hono, opts: AppOptions): void {
  const { manager } = opts;
  const { otherProject, onlyThisProject } = projectGuard(opts);
  // fix runs: in this process (src/server/fixes.ts), shared with the A2A fix skill
  const fixes = opts.fixes;
  app.post('/v1/fix', async (c) => {
    const req = await body(c, FixBody);
    if (typeof req === 'string') return fail(c, 400, 'BAD_REQUEST', req);
    const { runId, done } = fixes.start({
      task: req.task,
      ...(req.test_command ? { testCommand: req.test_command } : {}),
      loaded: opts.configFor({}),
    });
    // the run's own log holds its verdict or the reason it could not start
    done.catch(() => {});
    return c.json({ run_id: runId }, 202);
  });
  const runView = (id: string) => {
    const paths = keelPaths(opts.env);
    const row = manager.log.getSession(id);
    if (!row || !['fix', 'loop'].includes(row.mode) || !recordedIn(row.cwd, manager.root))
      throw new NotFound(`no run ${id}`);
    const run = summarizeRun(manager.log, paths, row);
    const report = runReport(run);
    const running = fixes.isRunning(id) || run.code === 'running';
    const end = manager.log.events(id).findLast((e) => e.type === 'fix_end' || e.type === 'loop_end');
    return {
      run_id: run.id,
      kind: run.kind,
      title: run.title,
      status: running ? 'running' : run.verdict === 'verified' ? 'verified' : 'failed',
      code: running ? null : run.code,
      attempts: run.attempts,
      cost_usd: run.costUsd,
      branch: run.branch,
      rationale: report.rationale,
      pr_description: report.pr,
      diff: report.diff,
      started_at: run.createdAt,
      ended_at: end?.ts ?? null,
    };
  };
  app.get('/v1/runs', (c) => {
    if (otherProject(c)) return fail(c, 400, 'BAD_REQUEST', onlyThisProject);
    const runs = readRuns(manager.log, keelPaths(opts.env), { limit: 50, root: manager.root }).map((r) =>
      runView(r.id),
    );
    return c.json({ runs });
  });
  app.get('/v1/runs/:id', (c) => c.json(runView(c.req.param('id'))));
}
