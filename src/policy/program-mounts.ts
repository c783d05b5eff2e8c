/**
 * What of the host a long-lived program (a stdio MCP server) needs to start in the bwrap sandbox when it is
 * installed outside the system folders, typically under the user's home, which the sandbox hides: the folder
 * its command is named from, and the package it resolves into (`~/.local/bin/srv` -> `../lib/node_modules/
 * srv/bin/cli.js` binds `~/.local/lib/node_modules`, where node finds the package and its dependencies). All
 * read-only. Never a home itself or a folder above one, and never anything that is or holds a path the
 * sandbox hides (`.ssh`, `.config`, keel's state, ...): such a program is not bound and fails to start, saying so.
 */
import { existsSync, realpathSync, statSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, resolve } from 'node:path';
import { findProgram } from './sandbox-limits.js';
import { isInside } from './scope.js';

/** Interpreters whose first operand is the program itself (`node ~/srv/index.js`). */
const INTERPRETERS = /^(node|nodejs|bun|deno|python[0-9.]*)$/;

export interface ProgramMountOptions {
  /** Where the program starts (relative commands and arguments resolve here). */
  cwd: string;
  pathEnv: string | undefined;
  /** The host's home folders, canonical. */
  homes: string[];
  /** Paths the sandbox hides besides the homes themselves (`HostView.hidden`). */
  hidden: string[];
  /** Folders the sandbox shows already (system folders, toolchains, the workspace): nothing in them is bound again. */
  shown: string[];
}

/** The folders to bind read-only so that `argv` finds its program and package; empty when none is needed. */
export function programMounts(argv: readonly string[], opts: ProgramMountOptions): string[] {
  const [command, ...args] = argv;
  if (command === undefined) return [];
  const files: string[] = [];
  const named = command.includes('/') ? resolve(opts.cwd, command) : findProgram(command, opts.pathEnv);
  if (named === undefined) return [];
  files.push(named);
  const real = realOrUndefined(named);
  const operand = args.find((a) => a !== '' && !a.startsWith('-'));
  if (real && INTERPRETERS.test(basename(real)) && operand !== undefined) {
    const script = resolve(opts.cwd, operand);
    if (isFile(script)) files.push(script);
  }
  const dirs: string[] = [];
  for (const file of files) {
    // the name as written (a link in a bin folder) and where it leads
    dirs.push(dirname(file));
    const target = realOrUndefined(file);
    if (target !== undefined && !opts.shown.some((s) => isInside(target, s)))
      dirs.push(packageFolder(target, opts.homes));
  }
  const covered = opts.hidden.filter((h) => !opts.homes.includes(h) && h !== '/home' && h !== '/root');
  // a hidden path inside a folder already shown (a toolchain's credentials) is covered wherever it shows;
  // any other must not lie in a bound folder at all: a bind shows what appears there later too
  const apart = covered.filter((c) => !opts.shown.some((s) => isInside(c, s)));
  const bindable = (dir: string): boolean =>
    isAbsolute(dir) &&
    !opts.homes.some((h) => isInside(h, dir)) &&
    !['/', '/home', '/root'].includes(dir) &&
    !opts.shown.some((s) => isInside(dir, s)) &&
    !covered.some((c) => isInside(dir, c)) &&
    !apart.some((c) => isInside(c, dir));
  const out: string[] = [];
  for (const dir of dirs.map((d) => realOrUndefined(d) ?? d)) {
    if (!bindable(dir) || out.some((o) => isInside(dir, o))) continue;
    for (let i = out.length - 1; i >= 0; i--) if (isInside(out[i] ?? '', dir)) out.splice(i, 1);
    out.push(dir);
  }
  return out;
}

/**
 * The package a file belongs to: the nearest folder above it with a package.json, widened to the
 * `node_modules` it sits in (dependencies are hoisted there); the file's own folder when there is none.
 */
function packageFolder(file: string, homes: string[]): string {
  const own = dirname(file);
  for (let dir = own; dir !== dirname(dir) && !homes.includes(dir); dir = dirname(dir)) {
    if (!existsSync(join(dir, 'package.json'))) continue;
    let parent = dirname(dir);
    if (basename(parent).startsWith('@')) parent = dirname(parent);
    return basename(parent) === 'node_modules' ? parent : dir;
  }
  return own;
}

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

function realOrUndefined(path: string): string | undefined {
  try {
    return realpathSync.native(path);
  } catch {
    return undefined;
  }
}
