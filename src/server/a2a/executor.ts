/**
 * The A2A executor: a message starts a keel session (skill ask -> ask mode, review -> ask mode with
 * a review prompt, fix -> edit mode), and the session's life becomes the task's states: working
 * while it runs, input-required while an approval waits (a follow-up "yes"/"no" or a data part
 * {decision} answers it), then completed (the answer, and for fix the diff), failed (the terminal
 * code in the status message) or canceled.
 */
import { randomUUID } from 'node:crypto';
import { type Message, type Part, Task, TaskState } from '@a2a-js/sdk';
import {
  AgentEvent,
  type AgentExecutor,
  type ExecutionEventBus,
  type RequestContext,
} from '@a2a-js/sdk/server';
import type { ApprovalAnswer, ApprovalRequest } from '../../agent/approvals.js';
import type { SessionEvent } from '../../agent/events.js';
import type { SessionOutcome, StartOptions } from '../../agent/session.js';
import type { Mode } from '../../config/schema.js';
import type { SkillId } from './card.js';

/** Starts a session for a task: the server's own way (its config, project and tools). */
export type StartSessionFn = (
  opts: Pick<StartOptions, 'mode' | 'prompt' | 'signal' | 'approve' | 'onEvent'>,
) => Promise<SessionOutcome>;

interface Running {
  contextId: string;
  bus: ExecutionEventBus;
  controller: AbortController;
  /** The approval waiting for the caller's answer, if any. */
  pending?: { request: ApprovalRequest; answer(a: ApprovalAnswer): void };
  /** Resolves when the task reaches a state the caller must see (an end, or input-required). */
  stopped: Promise<void>;
  stop(): void;
}

export class KeelExecutor implements AgentExecutor {
  private readonly tasks = new Map<string, Running>();

  constructor(private readonly start: StartSessionFn) {}

  async execute(ctx: RequestContext, bus: ExecutionEventBus): Promise<void> {
    const running = this.tasks.get(ctx.taskId);
    if (running) return this.answer(ctx, bus, running);
    const { taskId, contextId } = ctx;
    const message = ctx.userMessage;
    bus.publish(AgentEvent.task({ ...taskOf(ctx), history: [message] }));
    if (ctx.task) {
      // a finished task takes no more messages: say so instead of starting over under its id
      this.status(
        bus,
        taskId,
        contextId,
        TaskState.TASK_STATE_FAILED,
        'this task has ended; send a new message',
      );
      return;
    }
    const skill = skillOf(message);
    const text = textOf(message.parts);
    if (!text) {
      this.status(
        bus,
        taskId,
        contextId,
        TaskState.TASK_STATE_FAILED,
        'CONFIG_ERROR: the message has no text',
      );
      return;
    }
    const run = this.track(taskId, contextId, bus);
    this.status(bus, taskId, contextId, TaskState.TASK_STATE_WORKING, `keel is working (${skill})`);
    const diffs = new Map<string, string>();
    const onEvent = (event: SessionEvent) => {
      if (event.type === 'tool_result' && event.diff && !event.is_error)
        for (const path of event.files_changed) diffs.set(path, event.diff);
    };
    this.start({
      mode: MODE[skill],
      prompt: promptFor(skill, text),
      signal: run.controller.signal,
      onEvent,
      approve: (request) => this.ask(taskId, request),
    })
      .then((outcome) => this.finish(taskId, skill, outcome, [...diffs.values()]))
      .catch((err: unknown) => {
        const live = this.tasks.get(taskId);
        if (!live) return;
        const cancelled = live.controller.signal.aborted;
        this.status(
          live.bus,
          taskId,
          contextId,
          cancelled ? TaskState.TASK_STATE_CANCELED : TaskState.TASK_STATE_FAILED,
          cancelled ? 'CANCELLED' : `ENVIRONMENT_ERROR: ${err instanceof Error ? err.message : String(err)}`,
        );
        this.settle(taskId);
      });
    await run.stopped;
  }

  async cancelTask(taskId: string, bus: ExecutionEventBus): Promise<void> {
    const running = this.tasks.get(taskId);
    if (!running) return;
    running.bus = bus;
    running.pending?.answer({ allow: false, message: 'the task was canceled' });
    running.controller.abort(new Error('canceled over A2A'));
  }

  /** A follow-up message to a task waiting for approval: "yes"/"no", or a data part {decision}. */
  private async answer(ctx: RequestContext, bus: ExecutionEventBus, running: Running): Promise<void> {
    running.bus = bus;
    bus.publish(AgentEvent.task(taskOf(ctx)));
    const pending = running.pending;
    const decision = decisionOf(ctx.userMessage);
    if (!pending || decision === undefined) {
      // nothing to answer, or no answer in it: the task stays where it was
      const state = pending ? TaskState.TASK_STATE_INPUT_REQUIRED : TaskState.TASK_STATE_WORKING;
      const why = pending
        ? `answer "yes" or "no" (or a data part {"decision": "allow"|"deny"}): ${questionOf(pending.request)}`
        : 'keel is working; this message was not delivered';
      this.status(bus, ctx.taskId, running.contextId, state, why);
      if (pending) return;
      await running.stopped;
      return;
    }
    running.pending = undefined;
    const again = this.track(ctx.taskId, running.contextId, bus, running);
    this.status(
      bus,
      ctx.taskId,
      running.contextId,
      TaskState.TASK_STATE_WORKING,
      decision ? 'allowed' : 'denied',
    );
    pending.answer(decision ? { allow: true } : { allow: false, message: 'the A2A caller said no' });
    await again.stopped;
  }

  /** The session asks: the task goes input-required until a follow-up message answers. */
  private ask(taskId: string, request: ApprovalRequest): Promise<ApprovalAnswer> {
    const running = this.tasks.get(taskId);
    if (!running) return Promise.resolve({ allow: false, message: 'the task is gone' });
    return new Promise<ApprovalAnswer>((resolve) => {
      running.pending = { request, answer: resolve };
      this.status(
        running.bus,
        taskId,
        running.contextId,
        TaskState.TASK_STATE_INPUT_REQUIRED,
        questionOf(request),
      );
      running.stop();
    });
  }

  private finish(taskId: string, skill: SkillId, outcome: SessionOutcome, diffs: string[]): void {
    const running = this.tasks.get(taskId);
    if (!running) return;
    const { bus, contextId } = running;
    if (outcome.code === 'COMPLETED') {
      const parts = [{ text: outcome.summary || '(no answer)', mediaType: 'text/plain' }];
      if (skill === 'fix' && diffs.length) parts.push({ text: diffs.join('\n'), mediaType: 'text/x-diff' });
      bus.publish(
        AgentEvent.artifactUpdate({
          taskId,
          contextId,
          artifact: {
            artifactId: randomUUID(),
            name: skill === 'fix' ? 'answer and diff' : 'answer',
            description: '',
            parts: parts.map((p) => partOf(p.text, p.mediaType)),
            metadata: { session_id: outcome.sessionId, files_changed: outcome.filesChanged },
            extensions: [],
          },
          append: false,
          lastChunk: true,
          metadata: undefined,
        }),
      );
      this.status(bus, taskId, contextId, TaskState.TASK_STATE_COMPLETED, outcome.summary);
    } else if (outcome.code === 'CANCELLED') {
      this.status(bus, taskId, contextId, TaskState.TASK_STATE_CANCELED, `CANCELLED: ${outcome.reason}`);
    } else {
      this.status(bus, taskId, contextId, TaskState.TASK_STATE_FAILED, `${outcome.code}: ${outcome.reason}`);
    }
    this.settle(taskId);
  }

  private track(taskId: string, contextId: string, bus: ExecutionEventBus, existing?: Running): Running {
    let stop = () => {};
    const stopped = new Promise<void>((resolve) => {
      stop = resolve;
    });
    const running: Running = existing ?? {
      contextId,
      bus,
      controller: new AbortController(),
      stopped,
      stop,
    };
    running.stopped = stopped;
    running.stop = stop;
    this.tasks.set(taskId, running);
    return running;
  }

  private settle(taskId: string): void {
    const running = this.tasks.get(taskId);
    this.tasks.delete(taskId);
    running?.stop();
  }

  private status(
    bus: ExecutionEventBus,
    taskId: string,
    contextId: string,
    state: TaskState,
    text: string,
  ): void {
    bus.publish(
      AgentEvent.statusUpdate({
        taskId,
        contextId,
        status: {
          state,
          message: {
            messageId: randomUUID(),
            contextId,
            taskId,
            role: 2, // ROLE_AGENT
            parts: [partOf(text, 'text/plain')],
            metadata: undefined,
            extensions: [],
            referenceTaskIds: [],
          },
          timestamp: new Date().toISOString(),
        },
        metadata: undefined,
      }),
    );
  }
}

const MODE: Record<SkillId, Mode> = { ask: 'ask', review: 'ask', fix: 'edit' };

function promptFor(skill: SkillId, text: string): string {
  if (skill !== 'review') return text;
  return `Review, read-only: look at the project's uncommitted changes (and what the request names), and report problems with file:line, most important first. Request: ${text}`;
}

function taskOf(ctx: RequestContext): Task {
  return (
    ctx.task ??
    Task.fromJSON({ id: ctx.taskId, contextId: ctx.contextId, status: { state: 'TASK_STATE_SUBMITTED' } })
  );
}

/** The skill a message names in its metadata (`skill`) or a data part ({skill}); ask by default. */
function skillOf(message: Message): SkillId {
  const named = [message.metadata?.skill, ...message.parts.map((p) => dataOf(p)?.skill)].find(
    (s) => typeof s === 'string',
  );
  return named === 'fix' || named === 'review' ? named : 'ask';
}

/** true for yes/allow, false for no/deny, undefined when the message answers nothing. */
function decisionOf(message: Message): boolean | undefined {
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
    if (/^(yes|y|allow|approve|ok)\b/.test(word)) return true;
    if (/^(no|n|deny|reject)\b/.test(word)) return false;
  }
  return undefined;
}

function dataOf(part: Part): Record<string, unknown> | undefined {
  const value = part.content?.$case === 'data' ? part.content.value : undefined;
  return value && typeof value === 'object' ? (value as Record<string, unknown>) : undefined;
}

function textOf(parts: Part[]): string {
  return parts
    .map((p) => (p.content?.$case === 'text' ? String(p.content.value) : ''))
    .join('\n')
    .trim();
}

function questionOf(request: ApprovalRequest): string {
  const what = request.path ? ` ${request.path}` : request.command ? `: ${request.command}` : '';
  return `approve ${request.tool}${what}? (${request.reason})${request.diff ? `\n${request.diff}` : ''}`;
}

function partOf(text: string, mediaType: string): Part {
  return { content: { $case: 'text', value: text }, mediaType, filename: '', metadata: undefined };
}
