/**
 * The session verbs: bare `keel` (a task, a prompt on stdin, or a conversation at a terminal) and
 * `keel ask|plan|edit|run`, each a session in its mode. Their code is loaded only when one runs.
 */
import type { Command } from 'commander';
import { addSessionOptions } from './options.js';
import { usageError, verbTypo } from './usage.js';

const SESSION_VERBS = [
  { name: 'ask', mode: 'ask', summary: 'answer a question about the code (read-only)' },
  { name: 'plan', mode: 'plan', summary: 'investigate and write a plan (read-only)' },
  { name: 'edit', mode: 'edit', summary: 'change files inside the scope (shell gated)' },
  { name: 'run', mode: 'auto', summary: 'do a task unattended (budgets enforced, shell gated)' },
] as const;

/** Add bare `keel` and the session verbs to the program. */
export function addSessionVerbs(program: Command, setExit: (code: number) => void): void {
  // `keel TASK`, `keel -m TEXT` or a prompt on stdin (no verb): a session in the configured `permission` mode (default ask)
  addSessionOptions(program).action(async (words: string[], opts) => {
    // loaded only for a session: bare `keel` printing help stays cheap
    const runVerb: typeof import('./session-command.js').runVerb = async (...args) =>
      (await import('./session-command.js')).runVerb(...args);
    if (opts.continue || opts.resume) {
      setExit(await runVerb(undefined, words, opts));
      return;
    }
    if (!opts.message && words.length === 0) {
      // bare `keel` at a terminal is a conversation; with output redirected it prints what keel can do
      if (process.stdin.isTTY) {
        if (!process.stdout.isTTY || opts.json) {
          program.help({ error: false });
          return;
        }
        const { runChat } = await import('../chat/chat-command.js');
        setExit(await runChat(opts));
        return;
      }
      const { readStdin } = await import('./prompt-input.js');
      const piped = await readStdin();
      // a non-TTY stdin with nothing on it (cron, `< /dev/null`) is no task: show what keel can do
      if (!piped) {
        program.help({ error: false });
        return;
      }
      setExit(await runVerb(undefined, [], { ...opts, message: piped }));
      return;
    }
    // `keel edt`, `keel sesions list`: a first word that is nearly a verb is a typo, not a task
    const typo = verbTypo(program, words[0]);
    if (!opts.message && typo) {
      setExit(usageError(opts.json, `unknown command "${words[0]}" (did you mean ${typo}?)`));
      return;
    }
    setExit(await runVerb(undefined, words, opts));
  });

  for (const verb of SESSION_VERBS) {
    addSessionOptions(program.command(verb.name).description(verb.summary)).action(
      async (words: string[], opts) => {
        const { runVerb } = await import('./session-command.js');
        setExit(await runVerb(verb.mode, words, opts));
      },
    );
  }
}
