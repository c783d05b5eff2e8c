/**
 * Approvals for one chat: the core asks (a write, a shell command, a hook's question) and the person
 * answers yes / no / always (for this tool, remembered for the rest of the chat) / an explanation
 * that goes back to the model as the refusal's message. Questions asked at once (a subagent and its
 * parent) are put to the person one at a time, in order: none replaces another.
 */

import type { ApprovalAnswer, ApprovalRequest } from '../agent/approvals.js';

export type { ApprovalAnswer, ApprovalRequest };

/** What the person chose at the prompt. */
export type ApprovalChoice =
  | { kind: 'yes' }
  | { kind: 'no' }
  | { kind: 'always' }
  | { kind: 'explain'; message: string };

export class ChatApprover {
  private readonly always = new Set<string>();
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly ask: (req: ApprovalRequest) => Promise<ApprovalChoice>) {}

  /** Answer a request: at once for a tool the person said "always" to, else by asking (in turn). */
  readonly approve = (req: ApprovalRequest): Promise<ApprovalAnswer> => {
    const next = this.queue.then(() => this.decide(req));
    this.queue = next.catch(() => undefined);
    return next;
  };

  private async decide(req: ApprovalRequest): Promise<ApprovalAnswer> {
    if (this.always.has(req.tool)) return { allow: true };
    const choice = await this.ask(req);
    switch (choice.kind) {
      case 'yes':
        return { allow: true };
      case 'always':
        this.always.add(req.tool);
        return { allow: true };
      case 'explain':
        return { allow: false, message: choice.message };
      default:
        return { allow: false };
    }
  }

  /** Tools answered "always" so far. */
  remembered(): string[] {
    return [...this.always];
  }
}
