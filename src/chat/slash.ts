/**
 * What a line typed at the chat prompt is: a slash command, or a message. `/word` names a command;
 * `/src/app.ts` (a slash, then a path-like word) is a message about that file; a leading space sends
 * slash text as it is. An unknown command is an error with the nearest name, never sent to the model.
 * `/plugin:command args` is an installed plugin's command: its prompt, filled with the args, is the message.
 */
import { looksLikePath } from './mentions.js';

export const COMMANDS = [
  { name: 'help', args: '', summary: 'the commands and keys' },
  { name: 'mode', args: '[ask|plan|edit|auto]', summary: 'show or set the mode for the next turns' },
  { name: 'model', args: '[NAME]', summary: 'show or set the model for the next turns' },
  {
    name: 'resume',
    args: '[ID|--all]',
    summary: "go on with another session (no id: this project's recent ones; --all: every project's)",
  },
  { name: 'clear', args: '', summary: 'a new session with the same settings (this one stays resumable)' },
  {
    name: 'status',
    args: '',
    summary: 'model, server, mode, scope, sandbox, context window, spend, session',
  },
  {
    name: 'rewind',
    args: 'N',
    summary: 'back to the start of turn N: conversation and files (asks first when files change)',
  },
  {
    name: 'permissions',
    args: '[allow|deny [--project] CMD]',
    summary: 'the rules in force; always allow or never run a command (saved to your config)',
  },
  { name: 'export', args: '[md|html]', summary: 'write this session as a readable transcript to a file' },
  {
    name: 'init',
    args: '',
    summary:
      'keel reads the repository and drafts AGENTS.md (the write is asked first; nothing else may change)',
  },
  { name: 'fork', args: '[SEQ]', summary: 'branch this session (at an event) and go on in the branch' },
  { name: 'compact', args: '', summary: "fold this session's older turns into a summary" },
  { name: 'undo', args: '', summary: 'put back the files this session changed (asks first)' },
  { name: 'diff', args: '', summary: 'the workspace diff against HEAD' },
  { name: 'cost', args: '', summary: "this session's tokens and cost" },
  { name: 'agents', args: '', summary: 'the subagents of this session and their states' },
  { name: 'memory', args: '[QUERY]', summary: 'what keel remembers for this project (newest, or a search)' },
  { name: 'exit', args: '', summary: 'leave the chat (the session stays in the log)' },
] as const;

/** `/plugin:command`: both names as keel-plugin.json allows them. */
const PLUGIN_COMMAND = /^([a-z0-9][a-z0-9-]{0,63}):([a-z0-9][a-z0-9-]{0,63})$/;

export type CommandName = (typeof COMMANDS)[number]['name'];

export type Parsed =
  | { kind: 'message'; text: string }
  | { kind: 'command'; name: CommandName; arg: string }
  | { kind: 'unknown'; word: string; suggestion?: string }
  | { kind: 'plugin'; plugin: string; command: string; args: string[] }
  | { kind: 'empty' };

/** Classify a submitted line (as typed, before any trimming). */
export function parseInput(raw: string): Parsed {
  // a leading space is the escape hatch: the text goes to the model as typed, minus that space
  if (raw.startsWith(' ')) {
    const text = raw.slice(1);
    return text.trim() ? { kind: 'message', text } : { kind: 'empty' };
  }
  const text = raw.trim();
  if (!text) return { kind: 'empty' };
  if (!text.startsWith('/')) return { kind: 'message', text };
  const [head = '', ...rest] = text.slice(1).split(/\s+/);
  if (!head || looksLikePath(head)) return { kind: 'message', text };
  const named = PLUGIN_COMMAND.exec(head);
  if (named?.[1] && named[2])
    return { kind: 'plugin', plugin: named[1], command: named[2], args: rest.filter(Boolean) };
  const known = COMMANDS.find((c) => c.name === head);
  if (known) return { kind: 'command', name: known.name, arg: rest.join(' ') };
  const suggestion = nearest(
    head,
    COMMANDS.map((c) => c.name),
  );
  return { kind: 'unknown', word: head, ...(suggestion ? { suggestion } : {}) };
}

/** The closest name within a small edit distance (or the only one the word starts), for "did you mean". */
export function nearest(word: string, names: readonly string[]): string | undefined {
  const prefixed = names.filter((n) => n.startsWith(word.toLowerCase()));
  if (prefixed.length === 1) return prefixed[0];
  let best: { name: string; d: number } | undefined;
  for (const name of names) {
    const d = distance(word.toLowerCase(), name);
    if (!best || d < best.d) best = { name, d };
  }
  return best && best.d <= Math.max(1, Math.floor(best.name.length / 3)) ? best.name : undefined;
}

/** Edit distance where swapping two neighbours counts once (optimal string alignment). */
function distance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  const at = (i: number, j: number) => d[i]?.[j] ?? Number.POSITIVE_INFINITY;
  for (let i = 1; i <= a.length; i++) {
    const row = d[i] ?? [];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        best = Math.min(best, at(i - 2, j - 2) + 1);
      row[j] = best;
    }
  }
  return at(a.length, b.length);
}
