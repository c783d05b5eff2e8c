/**
 * A worker's model calls, read back from its sessions' event logs into ledger entries: one per
 * `assistant_message`, timed from the `model_request` before it (marked re-issued when that request was
 * sent again after a kill). The worker (`keel fix`) records its
 * sessions in KEEL_HOME; the supervisor copies them into the team store's ledger when the attempt ends.
 */
import type { EventLog, StoredEvent } from '../store/event-log.js';
import type { CostSource, LedgerEntry } from '../store/ledger.js';

interface Usage {
  input?: number;
  output?: number;
  reported?: boolean;
}

/** The calls of a session and every session under it (plan, attempts, subagents), oldest session first. */
export function ledgerEntriesOf(
  log: EventLog,
  rootSessionId: string,
  where: { runId: string; taskId: string },
): LedgerEntry[] {
  const entries: LedgerEntry[] = [];
  const visit = (sessionId: string) => {
    const session = log.getSession(sessionId);
    if (!session) return;
    let requestedAt: number | undefined;
    let reissued = false;
    for (const event of log.events(sessionId)) {
      if (event.type === 'model_request') {
        requestedAt = Date.parse(event.ts);
        // sent again after a kill: the log marks it (agent/loop.ts), and so does the ledger
        reissued = event.data.reissued === true;
      }
      if (event.type !== 'assistant_message') continue;
      entries.push({
        ...entry(event, session.provider, sessionId, requestedAt, where),
        ...(reissued ? { reissued } : {}),
      });
      requestedAt = undefined;
      reissued = false;
    }
    for (const child of log.childSessions(sessionId)) visit(child.id);
  };
  visit(rootSessionId);
  return entries;
}

function entry(
  event: StoredEvent,
  provider: string,
  sessionId: string,
  requestedAt: number | undefined,
  where: { runId: string; taskId: string },
): LedgerEntry {
  const usage = (event.data.usage ?? {}) as Usage;
  const cost = typeof event.data.cost_usd === 'number' ? event.data.cost_usd : undefined;
  // keel prices tokens with the configured prices: counted by the server, or only estimated by keel
  const costSource: CostSource = cost === undefined ? 'unknown' : usage.reported ? 'priced' : 'estimated';
  const answeredAt = Date.parse(event.ts);
  return {
    runId: where.runId,
    taskId: where.taskId,
    sessionId,
    provider,
    model: String(event.data.model ?? ''),
    promptTokens: Math.max(0, usage.input ?? 0),
    completionTokens: Math.max(0, usage.output ?? 0),
    latencyMs: requestedAt === undefined ? 0 : Math.max(0, answeredAt - requestedAt),
    ...(cost === undefined ? {} : { costUsd: cost }),
    costSource,
  };
}
