/**
 * A2A tasks as sessions of the serve app's SessionManager, so they show in /v1/sessions and the web
 * workspace like any other: the executor's start function over start/subscribe/approve/cancel.
 */
import type { ApprovalRequest } from '../../agent/approvals.js';
import type { SessionEvent } from '../../agent/events.js';
import type { SessionOutcome } from '../../agent/session.js';
import type { TerminalCode } from '../../agent/terminal.js';
import type { LoadedConfig } from '../../config/load.js';
import type { Frame, SessionManager } from '../sessions.js';
import type { StartSessionFn } from './executor.js';

/** Start each A2A task as a session of `manager`; its approvals come to the executor's approver. */
export function startWithManager(manager: SessionManager, configFor: () => LoadedConfig): StartSessionFn {
  return async (opts) => {
    const { id } = await manager.start({ prompt: opts.prompt, mode: opts.mode, loaded: configFor() });
    opts.onStarted?.(id);
    const mode = opts.mode;
    // subscribing after the start loses nothing: the stream replays the log from the first event
    return new Promise<SessionOutcome>((resolve) => {
      const onAbort = () => manager.cancel(id);
      opts.signal.addEventListener('abort', onAbort, { once: true });
      let end: Extract<SessionEvent, { type: 'session_end' }> | undefined;
      let unsubscribe = () => {};
      const listener = (frame: Frame) => {
        if (frame.kind === 'event') {
          const event = { ...frame.event.data, type: frame.event.type } as SessionEvent;
          if (event.type === 'session_end') end = event;
          opts.onEvent?.(event, frame.seq);
        } else if (frame.kind === 'approval' && opts.approve) {
          const a = frame.data;
          const args = (a.args ?? {}) as { path?: unknown; command?: unknown };
          const request: ApprovalRequest = {
            id: a.id,
            callId: a.call_id,
            tool: a.tool,
            kind: a.diff ? 'write' : 'shell',
            reason: a.question,
            args: a.args,
            ...(typeof args.path === 'string' ? { path: args.path } : {}),
            ...(typeof args.command === 'string' ? { command: args.command } : {}),
            ...(a.diff ? { diff: a.diff } : {}),
            ...(a.agent ? { agent: a.agent } : {}),
          };
          void opts.approve(request).then((answer) => {
            manager.approve(
              id,
              a.id,
              answer.allow ? 'allow' : 'deny',
              answer.allow ? undefined : answer.message,
            );
          });
        } else if (frame.kind === 'approval_settled') {
          const { id: question, decision, reason } = frame.data;
          opts.onSettled?.(
            question,
            decision === 'allow' ? { allow: true } : { allow: false, ...(reason ? { message: reason } : {}) },
          );
        } else if (frame.kind === 'end') {
          unsubscribe();
          opts.signal.removeEventListener('abort', onAbort);
          const code = (end?.code ?? frame.data.code) as TerminalCode;
          resolve({
            sessionId: id,
            mode,
            code,
            reason: end?.reason ?? '',
            summary: end?.summary ?? '',
            rounds: end?.rounds ?? 0,
            tokens: end?.tokens ?? { input: 0, output: 0 },
            costUsd: end?.cost_usd ?? null,
            filesChanged: end?.files_changed ?? [],
          });
        }
      };
      unsubscribe = manager.subscribe(id, 0, listener);
    });
  };
}
