/** `keel ledger [RUN]`: the model calls of the team store's ledger, per run, with what they cost and how that is known. */
import { Ledger, type LedgerRow, type LedgerTotals } from '../store/ledger.js';
import { EXIT } from '../term/exit-codes.js';
import { inertLine } from '../term/inert.js';
import { ConfigError } from '../term/options.js';
import { reportError } from './errors.js';
import { dim, red } from './render.js';
import { type OpenedStore, openConfiguredStore } from './team-store.js';

interface Flags {
  json?: boolean;
  cwd?: string;
  profile?: string;
  limit?: number;
}

function totalsDocument(t: LedgerTotals): Record<string, unknown> {
  return {
    run_id: t.runId,
    calls: t.calls,
    prompt_tokens: t.promptTokens,
    completion_tokens: t.completionTokens,
    cached_tokens: t.cachedTokens,
    cost_usd: t.costUsd,
    unknown_cost_calls: t.unknownCostCalls,
    tasks: t.tasks,
    sessions: t.sessions,
    first_at: new Date(t.firstTs).toISOString(),
    last_at: new Date(t.lastTs).toISOString(),
  };
}

function callDocument(r: LedgerRow): Record<string, unknown> {
  return {
    seq: r.seq,
    at: new Date(r.ts).toISOString(),
    task_id: r.taskId ?? null,
    session_id: r.sessionId ?? null,
    provider: r.provider,
    model: r.model,
    tier: r.tier ?? null,
    score: r.score ?? null,
    signals: r.signals,
    reason: r.reason ?? null,
    prompt_tokens: r.promptTokens,
    completion_tokens: r.completionTokens,
    cached_tokens: r.cachedTokens,
    latency_ms: r.latencyMs,
    cost_usd: r.costUsd ?? null,
    cost_source: r.costSource,
    reissued: r.reissued,
  };
}

/** "$0.0431", with the calls whose cost is unknown said aloud rather than counted as free. */
function cost(t: Pick<LedgerTotals, 'costUsd' | 'unknownCostCalls'>): string {
  const known = `$${t.costUsd.toFixed(4)}`;
  if (!t.unknownCostCalls) return known;
  return `${known} + ${t.unknownCostCalls} call${t.unknownCostCalls === 1 ? '' : 's'} of unknown cost`;
}

/** Print the ledger: every run's totals, or one run's calls. */
export async function showLedger(runId: string | undefined, flags: Flags): Promise<number> {
  let opened: OpenedStore;
  try {
    opened = await openConfiguredStore(flags, { create: false });
  } catch (err) {
    if (err instanceof ConfigError) return reportError(flags.json, 'CONFIG_ERROR', err.message);
    return reportError(flags.json, 'ENVIRONMENT_ERROR', `cannot open the store at ${(err as Error).message}`);
  }
  const { store, engine, where } = opened;
  try {
    const ledger = store && new Ledger(store);
    if (runId === undefined) {
      const runs = (await ledger?.runs(flags.limit ?? 50)) ?? [];
      if (flags.json) {
        out({ store: engine, runs: runs.map(totalsDocument) });
        return EXIT.ok;
      }
      if (!runs.length) {
        process.stdout.write(`no model calls in the ledger (${inertLine(where)})\n`);
        return EXIT.ok;
      }
      for (const t of runs)
        process.stdout.write(
          `${inertLine(t.runId)}  ${plural(t.calls, 'call')}${scope(t)}  ${t.promptTokens}+${t.completionTokens} tokens  ${cost(t)}  ${dim(new Date(t.lastTs).toISOString())}\n`,
        );
      return EXIT.ok;
    }
    const totals = await ledger?.totals(runId);
    if (!ledger || !totals) {
      const message = `no model calls recorded for run ${JSON.stringify(runId)} in ${where}`;
      if (flags.json) out({ exit_code: EXIT.failed, error: message });
      else process.stderr.write(`${red('keel:')} ${inertLine(message)}\n`);
      return EXIT.failed;
    }
    const calls = await ledger.entries(runId);
    if (flags.json) {
      out({ store: engine, run_id: runId, totals: totalsDocument(totals), calls: calls.map(callDocument) });
      return EXIT.ok;
    }
    // a run of several sessions (a fix's plan and attempts, a batch's fixes) says which session made each call
    const bySession = totals.sessions > 1;
    for (const c of calls) {
      const session = bySession && c.sessionId ? `  session ${c.sessionId}` : '';
      const routed = c.tier ? ` tier ${c.tier}${c.score !== undefined ? ` (score ${c.score})` : ''}` : '';
      const price = c.costUsd === undefined ? 'cost unknown' : `$${c.costUsd.toFixed(4)} ${c.costSource}`;
      process.stdout.write(
        `${inertLine(
          `#${c.seq} ${c.taskId ? `${c.taskId} ` : ''}${c.provider}/${c.model}${routed}  ${c.promptTokens}+${c.completionTokens} tokens (${c.cachedTokens} cached)  ${c.latencyMs} ms  ${price}${c.reissued ? '  re-issued' : ''}${session}`,
        )}\n`,
      );
    }
    process.stdout.write(
      `${totals.calls} call${totals.calls === 1 ? '' : 's'}, ${totals.promptTokens}+${totals.completionTokens} tokens, ${cost(totals)}\n`,
    );
    return EXIT.ok;
  } finally {
    await store?.close();
  }
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

/** ` (3 tasks)` for a batch, ` (2 sessions)` for a fix's plan and attempt; nothing for a session of its own. */
function scope(t: LedgerTotals): string {
  if (t.tasks) return ` (${plural(t.tasks, 'task')})`;
  return t.sessions > 1 ? ` (${plural(t.sessions, 'session')})` : '';
}

function out(doc: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify(doc, null, 2)}\n`);
}
