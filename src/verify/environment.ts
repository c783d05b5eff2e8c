/**
 * Environment problems: a run that failed because something outside the code under test is missing (a
 * command, a package, the network). These must not be mistaken for failing tests, or a fix is judged by
 * a machine that could not run it.
 */
import { stripAnsi } from './result-ids.js';
import type { TestResult } from './types.js';

export interface RunEvidence {
  exitCode: number | null;
  output: string;
  results: TestResult[];
  /** Whether a top-level module name belongs to the project; a missing one is then the code's problem. */
  isLocalModule?: (name: string) => boolean;
}

type Check = (text: string, evidence: RunEvidence) => string | undefined;

/** Name what is missing when a failed run points at the environment, or undefined when it does not. */
export function findEnvironmentProblem(evidence: RunEvidence): string | undefined {
  // a clean run is never blamed on the environment, whatever its tests print
  if (evidence.exitCode === 0) return undefined;
  const messages = evidence.results.filter((r) => r.status === 'failed').map((r) => r.message ?? '');
  const text = stripAnsi([evidence.output, ...messages].join('\n'));
  for (const check of CHECKS) {
    const problem = check(text, evidence);
    if (problem !== undefined) return problem;
  }
  return undefined;
}

const CHECKS: Check[] = [
  corepackDownload,
  readOnlyFolder,
  commandNotFound,
  missingScript,
  missingPythonModule,
  missingNodePackage,
  missingGoModule,
  network,
];

function commandNotFound(text: string, evidence: RunEvidence): string | undefined {
  // the shell's own words (sh, dash, bash, zsh), so a test printing "x: not found" is not mistaken for it
  const match =
    /^\S*sh: (?:line )?(?:\d+: )?([^\s:]+): (?:command )?not found\s*$/m.exec(text) ??
    /^\S*sh: command not found: (\S+)\s*$/m.exec(text);
  const name = match?.[1];
  if (name !== undefined)
    return name.endsWith('pytest')
      ? `pytest is not installed (command not found: ${name})`
      : `command not found: ${name}`;
  if (evidence.exitCode === 127) return 'a command the tests need was not found (exit 127)';
  if (/could not determine executable to run/.test(text)) return 'npx could not find the executable to run';
  return undefined;
}

/**
 * corepack wanted to download the package manager package.json pins (`packageManager`), and the sandbox has
 * no network: say which manager and where it is pinned, since the message only names a URL.
 */
function corepackDownload(text: string): string | undefined {
  const match =
    /Network access disabled by the environment; can't reach ([^\s;]+)/.exec(text) ??
    /Corepack is about to download ([^\s;]+)/.exec(text) ??
    /Error when performing the request to ([^\s;]+)/.exec(text);
  if (match === null) return undefined;
  const url = match[1] ?? '';
  const pinned = /\/((?:@[\w.-]+\/)?[\w.-]+)\/-\/[\w.-]+-(\d[\w.+-]*?)\.tgz$/.exec(url);
  const manager = pinned === null ? 'the package manager' : `${pinned[1]}@${pinned[2]}`;
  return `corepack would download ${manager}, pinned by package.json's "packageManager" field, and the sandbox has no network (${url}); fetch it once with \`corepack install\` in the project, or remove the field`;
}

/**
 * A tool wrote to a folder the sandbox keeps read-only (a dependency folder, .git): the machine, not the
 * code under test. The path says which folder.
 */
function readOnlyFolder(text: string): string | undefined {
  const path = readOnlyWrite(text);
  if (path === undefined) return undefined;
  return `a tool the tests run wrote to a read-only folder: ${path} (the sandbox keeps dependency folders and .git read-only)`;
}

/** The path a run's output says could not be written because its folder is read-only, if any. */
export function readOnlyWrite(text: string): string | undefined {
  const clean = stripAnsi(text);
  return (
    /EROFS: read-only file system, \w+ '([^']+)'/.exec(clean)?.[1] ??
    /\[Errno 30\] Read-only file system: '([^']+)'/.exec(clean)?.[1]
  );
}

function missingScript(text: string): string | undefined {
  const match = /Missing script: "?([\w:.-]+)"?/i.exec(text);
  return match === null ? undefined : `package.json has no "${match[1]}" script`;
}

function missingPythonModule(text: string, evidence: RunEvidence): string | undefined {
  for (const match of text.matchAll(/No module named '?([\w.]+)'?/g)) {
    const name = match[1] ?? '';
    const top = name.split('.')[0] ?? name;
    if (top === 'pytest') return 'pytest is not installed (No module named pytest)';
    if (evidence.isLocalModule?.(top)) continue;
    return `Python module not installed: ${name}`;
  }
  return undefined;
}

function missingNodePackage(text: string): string | undefined {
  for (const match of text.matchAll(/Cannot find (?:module|package) '([^']+)'/g)) {
    const name = match[1] ?? '';
    // a missing relative import is the code's own problem, and perhaps the very bug being fixed
    if (/^(\.|\/|[A-Za-z]:\\|file:)/.test(name) && !name.includes('/node_modules/')) continue;
    if (name.includes('/node_modules/')) return `Node package install is broken: ${name} is missing`;
    return `Node package not installed: ${packageName(name)}`;
  }
  return undefined;
}

function packageName(specifier: string): string {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : (parts[0] ?? specifier);
}

function missingGoModule(text: string): string | undefined {
  const match =
    /(?:no required module provides package|cannot find module providing package|missing go\.sum entry for module providing package) ([^\s;]+)/.exec(
      text,
    );
  return match === null ? undefined : `Go module not available: ${match[1]}`;
}

function network(text: string): string | undefined {
  const hostPatterns = [
    // on one line: npm's `errno ENOTFOUND` ends its line, and the next one starts with `npm`
    /\b(?:ENOTFOUND|EAI_AGAIN)[ \t]+([\w.-]+)/g,
    /\bconnect (?:ECONNREFUSED|ETIMEDOUT|ENETUNREACH|EHOSTUNREACH) (\S+)/g,
    /Could not resolve host:? '?([\w.-]+)/gi,
    /dial tcp: lookup ([\w.-]+)/g,
    /Failed to establish a new connection.*?host='([\w.-]+)'/g,
  ];
  for (const pattern of hostPatterns) {
    for (const match of text.matchAll(pattern)) {
      const host = (match[1] ?? '').replace(/:\d+$/, '').replace(/^\[|\]$/g, '');
      // a refused connection to this machine is a test talking to its own server, not the network
      if (!isLoopback(host)) return `network unavailable: cannot reach ${host}`;
    }
  }
  const uncached = /code ENOTCACHED[\s\S]*?request to (\S+) failed/.exec(text);
  if (uncached !== null) {
    return `network unavailable: npm is offline in the sandbox and ${uncached[1]} is not in its cache`;
  }
  if (/Temporary failure in name resolution|Couldn't resolve host name/.test(text)) {
    return 'network unavailable: name resolution failed';
  }
  return undefined;
}

function isLoopback(host: string): boolean {
  return (
    host === 'localhost' || host === '::1' || host === '0.0.0.0' || host.startsWith('127.') || host === ''
  );
}
