/**
 * Reporter flags: how each runner is made to write machine-readable per-test results without changing
 * what the user's tests do. Flags go where the runner will see them (appended args, NODE_OPTIONS,
 * PYTEST_ADDOPTS); when keel cannot reach the runner, the run is judged by exit code and the note says so.
 */
import { runnerOf, words } from './detect.js';
import { nodeReporterUrl } from './node-reporter.js';
import { shellQuote } from './shell-quote.js';
import type { DetectedCommand, Invocation, ParseFormat } from './types.js';
import { uvuPreloadUrl } from './uvu-reporter.js';

export { shellQuote };

export interface InvocationOptions {
  /** A test name pattern or a test file path; runners that cannot filter get their results filtered. */
  filter?: string;
  /** Where the runner's report goes; the log goes beside it (`<reportFile>.log`). */
  reportFile: string;
}

interface Plan {
  test: string;
  parse: ParseFormat;
  /** Variables whose current value keel extends (space-separated) rather than replaces. */
  extend?: Array<[string, string]>;
  resultFilter?: string;
  note?: string;
}

/** Build the command that runs the suite with per-test reporting, and say how to read its results. */
export function buildInvocation(detected: DetectedCommand, opts: InvocationOptions): Invocation {
  const logFile = `${opts.reportFile}.log`;
  const plan = planFor(detected, opts);
  const lines = (plan.extend ?? []).map(
    ([name, value]) => `${name}="\${${name}:+$${name} }"${shellQuote(value)}; export ${name}`,
  );
  // a newline before the closing brace so a trailing comment in the user's command cannot swallow it
  lines.push(`{ ${plan.test}\n} > ${shellQuote(logFile)} 2>&1`);
  return {
    command: lines.join('\n'),
    display: plan.test,
    runner: detected.runner,
    parse: plan.parse,
    reportFile: opts.reportFile,
    logFile,
    ...(plan.resultFilter === undefined ? {} : { resultFilter: plan.resultFilter }),
    ...(plan.note === undefined ? {} : { note: plan.note }),
  };
}

function planFor(detected: DetectedCommand, opts: InvocationOptions): Plan {
  const { filter, reportFile } = opts;
  const report = shellQuote(reportFile);
  const pathFilter = filter !== undefined && looksLikePath(filter);
  switch (detected.runner) {
    case 'vitest': {
      const filterArgs =
        filter === undefined ? '' : pathFilter ? shellQuote(filter) : `-t ${shellQuote(filter)}`;
      return appendPlan(detected, filter, 'vitest-json', [
        '--reporter=default --reporter=json',
        `--outputFile.json=${report}`,
        filterArgs,
      ]);
    }
    case 'jest': {
      const filterArgs =
        filter === undefined ? '' : pathFilter ? shellQuote(filter) : `-t ${shellQuote(filter)}`;
      return appendPlan(detected, filter, 'jest-json', ['--json', `--outputFile=${report}`, filterArgs]);
    }
    case 'mocha': {
      const filterArgs =
        filter === undefined ? '' : pathFilter ? shellQuote(filter) : `--grep ${shellQuote(filter)}`;
      // mocha before 10 ignores `output` and prints the JSON to stdout, which the parser also reads
      return appendPlan(detected, filter, 'mocha-json', [
        '--reporter=json',
        `--reporter-option ${shellQuote(`output=${reportFile}`)}`,
        filterArgs,
      ]);
    }
    case 'node-test':
      return nodePlan(detected, opts);
    case 'pytest':
      return pytestPlan(detected, opts);
    case 'go': {
      const flags = ['-json', filter === undefined ? '' : `-run ${shellQuote(filter)}`];
      const test = insertAfter(detected, /\bgo\s+test\b/, flags);
      if (test !== undefined) return { test, parse: 'go-json' };
      return exitCodePlan(detected, filter, '`go test` is not the last command of the test command');
    }
    case 'cargo':
      return cargoPlan(detected, filter);
    case 'tap':
      return tapPlan(detected, filter);
    case 'uvu':
      return uvuPlan(detected, opts);
    case 'ava': {
      const filterArgs =
        filter === undefined ? '' : pathFilter ? shellQuote(filter) : `--match ${shellQuote(`*${filter}*`)}`;
      return appendPlan(detected, filter, 'ava-tap', ['--tap', filterArgs]);
    }
    case 'unknown':
      return exitCodePlan(
        detected,
        filter,
        `keel does not recognize the test runner in \`${scriptText(detected)}\``,
      );
  }
}

/** Runners whose flags must be appended to the command line; without that, only the exit code speaks. */
function appendPlan(
  detected: DetectedCommand,
  filter: string | undefined,
  parse: ParseFormat,
  args: string[],
): Plan {
  if (!runsLast(scriptText(detected), detected.runner)) {
    return exitCodePlan(
      detected,
      filter,
      `the test command does not end by running ${detected.runner}, so keel cannot add its reporter flags`,
    );
  }
  return { test: withArgs(detected, args), parse };
}

function nodePlan(detected: DetectedCommand, opts: InvocationOptions): Plan {
  const text = scriptText(detected);
  const reporters = text.match(/--test-reporter(?=[=\s])/g)?.length ?? 0;
  const destinations = text.match(/--test-reporter-destination/g)?.length ?? 0;
  // node refuses reporters without a destination each once NODE_OPTIONS adds any; leave the user's alone
  if (reporters > 0 && reporters !== destinations) {
    const why = 'the test command picks its own node --test reporter, which keel cannot add to';
    if (/--test-reporter[=\s]+tap\b/.test(text)) {
      return {
        test: detected.command,
        parse: 'tap',
        ...(opts.filter === undefined ? {} : { resultFilter: opts.filter }),
        note: `${why}; results are read from its TAP output`,
      };
    }
    return exitCodePlan(detected, opts.filter, why);
  }
  // NODE_OPTIONS reaches `node --test` through npm and any wrapper; spec keeps stdout readable
  const extend: Array<[string, string]> = [
    [
      'NODE_OPTIONS',
      [
        '--test-reporter=spec',
        '--test-reporter-destination=stdout',
        `--test-reporter=${nodeReporterUrl()}`,
        `--test-reporter-destination=${nodeOptionPath(opts.reportFile)}`,
      ].join(' '),
    ],
  ];
  const { filter } = opts;
  if (filter === undefined) return { test: detected.command, parse: 'node-events', extend };
  // --test-name-pattern is refused in NODE_OPTIONS; it can only go right after --test on the command line
  const test = looksLikePath(filter)
    ? undefined
    : insertAfter(detected, /\bnode\b[^&|;]*?\s--test(?=\s|$)/, [
        `--test-name-pattern=${shellQuote(filter)}`,
      ]);
  if (test !== undefined) return { test, parse: 'node-events', extend };
  return {
    test: detected.command,
    parse: 'node-events',
    extend,
    resultFilter: filter,
    note: 'the filter could not be passed to node --test here; all tests ran and the results were filtered',
  };
}

function pytestPlan(detected: DetectedCommand, opts: InvocationOptions): Plan {
  const { filter } = opts;
  // cacheprovider off: a verification run must not write .pytest_cache into the user's tree
  const addopts = [
    `--junitxml=${shellQuote(opts.reportFile)}`,
    '-o junit_family=xunit1',
    '-p no:cacheprovider',
  ];
  let test = detected.command;
  let resultFilter: string | undefined;
  if (filter !== undefined && !looksLikePath(filter)) addopts.push(`-k ${shellQuote(filter)}`);
  if (filter !== undefined && looksLikePath(filter)) {
    if (runsLast(scriptText(detected), 'pytest')) test = withArgs(detected, [shellQuote(filter)]);
    else resultFilter = filter;
  }
  return {
    test,
    parse: 'junit',
    extend: [['PYTEST_ADDOPTS', addopts.join(' ')]],
    ...(resultFilter === undefined ? {} : { resultFilter }),
  };
}

function cargoPlan(detected: DetectedCommand, filter: string | undefined): Plan {
  // without --no-fail-fast cargo skips the remaining test targets after the first failing one
  const flags = ['--no-fail-fast', filter === undefined ? '' : shellQuote(filter)];
  const test = insertAfter(detected, /\bcargo\s+test\b/, flags);
  if (test !== undefined) return { test, parse: 'cargo' };
  return {
    test: detected.command,
    parse: 'cargo',
    ...(filter === undefined ? {} : { resultFilter: filter }),
    note: 'keel could not add --no-fail-fast: cargo stops after the first failing test target',
  };
}

function tapPlan(detected: DetectedCommand, filter: string | undefined): Plan {
  const resultFilter = filter === undefined ? {} : { resultFilter: filter };
  // tape always prints TAP; node-tap prints it only when asked
  if (words(scriptText(detected)).some((word) => word.endsWith('tape'))) {
    return { test: detected.command, parse: 'tap', ...resultFilter };
  }
  if (runsLast(scriptText(detected), 'tap')) {
    return { test: withArgs(detected, ['--reporter=tap']), parse: 'tap', ...resultFilter };
  }
  return { test: detected.command, parse: 'tap', ...resultFilter };
}

function uvuPlan(detected: DetectedCommand, opts: InvocationOptions): Plan {
  // NODE_OPTIONS reaches the uvu process through npm and any wrapper; uvu cannot filter by test name
  return {
    test: detected.command,
    parse: 'uvu-events',
    extend: [
      ['NODE_OPTIONS', `--import=${uvuPreloadUrl()}`],
      ['KEEL_UVU_REPORT', opts.reportFile],
    ],
    ...(opts.filter === undefined ? {} : { resultFilter: opts.filter }),
  };
}

function exitCodePlan(detected: DetectedCommand, filter: string | undefined, why: string): Plan {
  const ignored = filter === undefined ? '' : '; the filter was ignored';
  return {
    test: detected.command,
    parse: 'exit-code',
    note: `${why}; per-test results are unavailable and the run is judged by its exit code${ignored}`,
  };
}

/** The text that appended arguments land in: the package script, or the command itself. */
function scriptText(detected: DetectedCommand): string {
  return detected.script ?? detected.command;
}

/**
 * Whether arguments appended to `text` reach `runner`: the runner must be the last command of a plain
 * `&&` chain, with no pipes, redirections, subshells or separators that would send them elsewhere.
 */
export function runsLast(text: string, runner: string): boolean {
  if (/[|;&<>`\n]|\$\(/.test(text.replace(/&&/g, ' '))) return false;
  const last = text.split('&&').pop() ?? '';
  return runnerOf(last) === runner;
}

function withArgs(detected: DetectedCommand, args: string[]): string {
  const joined = args.filter((arg) => arg !== '').join(' ');
  return detected.script !== undefined ? `${detected.command} -- ${joined}` : `${detected.command} ${joined}`;
}

/** Insert flags right after `pattern` in a command the user typed directly (never inside a script). */
function insertAfter(detected: DetectedCommand, pattern: RegExp, flags: string[]): string | undefined {
  if (detected.script !== undefined || !runsLast(detected.command, detected.runner)) return undefined;
  const match = pattern.exec(detected.command);
  if (match === null) return undefined;
  const end = match.index + match[0].length;
  const joined = flags.filter((flag) => flag !== '').join(' ');
  return `${detected.command.slice(0, end)} ${joined}${detected.command.slice(end)}`;
}

/** A filter naming a file (or a pytest node id) rather than a test name. */
function looksLikePath(filter: string): boolean {
  return /[/\\]|::|\.(?:[cm]?[jt]sx?|py|rs|go)$/.test(filter);
}

/** NODE_OPTIONS splits on spaces and understands double quotes with backslash escapes. */
function nodeOptionPath(path: string): string {
  if (!/[\s"\\]/.test(path)) return path;
  return `"${path.replace(/[\\"]/g, '\\$&')}"`;
}
