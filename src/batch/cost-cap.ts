/**
 * A batch run's cost cap (`--cost-cap USD`, kept in the run's spec so a resume holds it): reached when the
 * ledger's sum of the run's calls is at the cap. The supervisor starts no task after that, and each
 * worker's `keel fix` starts no call (model/call-ledger.ts): a run can pass its cap only by the calls
 * already in flight when it was reached, at most one per running worker.
 */
import type { Store } from '../store/engine.js';
import { Ledger } from '../store/ledger.js';
import type { RunView } from '../store/queue.js';

export interface CapStanding {
  capUsd: number;
  spentUsd: number;
  reached: boolean;
}

/** The cap a run was started with, if any. */
export function capOf(run: Pick<RunView, 'spec'>): number | undefined {
  const cap = (run.spec as { cost_cap_usd?: unknown } | null)?.cost_cap_usd;
  return typeof cap === 'number' && Number.isFinite(cap) && cap > 0 ? cap : undefined;
}

/** Where a capped run stands against its cap (one SQL sum); undefined for a run without one. */
export async function capStanding(
  store: Store,
  run: Pick<RunView, 'id' | 'spec'>,
): Promise<CapStanding | undefined> {
  const capUsd = capOf(run);
  if (capUsd === undefined) return undefined;
  const spentUsd = (await new Ledger(store).totals(run.id))?.costUsd ?? 0;
  return { capUsd, spentUsd, reached: spentUsd >= capUsd };
}

/** `cost cap reached: $0.0300 spent of $0.025`, for a status line and a task's error. */
export function capSentence(s: CapStanding): string {
  return `cost cap ${s.reached ? 'reached' : 'held'}: $${s.spentUsd.toFixed(4)} spent of $${s.capUsd}`;
}
