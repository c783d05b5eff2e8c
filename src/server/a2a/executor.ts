/**
 * The A2A executor: a message starts a keel session (skill ask -> ask mode, review -> ask mode with
 * a review prompt, edit -> edit mode in the working tree) or a fix run (skill fix -> `keel fix` in a
 * snapshot, verified by the project's own tests). Its life becomes the task's states: working while
 * it runs, input-required while approvals wait, then
 * completed (the answer, for edit the diff, for fix the verified diff and PR text), failed (the
 * terminal code in the status message) or canceled.
 *
 * Questions queue on the task (a subagent and its parent may ask at once), each under keel's own
 * question id; the input-required status lists every one (in words, and as a data part
 * {questions: [{id, tool, agent, question}]}). A follow-up answers one question: a data part
 * {decision, question} or text "yes q-…"/"no q-…" names it; a bare "yes"/"no" is taken only when
 * exactly one question waits, and answers nothing when more do (the status says which wait) or when
 * a question was answered elsewhere since the caller's last message (the yes may have been meant for
 * it). An answer from elsewhere, or the approval timeout, takes its question off the queue; with none
 * left the task is back to working.
 *
 * Between an input-required and the caller's next message no request of the SDK is reading the
 * task's events, so the executor writes them to the task store itself (`detached`).
 */
import { randomUUID } from 'node:crypto';
import { type Part, TaskState } from '@a2a-js/sdk';
import {
  AgentEvent,
  type AgentExecutionEvent,
  type AgentExecutor,
  type ExecutionEventBus,
  type RequestContext,
  ResultManager,
  type ServerCallContext,
  type TaskStore,
} from '@a2a-js/sdk/server';
import type { ApprovalAnswer, ApprovalRequest } from '../../agent/approvals.js';
import type { SessionEvent } from '../../agent/events.js';
import type { SessionOutcome, StartOptions } from '../../agent/session.js';
import type { TerminalCode } from '../../agent/terminal.js';
import { count } from '../../agent/terminal.js';
import type { Mode } from '../../config/schema.js';
import type { SkillId } from './card.js';
import {
  answerOf,
  dataPartOf,
  partOf,
  publishStatus,
  questionOf,
  skillOf,
  statusEvent,
  taskOf,
  textOf,
} from './messages.js';

/** Starts a session for a task: the server's own way (its config, project and tools). */
export type StartSessionFn = (
  opts: Pick<StartOptions, 'mode' | 'prompt' | 'signal' | 'approve' | 'onEvent'> & {
    /** The session's id, once its row is stored. */
    onStarted?(sessionId: string): void;
    /** A question (by its id) answered other than through this task (the web page, the timeout). */
    onSettled?(questionId: string, answer: ApprovalAnswer): void;
  },
) => Promise<SessionOutcome>;

/** A fix run's verdict as the task reports it. */
export interface FixReport {
  runId: string;
  code: TerminalCode;
  verified: boolean;
  reason: string;
  summary: string;
  attempts: number;
  branch: string | null;
  pr: string;
  diff: string;
}

/** Starts a verified fix run (`keel fix`) for a task; its id is known at once. */
export type StartFixFn = (opts: { task: string; signal: AbortSignal }) => {
  runId: string;
  done: Promise<FixReport>;
};

interface Running {
  contextId: string;
  bus: ExecutionEventBus;
  /** The call this task's events are stored under (its first request's). */
  call: ServerCallContext;
  /** No request of the SDK is reading the bus (after input-required): store each event here. */
  detached: boolean;
  saving: Promise<void>;
  controller: AbortController;
  /** The approvals waiting for the caller's answers, oldest first. */
  pending: Array<{ request: ApprovalRequest; answer(a: ApprovalAnswer): void }>;
  /**
   * A question was answered elsewhere since the caller's last message: the caller's bare "yes" may
   * have been meant for it, so it answers nothing until the caller has seen what waits now.
   */
  movedOn: boolean;
  /** Resolves when the task reaches a state the caller must see (an end, or input-required). */
  stopped: Promise<void>;
  stop(): void;
}

export class KeelExecutor implements AgentExecutor {
  private readonly tasks = new Map<string, Running>();

  constructor(
    private readonly start: StartSessionFn,
    private readonly fix: StartFixFn,
    private readonly store: TaskStore,
  ) {}

  async execute(ctx: RequestContext, bus: ExecutionEventBus): Promise<void> {
    const running = this.tasks.get(ctx.taskId);
    if (running) return this.answer(ctx, bus, running);
    const { taskId, contextId } = ctx;
    const message = ctx.userMessage;
    bus.publish(AgentEvent.task({ ...taskOf(ctx), history: [message] }));
    if (ctx.task) {
      // a finished task takes no more messages: say so instead of starting over under its id
      publishStatus(
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
      publishStatus(
        bus,
        taskId,
        contextId,
        TaskState.TASK_STATE_FAILED,
        'CONFIG_ERROR: the message has no text',
      );
      return;
    }
    const run = this.track(taskId, contextId, bus, ctx.context);
    if (skill === 'fix') this.runFix(taskId, text);
    else this.runSession(taskId, skill, text);
    await run.stopped;
  }

  async cancelTask(taskId: string, bus: ExecutionEventBus): Promise<void> {
    const running = this.tasks.get(taskId);
    if (!running) return;
    // the SDK reads this bus until the task ends
    running.bus = bus;
    running.detached = false;
    for (const p of running.pending.splice(0)) p.answer({ allow: false, message: 'the task was canceled' });
    running.controller.abort(new Error('canceled over A2A'));
  }

  private runSession(taskId: string, skill: Exclude<SkillId, 'fix'>, text: string): void {
    this.status(taskId, TaskState.TASK_STATE_WORKING, `keel is working (${skill})`);
    const run = this.tasks.get(taskId) as Running;
    const diffs = new Map<string, string>();
    this.start({
      mode: MODE[skill],
      prompt: promptFor(skill, text),
      signal: run.controller.signal,
      onEvent: (event: SessionEvent) => {
        if (event.type === 'tool_result' && event.diff && !event.is_error)
          for (const path of event.files_changed) diffs.set(path, event.diff);
      },
      onStarted: (sessionId) =>
        this.status(
          taskId,
          TaskState.TASK_STATE_WORKING,
          `keel is working (${skill}) in session ${sessionId}`,
          {
            session_id: sessionId,
          },
        ),
      onSettled: (questionId, answer) => this.settledElsewhere(taskId, questionId, answer),
      approve: (request) => this.ask(taskId, request),
    })
      .then((outcome) => this.finishSession(taskId, skill, outcome, [...diffs.values()]))
      .catch((err: unknown) => this.crashed(taskId, err));
  }

  private runFix(taskId: string, text: string): void {
    const run = this.tasks.get(taskId) as Running;
    let started: ReturnType<StartFixFn>;
    try {
      started = this.fix({ task: text, signal: run.controller.signal });
    } catch (err) {
      this.crashed(taskId, err);
      return;
    }
    this.status(
      taskId,
      TaskState.TASK_STATE_WORKING,
      `keel is fixing in a snapshot (run ${started.runId}); the project's own tests decide`,
      { run_id: started.runId },
    );
    started.done
      .then((report) => this.finishFix(taskId, report))
      .catch((err: unknown) => this.crashed(taskId, err));
  }

  /**
   * A follow-up message to a task waiting for approval: "yes"/"no" or a data part {decision}, naming
   * the question it answers ({question}, or its id in the text) unless exactly one waits.
   */
  private async answer(ctx: RequestContext, bus: ExecutionEventBus, running: Running): Promise<void> {
    running.bus = bus;
    running.detached = false;
    bus.publish(AgentEvent.task(taskOf(ctx)));
    const said = answerOf(ctx.userMessage);
    const waiting = running.pending;
    const movedOn = running.movedOn;
    running.movedOn = false;
    if (!waiting.length) {
      // nothing to answer: the task stays where it was
      this.status(
        ctx.taskId,
        TaskState.TASK_STATE_WORKING,
        'keel is working; this message was not delivered',
      );
      await running.stopped;
      return;
    }
    const named = said.question;
    const target = named
      ? waiting.find((p) => p.request.id === named)
      : waiting.length === 1 && !movedOn
        ? waiting[0]
        : undefined;
    if (said.decision === undefined || !target) {
      // no answer in it, a question that does not wait, or a bare answer that cannot say which
      const why =
        said.decision === undefined
          ? 'this message answers no question'
          : named
            ? `no question ${named} waits`
            : movedOn
              ? 'a question was answered elsewhere since your last message, so a bare answer does not say which'
              : 'a bare answer does not say which';
      this.asking(ctx.taskId, `${why}; ${waitingText(waiting)}`);
      running.detached = true;
      return;
    }
    waiting.splice(waiting.indexOf(target), 1);
    const verdict = said.decision ? 'allowed' : 'denied';
    if (waiting.length) {
      target.answer(said.decision ? { allow: true } : { allow: false, message: 'the A2A caller said no' });
      this.asking(ctx.taskId, `${target.request.id} ${verdict}; ${waitingText(waiting)}`);
      running.detached = true;
      return;
    }
    const again = this.track(ctx.taskId, running.contextId, bus, running.call, running);
    this.status(ctx.taskId, TaskState.TASK_STATE_WORKING, `${target.request.id} ${verdict}`);
    target.answer(said.decision ? { allow: true } : { allow: false, message: 'the A2A caller said no' });
    await again.stopped;
  }

  /** The session asks: the question joins the queue and the task is input-required until answered. */
  private ask(taskId: string, request: ApprovalRequest): Promise<ApprovalAnswer> {
    const running = this.tasks.get(taskId);
    if (!running) return Promise.resolve({ allow: false, message: 'the task is gone' });
    return new Promise<ApprovalAnswer>((resolve) => {
      running.pending.push({ request, answer: resolve });
      this.asking(taskId, waitingText(running.pending));
      // the request that carried this task returns now; nothing reads its bus until the next one
      running.detached = true;
      running.stop();
    });
  }

  /** Input-required, with every waiting question listed (in words and as a data part). */
  private asking(taskId: string, text: string): void {
    const running = this.tasks.get(taskId);
    if (!running) return;
    const questions = running.pending.map(({ request: r }) => ({
      id: r.id,
      tool: r.tool,
      agent: r.agent ?? null,
      question: questionOf(r),
    }));
    this.publish(
      taskId,
      statusEvent(taskId, running.contextId, TaskState.TASK_STATE_INPUT_REQUIRED, text, undefined, [
        dataPartOf({ questions }),
      ]),
    );
  }

  /** A question answered without this task (the web page, the timeout): off the queue. */
  private settledElsewhere(taskId: string, questionId: string, answer: ApprovalAnswer): void {
    const running = this.tasks.get(taskId);
    const index = running?.pending.findIndex((p) => p.request.id === questionId) ?? -1;
    if (!running || index < 0) return;
    const [pending] = running.pending.splice(index, 1);
    if (!pending) return;
    running.movedOn = true;
    pending.answer(answer);
    const why = answer.allow ? 'allowed elsewhere' : `denied: ${answer.message ?? 'no reason given'}`;
    const what = `the question about ${pending.request.tool} was ${why} (question ${questionId})`;
    if (running.pending.length) this.asking(taskId, `${what}; ${waitingText(running.pending)}`);
    else this.status(taskId, TaskState.TASK_STATE_WORKING, what);
  }

  private finishSession(taskId: string, skill: SkillId, outcome: SessionOutcome, diffs: string[]): void {
    if (!this.tasks.has(taskId)) return;
    if (outcome.code === 'COMPLETED') {
      const parts = [partOf(outcome.summary || '(no answer)', 'text/plain')];
      if (skill === 'edit' && diffs.length) parts.push(partOf(diffs.join('\n'), 'text/x-diff'));
      this.artifact(taskId, skill === 'edit' ? 'answer and diff' : 'answer', parts, {
        session_id: outcome.sessionId,
        files_changed: outcome.filesChanged,
      });
      this.status(taskId, TaskState.TASK_STATE_COMPLETED, outcome.summary);
    } else if (outcome.code === 'CANCELLED') {
      this.status(taskId, TaskState.TASK_STATE_CANCELED, `CANCELLED: ${outcome.reason}`);
    } else {
      this.status(taskId, TaskState.TASK_STATE_FAILED, `${outcome.code}: ${outcome.reason}`);
    }
    this.settle(taskId);
  }

  /** A fix is completed only when verified; an unverified one fails, with its report all the same. */
  private finishFix(taskId: string, report: FixReport): void {
    if (!this.tasks.has(taskId)) return;
    if (report.code === 'CANCELLED') {
      this.status(taskId, TaskState.TASK_STATE_CANCELED, `CANCELLED: ${report.reason}`);
      this.settle(taskId);
      return;
    }
    const verdict = report.verified
      ? `verified after ${count(report.attempts, 'attempt')}${report.branch ? ` on branch ${report.branch}` : ''}: ${report.reason.replace(/^verified: /, '')}`
      : `not verified after ${count(report.attempts, 'attempt')}: ${report.code}: ${report.reason.replace(/^not verified: /, '')}`;
    const parts = [partOf(verdict, 'text/plain')];
    if (report.pr) parts.push(partOf(report.pr, 'text/markdown'));
    if (report.diff) parts.push(partOf(report.diff, 'text/x-diff'));
    this.artifact(taskId, report.verified ? 'verified fix' : 'fix report', parts, {
      run_id: report.runId,
      verdict: report.verified ? 'verified' : 'not verified',
      attempts: report.attempts,
      branch: report.branch,
    });
    this.status(
      taskId,
      report.verified ? TaskState.TASK_STATE_COMPLETED : TaskState.TASK_STATE_FAILED,
      report.verified ? verdict : `${report.code}: ${report.reason}`,
    );
    this.settle(taskId);
  }

  private crashed(taskId: string, err: unknown): void {
    const live = this.tasks.get(taskId);
    if (!live) return;
    const cancelled = live.controller.signal.aborted;
    this.status(
      taskId,
      cancelled ? TaskState.TASK_STATE_CANCELED : TaskState.TASK_STATE_FAILED,
      cancelled ? 'CANCELLED' : `ENVIRONMENT_ERROR: ${err instanceof Error ? err.message : String(err)}`,
    );
    this.settle(taskId);
  }

  private track(
    taskId: string,
    contextId: string,
    bus: ExecutionEventBus,
    call: ServerCallContext,
    existing?: Running,
  ): Running {
    let stop = () => {};
    const stopped = new Promise<void>((resolve) => {
      stop = resolve;
    });
    const running: Running = existing ?? {
      contextId,
      bus,
      call,
      detached: false,
      pending: [],
      movedOn: false,
      saving: Promise.resolve(),
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

  /** Publish an event of a running task, and store it when no request of the SDK is reading. */
  private publish(taskId: string, event: AgentExecutionEvent): void {
    const running = this.tasks.get(taskId);
    if (!running) return;
    running.bus.publish(event);
    if (!running.detached) return;
    const recorder = new ResultManager(this.store, running.call);
    running.saving = running.saving
      .then(() => recorder.processEvent(event))
      .catch((err: unknown) => {
        process.stderr.write(`keel serve: warning: A2A task ${taskId} not stored: ${String(err)}\n`);
      });
  }

  private status(taskId: string, state: TaskState, text: string, metadata?: Record<string, unknown>): void {
    const running = this.tasks.get(taskId);
    if (running) this.publish(taskId, statusEvent(taskId, running.contextId, state, text, metadata));
  }

  private artifact(taskId: string, name: string, parts: Part[], metadata: Record<string, unknown>): void {
    const running = this.tasks.get(taskId);
    if (!running) return;
    this.publish(
      taskId,
      AgentEvent.artifactUpdate({
        taskId,
        contextId: running.contextId,
        artifact: { artifactId: randomUUID(), name, description: '', parts, metadata, extensions: [] },
        append: false,
        lastChunk: true,
        metadata: undefined,
      }),
    );
  }
}

const MODE: Record<Exclude<SkillId, 'fix'>, Mode> = { ask: 'ask', review: 'ask', edit: 'edit' };

function promptFor(skill: SkillId, text: string): string {
  if (skill !== 'review') return text;
  return `Review, read-only: look at the project's uncommitted changes (and what the request names), and report problems with file:line, most important first. Request: ${text}`;
}

/** The waiting questions in words, each with its id, and how to answer. */
function waitingText(waiting: Running['pending']): string {
  const list = waiting.map((p) => `[${p.request.id}] ${questionOf(p.request)}`).join('\n');
  const how =
    waiting.length === 1
      ? `answer "yes" or "no" (or a data part {"decision": "allow"|"deny", "question": "${waiting[0]?.request.id}"})`
      : `${waiting.length} questions wait; answer one at a time, naming it: "yes <id>" / "no <id>" or a data part {"decision": "allow"|"deny", "question": "<id>"}`;
  return `${how}:\n${list}`;
}
