/** The system prompt. Short on purpose: small local models have small windows. */
import type { Mode } from '../config/schema.js';

const MODE_RULES: Record<Mode, string> = {
  ask: 'Mode: ask (read-only). Answer the question; you cannot change files or run commands.',
  plan: 'Mode: plan (read-only). Investigate, then answer with a short numbered plan of the changes to make.',
  edit: 'Mode: edit. You may change files inside the workspace. Make the smallest change that does the job.',
  auto: 'Mode: auto (unattended). Do the whole task without asking questions; budgets are enforced.',
};

export interface PromptInput {
  mode: Mode;
  root: string;
  instructions: string;
  /** Memory from earlier sessions, already fitted to its budget (src/memory/inject.ts). */
  memory?: string;
  /** The folder the user works in, relative to the workspace, when it is a subfolder of it. */
  here?: string;
  /** The skills catalog (src/skills/catalog.ts), when the session has skills. */
  skills?: string;
}

/** Build the system prompt for a session. */
export function systemPrompt(input: PromptInput): string {
  const lines = [
    'You are keel, a coding agent working in a local repository.',
    `Workspace: ${input.root}`,
    ...(input.here
      ? [`The user is in ${input.here}/: what they say about "here" or "this folder" means it.`]
      : []),
    MODE_RULES[input.mode],
    'Use the tools to look before you answer; do not guess file contents. Paths are relative to the workspace.',
    'A denied or failed call returns an error: adjust. When done, answer briefly, without tool calls.',
  ];
  if (input.instructions) lines.push('', 'Project instructions:', input.instructions);
  if (input.skills) lines.push('', input.skills);
  if (input.memory) lines.push('', input.memory);
  return lines.join('\n');
}

/**
 * A task too small to earn the repo map or memory in its prompt ("hi", "thanks"): at most two words, none
 * of them a name of something (a path, `snake_case`, `camelCase`, a number). The model can still look.
 */
export function trivialTask(task: string): boolean {
  const words = task.trim().split(/\s+/).filter(Boolean);
  return words.length <= 2 && !words.some((w) => /[./_\d]|[a-z][A-Z]/.test(w));
}
