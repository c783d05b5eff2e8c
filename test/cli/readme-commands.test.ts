/**
 * The README's `keel ...` command lines against the CLI's own command table (buildProgram, the tree the
 * binary parses with): every verb and sub-verb a line names exists, and every flag it shows, in the
 * command or in the comment after it, is one that command takes. No binary is spawned: the table is
 * the same one `keel completion` walks.
 */
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { buildProgram } from '../../src/cli/main.js';

const README = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');

// "a first word that is nearly a verb (`keel edt`) is taken for a typo"
const TYPOS = ['keel edt'];

/** One `keel ...` use found in the README, with the line it is on. */
interface Use {
  line: number;
  /** In a command's place; else in a comment or an argument, where only `keel VERB ...` is one. */
  command: boolean;
  text: string;
}

/** The `keel ...` uses in the README's sh code blocks (a line may hold several: `&&`, a comment's "or keel ...") and its prose's code spans. */
function readmeUses(markdown: string): Use[] {
  const uses: Use[] = [];
  const prose: string[] = [];
  let lang: string | undefined;
  markdown.split('\n').forEach((raw, i) => {
    const fence = /^```(\S*)/.exec(raw);
    prose.push(fence || lang !== undefined ? '' : raw);
    if (fence) {
      lang = lang === undefined ? (fence[1] ?? '') : undefined;
      return;
    }
    if (lang !== 'sh') return;
    // a use starts at a `keel` word (after a space, `(` or `"`) and runs to the next one; where a shell
    // runs a command (the line's start after VAR=value words, after &&, |, ;, <( ) it is always a use
    const starts = [...raw.matchAll(/(?<=^|[\s("])keel (?=\S)/g)].map((m) => m.index ?? 0);
    starts.forEach((at, k) => {
      const before = raw.slice(0, at);
      const command = /^(\s*[A-Z_]+=\S*\s+)*\s*$|(&&|\||;|<\()\s*$/.test(before) && !before.includes('#');
      uses.push({ line: i + 1, command, text: raw.slice(at, starts[k + 1] ?? raw.length) });
    });
  });
  // prose: each `keel ...` code span is a command as typed, also one broken over lines (but the typo
  // the README shows on purpose)
  const text = prose.join('\n');
  for (const m of text.matchAll(/`(keel\s[^`]+)`/g)) {
    const span = (m[1] ?? '').replace(/\s+/g, ' ');
    const line = text.slice(0, m.index).split('\n').length;
    if (!TYPOS.includes(span)) uses.push({ line, command: true, text: span });
  }
  return uses.sort((a, b) => a.line - b.line);
}

/** What is wrong with one use against the command table, or nothing. */
function checkUse(program: Command, use: Use): string[] {
  // the command part loses its quoted arguments; the comment part keeps its words (its flags count)
  const hash = use.text.search(/\s#/);
  const command = (hash < 0 ? use.text : use.text.slice(0, hash))
    .replace(/"[^"]*"|'[^']*'/g, ' ARG ')
    .replace(/[()[\]|,;]/g, ' ');
  const comment = hash < 0 ? '' : use.text.slice(hash).replace(/"[^"]*"|`[^`]*`/g, ' ');
  const words = command.trim().split(/\s+/).slice(1);
  // `createdb -O keel keel`: a word keel, not a command
  if (!use.command && !program.commands.some((c) => c.name() === words[0])) return [];
  let cmd = program;
  const path = ['keel'];
  let rest = words;
  for (const [i, word] of words.entries()) {
    if (word.startsWith('-')) continue;
    const sub = cmd.commands.find((c) => c.name() === word || c.aliases().includes(word));
    if (sub) {
      cmd = sub;
      path.push(word);
      rest = words.slice(i + 1);
      continue;
    }
    // a plain word where a verb goes is a verb keel does not have (a prompt is quoted, an id is a placeholder)
    const wantsVerb = cmd === program || cmd.registeredArguments.length === 0;
    if (wantsVerb && cmd.commands.length > 0 && /^[a-z][a-z-]*$/.test(word))
      return [`line ${use.line}: ${path.join(' ')} has no verb "${word}": ${use.text.trim()}`];
    break;
  }
  const flags = new Set(cmd.options.flatMap((o) => [o.long, o.short]).filter(Boolean));
  flags.add('--help').add('-h');
  const shown = [...rest.join(' ').split(/\s+/), ...comment.split(/[\s(),;:]+/)]
    .map((w) => w.replace(/=.*$/, ''))
    .filter((w) => /^(--[A-Za-z][A-Za-z0-9-]*|-[A-Za-z])$/.test(w));
  return shown
    .filter((f) => !flags.has(f))
    .map((f) => `line ${use.line}: ${path.join(' ')} has no ${f}: ${use.text.trim()}`);
}

const program = buildProgram('0.0.0-test', () => {});

describe("the README's keel commands", () => {
  it('every verb, sub-verb and flag in its sh blocks and code spans is one the CLI defines', () => {
    const uses = readmeUses(README);
    // the README shows every verb: a parser that found few would prove little
    expect(uses.length).toBeGreaterThan(250);
    expect(uses.flatMap((u) => checkUse(program, u))).toEqual([]);
  });

  it("keel doctor's help names every check the README's quick start lists for it", () => {
    const line = README.split('\n').find((l) => l.startsWith('keel doctor '));
    const checks = (/#\s*([^(]+)/.exec(line ?? '')?.[1] ?? '').split(',').map((c) => c.trim());
    expect(checks.length).toBeGreaterThan(4);
    const doctor = program.commands.find((c) => c.name() === 'doctor');
    expect(checks.filter((c) => !doctor?.description().includes(c))).toEqual([]);
  });

  it('every verb without --json is one the README names as such', () => {
    const said = README.split('\n\n').find((p) => p.includes('takes `--json`')) ?? '';
    const unsaid: string[] = [];
    const walk = (cmd: Command, path: string) => {
      for (const sub of cmd.commands) {
        const name = `${path} ${sub.name()}`;
        const leaf = sub.commands.length === 0 && !(sub as unknown as { _hidden?: boolean })._hidden;
        if (
          leaf &&
          !sub.options.some((o) => o.long === '--json') &&
          !said.replace(/\s+/g, ' ').includes(`\`${name}\``)
        )
          unsaid.push(name);
        walk(sub, name);
      }
    };
    walk(program, 'keel');
    expect(unsaid).toEqual([]);
  });

  it('names what is wrong in a README that shows a flag or a verb the CLI lacks', () => {
    const bad = [
      '```sh',
      'keel chat --continue --no-such-flag      # fine until the flag',
      'keel sessions lst                         # a sub-verb typo',
      'keel memory list                          # newest first; --kind decision, --newest 20',
      'source <(keel completion bash) && keel demo -z',
      '```',
      'Prose: `keel runs prune --older-than 14` and `keel runs prun`, with `keel edt` on purpose, and `keel',
      'undo --yes --al` over a line break.',
      '```toml',
      'keel = "--not-a-command"',
      '```',
    ].join('\n');
    expect(readmeUses(bad).flatMap((u) => checkUse(program, u))).toEqual([
      'line 2: keel chat has no --no-such-flag: keel chat --continue --no-such-flag      # fine until the flag',
      'line 3: keel sessions has no verb "lst": keel sessions lst                         # a sub-verb typo',
      'line 4: keel memory list has no --newest: keel memory list                          # newest first; --kind decision, --newest 20',
      'line 5: keel demo has no -z: keel demo -z',
      'line 7: keel runs has no verb "prun": keel runs prun',
      'line 7: keel undo has no --al: keel undo --yes --al',
    ]);
  });
});
