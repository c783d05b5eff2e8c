/**
 * Batch runs (`keel batch`) for the page, read from the team store the config names (SQLite in
 * KEEL_HOME, or PostgreSQL): progress, each task's state and verdict, spend over time and the ledger.
 * Only runs of this project are named: every task's repository is the project's folder (the same rule
 * as sessions and fix runs), so a team store shared by many projects shows each server its own.
 */
import { existsSync } from 'node:fs';
import type { Hono } from 'hono';
import { type RunReport, reportRun } from '../batch/report.js';
import { recordedIn } from '../fix/runs.js';
import { openStore, redact, type Store, type StoreTarget } from '../store/engine.js';
import { Ledger } from '../store/ledger.js';
import { RunQueue, type RunView } from '../store/queue.js';
import { NotFound } from './sessions.js';

/** The team store, opened on first use (a server whose page never shows batches never opens it). */
export class TeamStore {
  private opened: Promise<Store | undefined> | undefined;

  constructor(private readonly target: StoreTarget) {}

  /** The store; undefined when it is the default SQLite file and no batch ever made it. */
  get(): Promise<Store | undefined> {
    this.opened ??= (async () => {
      if (this.target.engine === 'sqlite' && !existsSync(this.target.path)) return undefined;
      try {
        return await openStore(this.target);
      } catch (err) {
        const where = this.target.engine === 'sqlite' ? this.target.path : redact(this.target.url);
        this.opened = undefined; // asked again on the next request
        throw new Error(`the team store ${where}: ${(err as Error).message}`);
      }
    })();
    return this.opened;
  }

  async close(): Promise<void> {
    const store = await this.opened?.catch(() => undefined);
    await store?.close();
  }
}

export function mountBatches(app: Hono, teamStore: TeamStore, root: string): void {
  /** This project's run: every task's repository is the project. */
  const ownRun = async (queue: RunQueue, run: RunView): Promise<boolean> => {
    const tasks = await queue.tasks(run.id);
    return (
      tasks.length > 0 &&
      tasks.every((t) => {
        const repo = (t.spec as { repo?: unknown } | undefined)?.repo;
        return typeof repo === 'string' && recordedIn(repo, root);
      })
    );
  };

  app.get('/v1/batches', async (c) => {
    const store = await teamStore.get();
    if (!store) return c.json({ batches: [] });
    const queue = new RunQueue(store);
    const ledger = new Ledger(store);
    const batches = [];
    for (const run of await queue.runs(200)) {
      if (!(await ownRun(queue, run))) continue;
      const totals = await ledger.totals(run.id);
      batches.push({ ...summary(run), cost_usd: totals?.costUsd ?? 0, calls: totals?.calls ?? 0 });
    }
    return c.json({ batches });
  });

  app.get('/v1/batches/:id', async (c) => {
    const id = c.req.param('id');
    const store = await teamStore.get();
    const queue = store && new RunQueue(store);
    const run = queue && (await queue.run(id));
    // another project's run is as unknown as none
    if (!store || !queue || !run || !(await ownRun(queue, run))) throw new NotFound(`no batch run ${id}`);
    const report = (await reportRun(store, id)) as RunReport;
    const tasks = await queue.tasks(id);
    const calls = await new Ledger(store).entries(id);
    let spent = 0;
    return c.json({
      ...summary(run),
      tasks: tasks.map((t) => {
        const r = report.tasks.find((x) => x.id === t.id);
        return {
          task_id: t.id,
          state: t.state,
          attempt: t.attempt,
          issue: String((t.spec as { issue?: unknown } | undefined)?.issue ?? ''),
          verdict: r?.verdict ?? 'unfinished',
          branch: r?.branch ?? null,
          error: r?.error ?? null,
          calls: r?.calls ?? 0,
          cost_usd: r?.costUsd ?? 0,
        };
      }),
      totals: {
        ...report.totals,
        cost_usd: report.totals.costUsd,
        unknown_cost_calls: report.totals.unknownCostCalls,
      },
      // the spend as it grew, one point per call (the chart draws it over time)
      spend: calls.map((call) => {
        spent += call.costUsd ?? 0;
        return { seq: call.seq, ts: call.ts, task_id: call.taskId ?? null, cost_usd: spent };
      }),
      ledger: calls.map((call) => ({
        seq: call.seq,
        ts: call.ts,
        task_id: call.taskId ?? null,
        provider: call.provider,
        model: call.model,
        tier: call.tier ?? null,
        prompt_tokens: call.promptTokens,
        completion_tokens: call.completionTokens,
        latency_ms: call.latencyMs,
        cost_usd: call.costUsd ?? null,
        cost_source: call.costSource,
      })),
    });
  });
}

function summary(run: RunView) {
  const total = Object.values(run.counts).reduce((a, b) => a + b, 0);
  const ended = run.counts.done + run.counts.failed + run.counts.cancelled;
  return {
    run_id: run.id,
    status: run.status,
    ...(run.statusReason ? { status_reason: run.statusReason } : {}),
    created_at: new Date(run.createdAt).toISOString(),
    concurrency: run.concurrency,
    counts: run.counts,
    tasks_total: total,
    tasks_ended: ended,
  };
}
