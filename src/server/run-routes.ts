/** The fix-run routes: start a fix, list the project's fix and loop runs, read one. */
import type { Hono } from 'hono';
import { keelPaths } from '../config/paths.js';
import { ApplyError, applyFix, applyPlan } from '../fix/apply.js';
import { type RunSummary, readRuns, recordedIn, runReport, summarizeRun } from '../fix/runs.js';
import { Ledger } from '../store/ledger.js';
import { ApplyBody, ApprovalBody, BuildBody, FixBody } from './api.js';
import type { AppOptions } from './app.js';
import type { BuildState } from './builds.js';
import { body, fail } from './http.js';
import { NotFound } from './sessions.js';

export function mountRuns(app: Hono, opts: AppOptions): void {
  const { manager } = opts;
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
  // keel build: the tests wait for a person as the run's pending question (src/server/builds.ts)
  app.post('/v1/build', async (c) => {
    const req = await body(c, BuildBody);
    if (typeof req === 'string') return fail(c, 400, 'BAD_REQUEST', req);
    const { runId, done } = fixes.builds.start({
      feature: req.feature.trim(),
      ...(req.test_command ? { testCommand: req.test_command } : {}),
      loaded: opts.configFor({}),
    });
    done.catch(() => {});
    return c.json({ run_id: runId }, 202);
  });
  app.post('/v1/runs/:id/approvals/:question', async (c) => {
    const req = await body(c, ApprovalBody);
    if (typeof req === 'string') return fail(c, 400, 'BAD_REQUEST', req);
    const id = c.req.param('id');
    const question = c.req.param('question');
    // only a build this server started asks; any other run (another project's too) is not named here
    if (!fixes.builds.get(id)) throw new NotFound(`no build ${id} of this server`);
    if (!fixes.builds.answer(id, question, req.decision, req.reason))
      return fail(
        c,
        409,
        'NOT_PENDING',
        `no question ${question} waits in build ${id}; an answer names a question of its pending_approvals[].id`,
      );
    return c.json({ ok: true });
  });
  /** A run of this project, or NotFound: another project's run is not named here. */
  const ownRun = (id: string) => {
    const row = manager.log.getSession(id);
    // a build's fix run works in the folder of its tests (keel's worktree), but it is this server's own
    const ours = row && (recordedIn(row.cwd, manager.root) || fixes.builds.get(id));
    if (!row || !['fix', 'loop'].includes(row.mode) || !ours) throw new NotFound(`no run ${id}`);
    return summarizeRun(manager.log, keelPaths(opts.env), row);
  };
  const runView = (id: string) => {
    const run = ownRun(id);
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
      // whether the page may offer "Merge into the current branch": the same rules as keel runs apply
      applicable: appliable(run),
      rationale: report.rationale,
      pr_description: report.pr,
      diff: report.diff,
      started_at: run.createdAt,
      ended_at: end?.ts ?? null,
    };
  };
  /** A build this server started: before its fix run starts, from memory; then the fix run's view, as a build. */
  const buildView = (b: BuildState) => {
    const row = manager.log.getSession(b.runId);
    const fix = row?.mode === 'fix' ? runView(b.runId) : null;
    const r = b.result;
    const status = b.interrupted
      ? 'interrupted'
      : b.phase === 'waiting'
        ? 'waiting'
        : b.phase !== 'ended'
          ? 'running'
          : r?.status === 'verified' || r?.status === 'already_exists'
            ? r.status
            : 'failed';
    return {
      run_id: b.runId,
      title: b.feature,
      attempts: 0,
      cost_usd: null,
      branch: null,
      rationale: null,
      pr_description: null,
      diff: null,
      started_at: b.startedAt,
      ended_at: b.endedAt,
      ...(fix ?? {}),
      // the fix run's log names its branch in the tests' worktree, gone by now: the build says where it is
      ...(r ? { branch: r.status === 'verified' ? (r.fix?.branch ?? null) : null } : {}),
      // its branch is merged as keel build's is, by the person (the page's merge button is for fix runs)
      applicable: false,
      kind: 'build',
      status,
      code: b.phase === 'ended' ? (r?.code ?? 'ENVIRONMENT_ERROR') : null,
      reason: r?.reason ?? b.error,
      tests: b.tests,
      tests_session: b.testsSession,
      // its fix run's log exists (the page then follows it as a fix run's)
      fix_run: fix !== null,
      pending_approvals: b.pending ? [b.pending.approval] : [],
    };
  };
  const view = (id: string) => {
    const b = fixes.builds.get(id);
    return b ? buildView(b) : runView(id);
  };
  app.get('/v1/runs', (c) => {
    const listed = readRuns(manager.log, keelPaths(opts.env), { limit: 50, root: manager.root });
    const known = new Set(listed.map((r) => r.id));
    // a build whose fix run has not started is in no log yet
    const early = fixes.builds.list().filter((b) => !known.has(b.runId));
    return c.json({ runs: [...early.map(buildView), ...listed.map((r) => view(r.id))] });
  });
  /**
   * The routing tiers' share of a run's calls and cost, from its rows in the team store's ledger (a call
   * no tier routed is "untiered"); none when the run made no call there.
   */
  const tiers = async (id: string) => {
    const store = await opts.teamStore?.get();
    if (!store) return [];
    const byTier = new Map<string, { tier: string; calls: number; cost_usd: number }>();
    for (const call of await new Ledger(store).entries(id)) {
      const tier = call.tier ?? 'untiered';
      const t = byTier.get(tier) ?? { tier, calls: 0, cost_usd: 0 };
      t.calls += 1;
      t.cost_usd += call.costUsd ?? 0;
      byTier.set(tier, t);
    }
    return [...byTier.values()];
  };
  app.get('/v1/runs/:id', async (c) => {
    const id = c.req.param('id');
    return c.json({ ...view(id), tiers: await tiers(id) });
  });
  // a verified fix into the checked-out branch, by src/fix/apply.ts as keel runs apply does it; the body's
  // confirm is the person's yes (the page asks first), the token and Origin checks (security.ts) apply
  app.post('/v1/runs/:id/apply', async (c) => {
    const req = await body(c, ApplyBody);
    if (typeof req === 'string') return fail(c, 400, 'BAD_REQUEST', `nothing applied: ${req}`);
    const id = c.req.param('id');
    if (fixes.isRunning(id)) return fail(c, 409, 'NOT_APPLIED', `run ${id} is still running`);
    try {
      const done = applyFix(applyPlan(ownRun(id), manager.root), (runId, type, data) =>
        fixes.record(runId, type, data),
      );
      return c.json({ applied: true, run_id: id, ...done });
    } catch (err) {
      if (err instanceof ApplyError)
        return fail(c, err.status, err.status === 404 ? 'NOT_FOUND' : 'NOT_APPLIED', err.message);
      throw err;
    }
  });
  app.get('/v1/runs/:id/patch', (c) => {
    const run = ownRun(c.req.param('id'));
    const diff = runReport(run).diff;
    if (run.verdict !== 'verified' || !diff)
      return fail(c, 409, 'NO_PATCH', `run ${run.id} has no verified fix to download`);
    return c.body(diff, 200, {
      'content-type': 'text/x-patch; charset=utf-8',
      'content-disposition': `attachment; filename="keel-fix-${run.id}.patch"`,
    });
  });
}

/** Whether the page offers "Merge into the current branch" (applyPlan makes the rest of the checks on the POST). */
function appliable(run: RunSummary): boolean {
  return run.kind === 'fix' && run.verdict === 'verified' && run.branch !== null;
}
