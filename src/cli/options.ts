/** The flags verbs share (which model, budgets, a session's own) and the parsers of their values. */
import { type Command, InvalidArgumentError } from 'commander';

/** Which model to talk to: the same flags on every verb that calls one. */
export function addModelOptions(cmd: Command): Command {
  return cmd
    .option('--provider <name>', 'openai | ollama | scripted')
    .option('--model <name>', 'model name as the server knows it')
    .option(
      '--base-url <url>',
      'server URL (http://host:8000/v1 for OpenAI-compatible, http://host:11434 for ollama)',
    )
    .option('--script <file>', 'script file for the scripted provider')
    .option('--context-window <n>', 'context window in tokens', parseIntArg);
}

/** Budgets for a session; `per` says what one budget covers (a session, an attempt, a round). */
export function addBudgetOptions(cmd: Command, per: string): Command {
  return cmd
    .option('--max-rounds <n>', `budget ${per}: model rounds`, parseIntArg)
    .option('--max-tokens <n>', `budget ${per}: tokens in and out`, parseIntArg)
    .option('--max-cost <usd>', `budget ${per}: cost in USD (needs pricing)`, parseFloatArg)
    .option('--max-wall <s>', `budget ${per}: wall-clock seconds`, parseFloatArg)
    .option('--max-diff-lines <n>', `budget ${per}: lines changed`, parseIntArg);
}

/** Flags shared by every verb that starts a session. */
export function addSessionOptions(cmd: Command, opts: { reopen?: boolean } = {}): Command {
  cmd
    .argument('[prompt...]', 'the task or question (or use -m, or pipe it on stdin)')
    .option('-m, --message <text>', 'the task or question')
    .option('-C, --cwd <dir>', 'workspace folder (default: the current folder)')
    .option('--profile <name>', 'use [profiles.NAME] from the config over the base settings')
    .option('--json', 'print one JSON document on stdout and nothing else');
  if (opts.reopen !== false)
    cmd
      .option(
        '-c, --continue',
        "go on with this project's newest session (a new message, or where it was killed)",
      )
      .option('--resume <id>', 'go on with this session (id or unique prefix)');
  return addBudgetOptions(addModelOptions(cmd), 'per session')
    .option('--allow-shell', 'let the model run shell commands even where no sandbox is available')
    .option('--commit', "commit the session's own files when it completes")
    .option('--skip-approvals', 'without a terminal, go on although `approvals` asks a person first');
}

export function parseIntArg(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0)
    throw new InvalidArgumentError(`expected a positive integer, got "${value}"`);
  return n;
}

export function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

/** Tags as people type them: `--tag a --tag b`, `--tags a,b` or `--tag "a, b"`. */
export function collectTags(value: string, previous: string[]): string[] {
  return [
    ...previous,
    ...value
      .split(',')
      .map((t) => t.trim())
      .filter(Boolean),
  ];
}

export function parseFloatArg(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0)
    throw new InvalidArgumentError(`expected a positive number, got "${value}"`);
  return n;
}
