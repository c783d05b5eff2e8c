/**
 * The person's persistent command rules (config `allow_commands`, `deny_commands`): whether a shell
 * command line holds a command a deny rule names, or is exactly one an allow rule names.
 *
 * A deny rule is a tripwire, not the boundary (the sandbox is), so it reads the line generously: every
 * simple command in it counts, however it is joined or wrapped (`;`, `&&`, `|`, `&`, newlines, `$(…)`,
 * backquotes, parentheses, braces, and the inside of quotes: `sh -c 'git push'` holds `git push`), with
 * quotes and backslashes also read as removed (`git "pu"sh`). The rule's first word matches a word by its
 * base name (`/usr/bin/git`, after `sudo` or `env`), and its later words follow in order with anything
 * between them (`git -C . push`).
 *
 * An allow rule is strict: the line is the rule's words followed only by plain arguments, with no shell
 * syntax at all, so `npm test` allows `npm test -- --run` and never `npm test; curl …`.
 */
import { basename } from 'node:path';

const SEPARATORS = /\$\(|[;&|\n\r()`{}<>'"]/;
const SHELL_SYNTAX = /[;&|\n\r()`{}<>'"$\\*?~!#[\]]/;

function words(text: string): string[] {
  return text.split(/\s+/).filter(Boolean);
}

/** Whether one simple command's words hold the rule's words: the first by base name, the rest in order. */
function holds(command: string[], rule: string[]): boolean {
  const [head, ...rest] = rule;
  if (head === undefined) return false;
  for (let i = 0; i < command.length; i++) {
    const word = command[i] as string;
    if (word !== head && basename(word) !== head) continue;
    let at = i + 1;
    let found = 0;
    for (; at < command.length && found < rest.length; at++) if (command[at] === rest[found]) found++;
    if (found === rest.length) return true;
  }
  return false;
}

/** The deny rule a command line breaks, if any. */
export function deniedBy(line: string, deny: readonly string[]): string | undefined {
  const readings = [line, line.replace(/["'\\]/g, '')];
  const commands = readings.flatMap((text) => text.split(SEPARATORS).map(words));
  return deny.find((rule) => commands.some((command) => holds(command, words(rule))));
}

/** The allow rule a command line is, if any: the rule's words, then plain arguments only. */
export function allowedBy(line: string, allow: readonly string[]): string | undefined {
  if (SHELL_SYNTAX.test(line)) return undefined;
  const command = words(line);
  return allow.find((rule) => {
    const want = words(rule);
    return want.length > 0 && want.every((w, i) => command[i] === w);
  });
}

/** The command line of a call, when its arguments carry one (`shell`'s `command`). */
export function commandLine(args: unknown): string | undefined {
  const command = (args as { command?: unknown } | null)?.command;
  return typeof command === 'string' ? command : undefined;
}
