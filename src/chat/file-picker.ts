/**
 * The input's completions: `/` commands and paths as pi-tui completes them, and `@`: a fuzzy picker of
 * the workspace's files (git's tracked and untracked ones, .gitignore respected; a folder walk outside
 * git), narrowed as the person types; Enter or Tab puts `@path` in the message. File names come from
 * the repository, so a name a terminal would act on (control, bidi or invisible characters) is left
 * out of every list, `@` or Tab's path completion, rather than written to the screen or the message.
 */
import { execFile } from 'node:child_process';
import { type Dirent, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import {
  type AutocompleteItem,
  type AutocompleteProvider,
  type AutocompleteSuggestions,
  CombinedAutocompleteProvider,
  fuzzyFilter,
} from '@mariozechner/pi-tui';
import { inertLine } from '../term/inert.js';

/** Files listed at most; a larger workspace is cut (the typed text still narrows what was listed). */
const MAX_FILES = 50_000;
/** Matches offered at once. */
const SHOWN = 50;
/** How long a listing is reused while the person types (files change between messages, not keys). */
const FRESH_MS = 5_000;
/** Folders a walk outside git skips: they are dependencies and build output, never what a person means. */
const SKIP = new Set(['.git', 'node_modules', '.venv', 'venv', '__pycache__', 'target', 'dist', 'build']);

// `@` at the start or after a space, then a path so far, bare or opened with a quote
const MENTION_AT_CURSOR = /(?:^|[ \t])(@(?:"[^"]*|[^\s"]*))$/;

export class ChatCompletions implements AutocompleteProvider {
  private readonly base: CombinedAutocompleteProvider;
  private listing: { at: number; files: Promise<string[]> } | undefined;

  constructor(
    commands: Array<{ name: string; description?: string }>,
    private readonly root: string,
  ) {
    this.base = new CombinedAutocompleteProvider(commands, root, null);
  }

  async getSuggestions(
    lines: string[],
    cursorLine: number,
    cursorCol: number,
    options: { signal: AbortSignal; force?: boolean },
  ): Promise<AutocompleteSuggestions | null> {
    const before = (lines[cursorLine] ?? '').slice(0, cursorCol);
    const prefix = MENTION_AT_CURSOR.exec(before)?.[1];
    if (prefix === undefined) {
      // pi-tui lists a folder's entries as they are named: one a terminal would act on is left out here too
      const found = await this.base.getSuggestions(lines, cursorLine, cursorCol, options);
      const items = found?.items.filter((i) => plain(i.value) && plain(i.label)) ?? [];
      return found && items.length ? { ...found, items } : null;
    }
    const query = prefix.slice(prefix.startsWith('@"') ? 2 : 1);
    const files = await this.files();
    if (options.signal.aborted) return null;
    const matched = fuzzyFilter(files, query, (f) => f).slice(0, SHOWN);
    if (!matched.length) return null;
    return { prefix, items: matched.map((f) => item(f)) };
  }

  applyCompletion(
    lines: string[],
    cursorLine: number,
    cursorCol: number,
    chosen: AutocompleteItem,
    prefix: string,
  ): { lines: string[]; cursorLine: number; cursorCol: number } {
    // pi-tui's own: an `@` completion is followed by a space, a command by its argument
    return this.base.applyCompletion(lines, cursorLine, cursorCol, chosen, prefix);
  }

  shouldTriggerFileCompletion(lines: string[], cursorLine: number, cursorCol: number): boolean {
    return this.base.shouldTriggerFileCompletion(lines, cursorLine, cursorCol);
  }

  /** The workspace's files, relative, listed once per few seconds of typing. */
  private files(): Promise<string[]> {
    const now = Date.now();
    if (!this.listing || now - this.listing.at > FRESH_MS)
      this.listing = { at: now, files: listFiles(this.root).then((all) => all.filter(safeName)) };
    return this.listing.files;
  }
}

/** A file as the picker offers it: its path shown inert, and `@path` to insert (quoted when it holds a space). */
function item(file: string): AutocompleteItem {
  return { value: /\s/.test(file) ? `@"${file}"` : `@${file}`, label: inertLine(file) };
}

/** Whether text holds nothing a terminal would act on or hide (inertLine leaves it as it is). */
function plain(text: string): boolean {
  return inertLine(text) === text;
}

/** Whether a file can be offered after `@`: plain, and no quote to break `@"..."`. */
function safeName(file: string): boolean {
  return plain(file) && !file.includes('"');
}

/** git's files (tracked, and untracked but not ignored); outside a repository, a walk of the folder. */
function listFiles(root: string): Promise<string[]> {
  return new Promise((resolve) => {
    execFile(
      'git',
      ['-C', root, 'ls-files', '-z', '--cached', '--others', '--exclude-standard'],
      { maxBuffer: 64 * 1024 * 1024, encoding: 'buffer' },
      (err, stdout) => {
        if (err) return resolve(walk(root));
        const names = stdout.toString('utf8').split('\0').filter(Boolean);
        resolve([...new Set(names)].slice(0, MAX_FILES));
      },
    );
  });
}

function walk(root: string): string[] {
  const out: string[] = [];
  const visit = (dir: string, depth: number) => {
    if (depth > 12 || out.length >= MAX_FILES) return;
    let entries: Dirent[];
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      if (out.length >= MAX_FILES) return;
      const path = join(dir, entry.name);
      // links are not followed: a link out of the workspace is refused when attached anyway
      if (entry.isDirectory()) {
        if (!SKIP.has(entry.name)) visit(path, depth + 1);
      } else if (entry.isFile()) out.push(relative(root, path));
    }
  };
  visit(root, 0);
  return out;
}
