/** Asking a person before a call: what a face (the terminal, chat, a server) is shown, and what it answers. */
import { randomBytes } from 'node:crypto';

/** One question: the file and its diff for a write, the exact command for a shell call, a hook's question. */
export interface ApprovalRequest {
  /**
   * The question's own id, made by keel (never the model's call id, which a subagent and its parent
   * may share): recorded in the log with the question and its answer, and what an answer names.
   */
  id: string;
  callId: string;
  tool: string;
  /** Why keel asks: a write or a command under the `approvals` setting, or a hook that asked. */
  kind: 'write' | 'shell' | 'hook';
  /** The question in words (a hook's reason, or which setting asks). Hostile text: show it inert. */
  reason: string;
  /** For a write: the file, relative to the workspace, and the unified diff it would make. */
  path?: string;
  diff?: string;
  /** For a command: exactly what would run, and whether inside the sandbox. */
  command?: string;
  sandboxed?: boolean;
  /** The call's arguments as parsed (for faces that show more). */
  args: unknown;
  /** The subagent whose call it is (its name); absent for the session's own calls. */
  agent?: string;
}

/** A yes, or a no with what to tell the model (sent back as the call's result). */
export type ApprovalAnswer = { allow: true } | { allow: false; message?: string };

export type Approver = (request: ApprovalRequest) => Promise<ApprovalAnswer>;

/** A fresh question id: `q-` and 12 hex digits, unguessable and never chosen by the model. */
export function newQuestionId(): string {
  return `q-${randomBytes(6).toString('hex')}`;
}
