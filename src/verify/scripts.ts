/**
 * Package scripts followed to the commands they run: `npm test` becomes pretest, test and posttest, a
 * nested `npm run X` or `pnpm X` becomes the script it names, and an `&&` chain becomes its steps in order.
 * Pure text work over package.json: nothing here runs anything. Script text is hostile input, so the
 * resolution is bounded (depth, step count) and gives up, with a reason, on anything it cannot follow
 * exactly (`||`, `;`, pipes, subshells, redirections, workspace flags, a cycle).
 */
import { shellQuote } from './shell-quote.js';

/** One simple command a package script runs. */
export interface ScriptStep {
  /** The package script the command comes from (`test`, `pretest`, `lint`). */
  script: string;
  /** The command as the script says it (arguments passed through `--` appended). */
  command: string;
}

export type ScriptResolution = { ok: true; steps: ScriptStep[] } | { ok: false; why: string };

/** What resolution needs to know about a package. */
export interface PackageScripts {
  scripts: Record<string, string>;
  /** Yarn 2 and later run no `pre`/`post` scripts; npm, pnpm (9 and later) and yarn 1 do. */
  yarnBerry?: boolean;
}

type Manager = 'npm' | 'pnpm' | 'yarn';

/** A package-manager call that runs a script: `npm run lint`, `pnpm test`, `yarn build --watch`. */
export interface PackageCall {
  manager: Manager;
  script: string;
  /** Arguments the manager passes on to the script. */
  args: string[];
  /** `--if-present`: a missing script is skipped rather than an error. */
  ifPresent: boolean;
  /** `pnpm X` / `yarn X` without `run`: X may also be a program, when no script has that name. */
  bare: boolean;
}

// Deep enough for real chains (`test` -> `test:all` -> `test:unit`), short enough to stop a hostile one
const MAX_DEPTH = 8;
const MAX_STEPS = 32;
// Flags that change only how much the manager prints or whether a missing script is an error
const HARMLESS_FLAGS = new Set(['-s', '--silent', '-q', '--quiet', '--if-present']);
const NPM_RUN_VERBS = new Set(['run', 'run-script', 'rum', 'urn']);
const TEST_VERBS = new Set(['test', 't', 'tst']);
// Built-in commands of pnpm and yarn that `pnpm X` runs instead of a script of the same name
const BUILTINS = new Set([
  'add',
  'audit',
  'dlx',
  'exec',
  'install',
  'i',
  'outdated',
  'remove',
  'why',
  'list',
  'ls',
  'dedupe',
  'prune',
]);

/** Resolve `command` (e.g. `npm test`) into the simple commands it runs, in order. */
export function resolveScriptSteps(command: string, pkg: PackageScripts): ScriptResolution {
  const steps: ScriptStep[] = [];
  const error = resolveText(command, '', [], pkg, steps);
  if (error !== undefined) return { ok: false, why: error };
  return { ok: true, steps };
}

/** Resolve one piece of shell text into `steps`; returns why not, when it cannot be followed. */
function resolveText(
  text: string,
  script: string,
  stack: string[],
  pkg: PackageScripts,
  steps: ScriptStep[],
): string | undefined {
  const split = splitAndChain(text);
  if (!split.ok) return split.why;
  for (const segment of split.segments) {
    const call = packageCall(segment);
    if (call === 'unsupported') return `\`${segment}\` uses package-manager flags keel does not follow`;
    if (call === undefined || (call.bare && !hasScript(pkg, call.script))) {
      steps.push({ script, command: segment });
    } else {
      const error = resolveCall(call, stack, pkg, steps);
      if (error !== undefined) return error;
    }
    if (steps.length > MAX_STEPS) return `the scripts expand to more than ${MAX_STEPS} steps`;
  }
  return undefined;
}

/** Resolve a call to a script: its `pre` script, its body, its `post` script. */
function resolveCall(
  call: PackageCall,
  stack: string[],
  pkg: PackageScripts,
  steps: ScriptStep[],
): string | undefined {
  const { script } = call;
  if (stack.includes(script))
    return `the scripts call each other in a cycle: ${[...stack, script].join(' -> ')}`;
  if (stack.length >= MAX_DEPTH) return `the scripts nest deeper than ${MAX_DEPTH} levels`;
  if (!hasScript(pkg, script)) {
    return call.ifPresent ? undefined : `package.json has no script \`${script}\``;
  }
  const hooks = !(call.manager === 'yarn' && pkg.yarnBerry === true);
  const inner = [...stack, script];
  for (const hook of hooks ? [`pre${script}`] : []) {
    if (!hasScript(pkg, hook) || inner.includes(hook)) continue;
    const error = resolveText(pkg.scripts[hook] ?? '', hook, [...inner, hook], pkg, steps);
    if (error !== undefined) return error;
  }
  // the manager appends the call's arguments to the script's text, so they reach its last command
  const body = [pkg.scripts[script] ?? '', ...call.args.map(shellQuote)].join(' ');
  const error = resolveText(body, script, inner, pkg, steps);
  if (error !== undefined) return error;
  for (const hook of hooks ? [`post${script}`] : []) {
    if (!hasScript(pkg, hook) || inner.includes(hook)) continue;
    const error = resolveText(pkg.scripts[hook] ?? '', hook, [...inner, hook], pkg, steps);
    if (error !== undefined) return error;
  }
  return undefined;
}

function hasScript(pkg: PackageScripts, name: string): boolean {
  return Object.hasOwn(pkg.scripts, name) && typeof pkg.scripts[name] === 'string';
}

/**
 * Split shell text on top-level `&&` (outside quotes). Any other control operator, a redirection, a
 * subshell or a substitution means the text is not a plain chain, and keel will not guess what it does.
 */
export function splitAndChain(text: string): { ok: true; segments: string[] } | { ok: false; why: string } {
  const segments: string[] = [];
  let current = '';
  let quote: "'" | '"' | undefined;
  for (let i = 0; i < text.length; i++) {
    const char = text[i] ?? '';
    const next = text[i + 1] ?? '';
    if (quote !== undefined) {
      if (char === '\\' && quote === '"') {
        current += char + next;
        i++;
        continue;
      }
      if (char === '`' || (char === '$' && next === '(')) return notPlain('a command substitution');
      if (char === quote) quote = undefined;
      current += char;
      continue;
    }
    if (char === "'" || char === '"') {
      quote = char;
      current += char;
      continue;
    }
    if (char === '\\') {
      current += char + next;
      i++;
      continue;
    }
    if (char === '&' && next === '&') {
      segments.push(current.trim());
      current = '';
      i++;
      continue;
    }
    const operator = operatorAt(char, next);
    if (operator !== undefined) return notPlain(operator);
    current += char;
  }
  if (quote !== undefined) return { ok: false, why: 'the script has an unclosed quote' };
  segments.push(current.trim());
  if (segments.some((segment) => segment === ''))
    return { ok: false, why: 'the script has an empty command' };
  return { ok: true, segments };
}

function operatorAt(char: string, next: string): string | undefined {
  if (char === '|') return next === '|' ? '`||`' : 'a pipe';
  if (char === ';') return '`;`';
  if (char === '&') return 'a background `&`';
  if (char === '\n' || char === '\r') return 'several lines';
  if (char === '<' || char === '>') return 'a redirection';
  if (char === '(' || char === ')') return 'a subshell';
  if (char === '`' || (char === '$' && next === '(')) return 'a command substitution';
  return undefined;
}

function notPlain(what: string): { ok: false; why: string } {
  return { ok: false, why: `the script uses ${what}, which keel does not split into steps` };
}

/**
 * The script a simple command runs through a package manager, undefined when it is not such a call, or
 * `unsupported` for a call keel cannot follow exactly (workspaces, a prefix, other flags).
 */
export function packageCall(segment: string): PackageCall | 'unsupported' | undefined {
  const ws = shellWords(segment);
  const manager = ws[0];
  if (manager !== 'npm' && manager !== 'pnpm' && manager !== 'yarn') return undefined;
  const rest = ws.slice(1);
  const flags: string[] = [];
  while (rest[0]?.startsWith('-') === true && rest[0] !== '--') flags.push(rest.shift() ?? '');
  const verb = rest.shift();
  if (verb === undefined) return undefined;
  let script: string | undefined;
  let bare = false;
  if (TEST_VERBS.has(verb)) script = 'test';
  else if (verb === 'run' || (manager === 'npm' && NPM_RUN_VERBS.has(verb))) {
    while (rest[0]?.startsWith('-') === true && rest[0] !== '--') flags.push(rest.shift() ?? '');
    script = rest.shift();
  } else if (manager !== 'npm' && !BUILTINS.has(verb) && !verb.startsWith('-')) {
    script = verb;
    bare = true;
  }
  if (script === undefined) return undefined;
  if (flags.some((flag) => !HARMLESS_FLAGS.has(flag))) return 'unsupported';
  // npm reads flags before `--` as its own configuration; pnpm and yarn pass everything on
  const dash = rest.indexOf('--');
  const before = dash < 0 ? rest : rest.slice(0, dash);
  if (manager === 'npm' && before.some((word) => word.startsWith('-'))) return 'unsupported';
  const args = dash < 0 ? rest : [...before, ...rest.slice(dash + 1)];
  return { manager, script, args, ifPresent: flags.includes('--if-present'), bare };
}

/** Words of a simple command, with quotes and backslashes taken the way the shell takes them. */
export function shellWords(segment: string): string[] {
  const out: string[] = [];
  let word = '';
  let inWord = false;
  let quote: "'" | '"' | undefined;
  for (let i = 0; i < segment.length; i++) {
    const char = segment[i] ?? '';
    if (quote === "'") {
      if (char === "'") quote = undefined;
      else word += char;
      continue;
    }
    if (quote === '"') {
      if (char === '"') quote = undefined;
      else if (char === '\\' && /["\\$`]/.test(segment[i + 1] ?? '')) word += segment[++i] ?? '';
      else word += char;
      continue;
    }
    if (char === "'" || char === '"') {
      quote = char;
      inWord = true;
    } else if (char === '\\') {
      word += segment[++i] ?? '';
      inWord = true;
    } else if (/\s/.test(char)) {
      if (inWord) out.push(word);
      word = '';
      inWord = false;
    } else {
      word += char;
      inWord = true;
    }
  }
  if (inWord) out.push(word);
  return out;
}
