/** One line typed at the terminal, where Ctrl+C is an interruption the caller can tell from an answer. */
import { EXIT } from '../term/exit-codes.js';
import { red } from './render.js';

/** The person pressed Ctrl+C at a question. */
export class Interrupted extends Error {
  constructor() {
    super('interrupted');
    this.name = 'Interrupted';
  }
}

/**
 * Ask `question` on stderr and read one line from stdin. Ctrl+C rejects with `Interrupted` (readline
 * holds the terminal raw, so no SIGINT reaches the process); an end of input reads as an empty line.
 */
export async function askLine(question: string): Promise<string> {
  const { createInterface } = await import('node:readline');
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    return await new Promise<string>((resolve, reject) => {
      rl.on('SIGINT', () => reject(new Interrupted()));
      rl.on('close', () => resolve(''));
      rl.question(question, resolve);
    });
  } finally {
    rl.close();
  }
}

/** A `[y/N]` question: only y or yes is a yes. Ctrl+C ends the process: "interrupted", exit 130. */
export async function confirmOrExit(question: string): Promise<boolean> {
  try {
    return /^y(es)?$/i.test((await askLine(question)).trim());
  } catch (err) {
    if (!(err instanceof Interrupted)) throw err;
    // nothing was changed before the question, so there is nothing to finish
    process.stderr.write(`\n${red('keel:')} interrupted\n`);
    process.exit(EXIT.interrupted);
  }
}
