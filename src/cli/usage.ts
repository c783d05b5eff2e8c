/** Usage errors and help: `keel help VERB`, a mistyped verb, a usage error's one line or document. */
import type { Command } from 'commander';
import { closest } from '../config/closest.js';
import { EXIT } from '../term/exit-codes.js';
import { reportError } from './errors.js';

/** `keel help [VERB...]`: the help of the command the words name, or a usage error naming the word that matches none. */
export function showHelp(program: Command, path: string[]): number {
  let cmd = program;
  for (const word of path) {
    const next = cmd.commands.find((c) => c.name() === word || c.aliases().includes(word));
    if (!next) {
      const near = closest(
        word,
        cmd.commands.map((c) => c.name()),
      );
      const words = [...path.slice(0, path.indexOf(word)), word].join(' ');
      return usageError(
        false,
        `unknown command "${words}"${near ? ` (did you mean ${near}?)` : ''}; see keel help`,
      );
    }
    cmd = next;
  }
  cmd.outputHelp();
  return EXIT.ok;
}

/**
 * The verb a mistyped first word was meant to be: one word, one edit (or a swap) from a verb. A task
 * may well start with a word two edits from one ("test the parser" is not "trust"), so no further.
 */
export function verbTypo(program: Command, word: string | undefined): string | undefined {
  if (!word || /\s/.test(word)) return undefined;
  return closest(
    word,
    program.commands.map((c) => c.name()),
    1,
  );
}

/** A usage error: exit 2, as one --json document or a line on stderr. */
export function usageError(json: boolean | undefined, message: string): number {
  return reportError(json, 'CONFIG_ERROR', message);
}
