/**
 * Resuming a killed run at the granularity of one tool effect. The calls of the last answer that have no
 * result in the log are settled from their intents (tool_start's `intent`, see events.ts), never blindly
 * run twice:
 * - a read is run again;
 * - a write's targets are hashed: each holds what the call writes → the result is recorded as happened;
 *   each holds what it held before → the call runs once; anything else → blocked_uncertain;
 * - a command in the workspace (shell, run_tests) runs again after the workspace is put back to the tree
 *   recorded at its intent;
 * - a call idempotent by its own id (hub_send, keyed by the session and the call) runs again: the hub
 *   gives the first run's message back;
 * - an effect keel cannot check (an MCP tool not declared read-only, a remote agent, a subagent, memory)
 *   ends the run BLOCKED_UNCERTAIN for a person to look at.
 * A call that never started (no tool_start) is simply run: it did nothing yet.
 */
import { resolve } from 'node:path';
import type { ToolCall } from '../model/types.js';
import { fileSha256 } from '../tools/file-change.js';
import type { ResumedAs, ToolIntent } from './events.js';
import type { OpenCall } from './history.js';
import type { WorktreeJournal } from './loop.js';
import { Stop } from './stop.js';
import { type CallRun, runCall } from './tool-call.js';

/** What to do with one open call: run it (and how the result is marked), record it as done, or stop. */
export type Settlement =
  | { kind: 'run'; resumed?: ResumedAs; restoreTree?: string }
  | { kind: 'happened' }
  | { kind: 'uncertain'; reason: string };

/** Decide how to settle a call the killed run left open, from its intent and the workspace as it is now. */
export function settlementOf(
  call: OpenCall,
  root: string,
  worktree: WorktreeJournal | undefined,
): Settlement {
  if (!call.started) return { kind: 'run' };
  const intent: ToolIntent | undefined = call.intent;
  if (!intent)
    return {
      kind: 'uncertain',
      reason: `the ${call.tool} call started but its log names no intent, so keel cannot tell what it did`,
    };
  switch (intent.effect) {
    case 'read':
      return { kind: 'run', resumed: 'rerun' };
    case 'write': {
      if (!intent.files.length || !intent.result) return { kind: 'run', resumed: 'rerun' };
      const now = intent.files.map((f) => ({ ...f, current: fileSha256(resolve(root, f.path)) }));
      if (now.every((f) => f.current === f.after)) return { kind: 'happened' };
      if (now.every((f) => f.current === f.before)) return { kind: 'run', resumed: 'applied' };
      const changed = now.find((f) => f.current !== f.before && f.current !== f.after);
      return {
        kind: 'uncertain',
        reason: `the ${call.tool} call on ${changed?.path ?? 'its files'} was cut off, and the file now holds neither what it held before nor what the call writes: something else changed it`,
      };
    }
    case 'worktree':
      if (!intent.tree || !worktree)
        return {
          kind: 'uncertain',
          reason: `the ${call.tool} call was cut off and no tree of the workspace was recorded to run it again from`,
        };
      return { kind: 'run', resumed: 'restored', restoreTree: intent.tree };
    case 'other':
      // read-only, or idempotent by the call's own id (hub_send): running it again does nothing twice
      if (intent.read_only || intent.idempotent) return { kind: 'run', resumed: 'rerun' };
      return {
        kind: 'uncertain',
        reason: `the ${call.tool} call was cut off mid-way; it is not declared read-only and keel cannot check whether it took effect, so it is not run again: check it, then run the task again`,
      };
  }
}

/**
 * Settle every call the last run left open, in the order the model made them. Throws a Stop with
 * BLOCKED_UNCERTAIN (after recording `effect_uncertain`) at the first call that cannot be settled.
 */
export async function settleOpenCalls(
  session: CallRun,
  worktree: WorktreeJournal | undefined,
): Promise<void> {
  const { state, record, opts } = session;
  const root = opts.policy.scope.root;
  const round = state.rounds;
  for (const [callId, open] of [...state.open.entries()]) {
    const settlement = settlementOf(open, root, worktree);
    if (settlement.kind === 'uncertain') {
      record({ type: 'effect_uncertain', call_id: callId, tool: open.tool, reason: settlement.reason });
      throw new Stop('BLOCKED_UNCERTAIN', settlement.reason);
    }
    if (settlement.kind === 'happened') {
      const intent = open.intent as Extract<ToolIntent, { effect: 'write' }>;
      const result = intent.result as NonNullable<typeof intent.result>;
      record({
        type: 'tool_result',
        call_id: callId,
        tool: open.tool,
        ...result,
        duration_ms: 0,
        files_after: intent.files.map((f) => ({ path: f.path, after: f.after })),
        resumed: 'happened',
      });
      for (const f of result.files_changed) session.filesChanged.add(f);
      continue;
    }
    if (settlement.restoreTree) worktree?.restore(settlement.restoreTree);
    const call: ToolCall = { id: callId, name: open.tool, arguments: open.arguments };
    await runCall(session, call, round, false, settlement.resumed);
  }
}
