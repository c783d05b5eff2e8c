/**
 * A2A messages as keel reads and writes them: the skill a message names, the answer a follow-up gives
 * (yes/no, naming a question by keel's id), its text; and the parts and status events keel sends.
 */
import { randomUUID } from 'node:crypto';
import { type Message, type Part, Task, type TaskState } from '@a2a-js/sdk';
import {
  AgentEvent,
  type AgentExecutionEvent,
  type ExecutionEventBus,
  type RequestContext,
} from '@a2a-js/sdk/server';
import type { ApprovalRequest } from '../../agent/approvals.js';
import type { SkillId } from './card.js';

export function publishStatus(
  bus: ExecutionEventBus,
  taskId: string,
  contextId: string,
  state: TaskState,
  text: string,
) {
  bus.publish(statusEvent(taskId, contextId, state, text));
}

export function statusEvent(
  taskId: string,
  contextId: string,
  state: TaskState,
  text: string,
  metadata?: Record<string, unknown>,
  more: Part[] = [],
): AgentExecutionEvent {
  return AgentEvent.statusUpdate({
    taskId,
    contextId,
    status: {
      state,
      message: {
        messageId: randomUUID(),
        contextId,
        taskId,
        role: 2, // ROLE_AGENT
        parts: [partOf(text, 'text/plain'), ...more],
        metadata: undefined,
        extensions: [],
        referenceTaskIds: [],
      },
      timestamp: new Date().toISOString(),
    },
    metadata,
  });
}

export function taskOf(ctx: RequestContext): Task {
  return (
    ctx.task ??
    Task.fromJSON({ id: ctx.taskId, contextId: ctx.contextId, status: { state: 'TASK_STATE_SUBMITTED' } })
  );
}

/** The skill a message names in its metadata (`skill`) or a data part ({skill}); ask by default. */
export function skillOf(message: Message): SkillId {
  const named = [message.metadata?.skill, ...message.parts.map((p) => dataOf(p)?.skill)].find(
    (s) => typeof s === 'string',
  );
  return named === 'fix' || named === 'review' || named === 'edit' ? named : 'ask';
}

/** A question id as keel makes them (`newQuestionId`). */
const QUESTION_ID = /\bq-[0-9a-f]{12}\b/;

/**
 * What a follow-up says: decision true for yes/allow, false for no/deny, undefined when it answers
 * nothing; `question` the id it names (a data part's {question}, or an id in the text).
 */
export function answerOf(message: Message): { decision?: boolean; question?: string } {
  for (const part of message.parts) {
    const data = dataOf(part);
    const said =
      typeof data?.decision === 'string'
        ? data.decision
        : part.content?.$case === 'text'
          ? String(part.content.value)
          : undefined;
    const word = said?.trim().toLowerCase();
    if (word === undefined) continue;
    const decision = /^(yes|y|allow|approve|ok)\b/.test(word)
      ? true
      : /^(no|n|deny|reject)\b/.test(word)
        ? false
        : undefined;
    if (decision === undefined) continue;
    const question = typeof data?.question === 'string' ? data.question : word.match(QUESTION_ID)?.[0];
    return { decision, ...(question ? { question } : {}) };
  }
  return {};
}

export function dataOf(part: Part): Record<string, unknown> | undefined {
  const value = part.content?.$case === 'data' ? part.content.value : undefined;
  return value && typeof value === 'object' ? (value as Record<string, unknown>) : undefined;
}

export function textOf(parts: Part[]): string {
  return parts
    .map((p) => (p.content?.$case === 'text' ? String(p.content.value) : ''))
    .join('\n')
    .trim();
}

export function questionOf(request: ApprovalRequest): string {
  const what = request.path ? ` ${request.path}` : request.command ? `: ${request.command}` : '';
  return `approve ${request.tool}${what}? (${request.reason})${request.diff ? `\n${request.diff}` : ''}`;
}

export function dataPartOf(value: Record<string, unknown>): Part {
  return {
    content: { $case: 'data', value },
    mediaType: 'application/json',
    filename: '',
    metadata: undefined,
  };
}

export function partOf(text: string, mediaType: string): Part {
  return { content: { $case: 'text', value: text }, mediaType, filename: '', metadata: undefined };
}
