/**
 * How a run opens: a new session records its start (the system prompt as sent, the tools offered,
 * the instructions read) and its context; a reopened one records a new run and answers what the last
 * run left open.
 */
import { realpathSync } from 'node:fs';
import { isAbsolute, relative, sep } from 'node:path';
import { costUsd } from '../model/cost.js';
import type { SessionEvent } from './events.js';
import type { SessionState } from './history.js';
import { loadInstructions } from './instructions.js';
import type { SessionOptions } from './loop.js';
import { systemPrompt } from './prompt.js';

/** Record the opening of a run: a new session's start and context, or a reopened session's new run. */
export function startRun(
  opts: SessionOptions,
  record: (event: SessionEvent) => number,
  state: SessionState,
  initial: string[],
): void {
  const { config, policy } = opts;
  const { scope, mode } = policy;
  if (opts.resume) resumeRun(opts, record, state);
  else {
    const instructions = loadInstructions(scope.root);
    record({
      type: 'session_start',
      mode: mode,
      provider: opts.model.provider,
      model: opts.model.currentModel(),
      cwd: scope.root,
      scope: scope.writable.map((p) => scope.display(p)),
      instructions: instructions.files,
      ...(instructions.skipped.length ? { instructions_skipped: instructions.skipped } : {}),
      tools: initial,
      system_prompt: systemPrompt({
        mode: mode,
        root: scope.root,
        instructions: instructions.text,
        ...(opts.memory ? { memory: opts.memory } : {}),
        ...(opts.skills ? { skills: opts.skills } : {}),
        ...userFolder(scope.root),
      }),
      pid: process.pid,
      // null cost, not 0, when the user gave no price for this model: keel never invents a cost
      priced:
        costUsd(
          opts.model.currentModel(),
          { inputTokens: 0, outputTokens: 0, reported: true },
          config.pricing,
          0,
        ) !== null,
    });
    for (const event of opts.context ?? []) record(event);
  }
}

/**
 * Open a new run of a reopened session. Calls the last run left without an answer are answered
 * now, from the log, and never run again: one that started may have done part of its work, and
 * the model is told so; one that never started is reported as not run. A started call idempotent by
 * its own id (hub_send) is left for the loop to run again: its second run gives the first one's result.
 */
function resumeRun(opts: SessionOptions, record: (event: SessionEvent) => number, state: SessionState): void {
  const pending = [...state.open.entries()];
  record({
    type: 'session_resume',
    run: state.run.number + 1,
    mode: opts.policy.mode,
    provider: opts.model.provider,
    model: opts.model.currentModel(),
    pid: process.pid,
  });
  // a session kept with its workspace's trees (a fix's) settles them by their intents (effect-resume.ts)
  if (opts.worktree) return;
  for (const [callId, call] of pending) {
    // idempotent by its own id (hub_send): left open, the loop runs it again (effect-resume.ts)
    if (call.started && call.intent?.effect === 'other' && call.intent.idempotent) continue;
    record({
      type: 'tool_result',
      call_id: callId,
      tool: call.tool,
      output: call.started
        ? `Error: interrupted: the session stopped while this ${call.tool} call was running, and keel did not run it again. It may have done part of its work; check before repeating it.`
        : `Error: not run: the session stopped before this ${call.tool} call ran.`,
      is_error: true,
      files_changed: [],
      diff_lines: 0,
      duration_ms: 0,
      interrupted: true,
    });
  }
}

/** The user's folder (the process's), when it is a subfolder of the workspace: the model is told. */
function userFolder(root: string): { here?: string } {
  let cwd: string;
  try {
    cwd = realpathSync(process.cwd());
  } catch {
    return {};
  }
  const here = relative(root, cwd);
  if (!here || here.startsWith('..') || isAbsolute(here)) return {};
  return { here: here.split(sep).join('/') };
}
