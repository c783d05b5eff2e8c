/**
 * TAP 13 and 14 parsing: nested subtests (indented four spaces, as node's runner and node-tap write them),
 * YAML diagnostics, SKIP and TODO directives, and tape's flat style where `# name` groups assertions.
 */
import { clipMessage, dedupeIds, joinId, relativeFile, stripAnsi } from './result-ids.js';
import type { TestResult, TestStatus } from './types.js';

export interface ParseOptions {
  /** The project root, for making file paths in the report relative. */
  root?: string;
}

interface Point {
  ok: boolean;
  name: string;
  directive?: 'skip' | 'todo';
  depth: number;
  /** Whether a `# Subtest:` header announced it (TAP 14 and node), which tape never writes. */
  announced: boolean;
  group?: string;
  yaml: Record<string, string>;
  children: Point[];
}

const POINT = /^(not )?ok\b(?:\s+\d+)?(?:\s+-)?\s*(.*)$/;
// Summary comments runners print at the end; they are not tape test names
const SUMMARY =
  /^(tests|suites|pass|fail|failed|skip|skipped|todo|cancelled|duration_ms|ok|time=|Subtest:)\b/i;

/** Parse TAP text into leaf test results; containers count only when they failed with no failing child. */
export function parseTap(text: string, opts: ParseOptions = {}): TestResult[] {
  const pending = new Map<number, Point[]>();
  let announcedAt = new Set<number>();
  let group: string | undefined;
  let yamlTarget: Point | undefined;
  let yamlIndent = -1;
  let yamlLines: string[] = [];

  for (const raw of stripAnsi(text).split(/\r?\n/)) {
    const indent = raw.length - raw.trimStart().length;
    const line = raw.trim();
    if (yamlTarget !== undefined) {
      if (line === '...' && indent <= yamlIndent) {
        yamlTarget.yaml = parseYamlBlock(dedent(yamlLines));
        yamlTarget = undefined;
      } else {
        yamlLines.push(raw);
      }
      continue;
    }
    const depth = Math.floor(indent / 4);
    if (line.startsWith('# Subtest')) {
      announcedAt.add(depth);
      if (depth === 0) group = undefined;
      continue;
    }
    if (line === '---') {
      const level = pending.get(depth);
      const last = level?.[level.length - 1];
      if (last !== undefined) {
        yamlTarget = last;
        yamlIndent = indent;
        yamlLines = [];
      }
      continue;
    }
    if (depth === 0 && line.startsWith('#') && !line.startsWith('# Subtest')) {
      const comment = line.replace(/^#\s*/, '');
      if (comment !== '' && !SUMMARY.test(comment)) group = comment;
      continue;
    }
    const match = POINT.exec(line);
    if (match === null) continue;
    const point = toPoint(match[1] === undefined, match[2] ?? '', depth);
    point.announced = announcedAt.has(depth);
    announcedAt = new Set([...announcedAt].filter((d) => d < depth));
    if (depth === 0 && !point.announced && group !== undefined) point.group = group;
    point.children = pending.get(depth + 1) ?? [];
    pending.delete(depth + 1);
    const level = pending.get(depth) ?? [];
    level.push(point);
    pending.set(depth, level);
  }

  // points whose parent line never came (a crash mid-run) still count, in order of depth
  const roots = [...pending.entries()].sort(([a], [b]) => a - b).flatMap(([, points]) => points);
  return dedupeIds(collect(roots, opts.root));
}

function toPoint(ok: boolean, rest: string, depth: number): Point {
  // a `#` escaped as `\#` belongs to the description, an unescaped one starts the directive
  const hash = rest.search(/(?<!\\)#/);
  const desc = (hash >= 0 ? rest.slice(0, hash) : rest).trim().replace(/\\#/g, '#');
  const directiveText = hash >= 0 ? rest.slice(hash + 1).trim() : '';
  const directive = /^skip/i.test(directiveText) ? 'skip' : /^todo/i.test(directiveText) ? 'todo' : undefined;
  return {
    ok,
    name: desc,
    depth,
    announced: false,
    yaml: {},
    children: [],
    ...(directive === undefined ? {} : { directive }),
  };
}

function statusOf(point: Point): TestStatus {
  // a failing TODO is expected to fail, so it is neither a pass nor a failure
  if (point.directive !== undefined) return 'skipped';
  return point.ok ? 'passed' : 'failed';
}

function collect(roots: Point[], root: string | undefined): TestResult[] {
  const results: TestResult[] = [];
  const groups = new Map<string, TestResult>();
  const walk = (point: Point, path: string[], file: string | undefined): boolean => {
    // old node runners wrap each file in a subtest named by its path
    const fileNode = point.depth === 0 && looksLikeTestFile(point.name);
    const here = fileNode ? relativeFile(point.name, root) : point.name;
    const fileHere = fileNode ? here : file;
    // node-tap's assertions are unannounced points inside an announced subtest: the subtest is the test
    const assertionsOnly =
      point.children.length > 0 && point.children.every((c) => !c.announced && c.children.length === 0);
    if (assertionsOnly) {
      const failing = point.children.find((c) => statusOf(c) === 'failed');
      if (failing !== undefined && point.yaml.error === undefined && point.yaml.message === undefined) {
        point.yaml.message = [failing.name, failing.yaml.error ?? failing.yaml.message]
          .filter(Boolean)
          .join(': ');
      }
    } else if (point.children.length > 0) {
      let childFailed = false;
      for (const child of point.children) {
        if (walk(child, [...path, here], fileHere)) childFailed = true;
      }
      if (point.ok || childFailed || point.directive !== undefined) return childFailed;
      // a container that failed on its own (a hook, a crash after its tests): keep that failure
    }
    // a file with no tests in it is not a test
    if (fileNode && point.ok) return false;
    const result = toResult(point, [...path, here], fileHere ?? locationFile(point, root));
    if (point.group !== undefined) {
      mergeIntoGroup(groups, results, point.group, result);
      return result.status === 'failed';
    }
    results.push(result);
    return result.status === 'failed';
  };
  for (const point of roots) walk(point, [], undefined);
  return results;
}

function toResult(point: Point, path: string[], file: string | undefined): TestResult {
  const durationMs = Number(point.yaml.duration_ms);
  const message = statusOf(point) === 'failed' ? (point.yaml.error ?? point.yaml.message) : undefined;
  const clipped = clipMessage(message);
  return {
    id: joinId(path),
    name: point.name,
    ...(file === undefined ? {} : { file }),
    status: statusOf(point),
    ...(Number.isFinite(durationMs) && point.yaml.duration_ms !== undefined ? { durationMs } : {}),
    ...(clipped === undefined ? {} : { message: clipped }),
  };
}

/** tape: every assertion under a `# name` comment belongs to the test of that name. */
function mergeIntoGroup(
  groups: Map<string, TestResult>,
  results: TestResult[],
  name: string,
  point: TestResult,
) {
  const existing = groups.get(name);
  if (existing === undefined) {
    const result: TestResult = { id: name, name, status: point.status };
    if (point.message !== undefined) result.message = `${point.name}: ${point.message}`;
    else if (point.status === 'failed') result.message = point.name;
    groups.set(name, result);
    results.push(result);
    return;
  }
  if (point.status === 'failed' && existing.status !== 'failed') {
    existing.status = 'failed';
    existing.message = point.message === undefined ? point.name : `${point.name}: ${point.message}`;
  } else if (point.status === 'passed' && existing.status === 'skipped') {
    existing.status = 'passed';
  }
}

function looksLikeTestFile(name: string): boolean {
  return /^\S+\.[cm]?[jt]sx?$/.test(name);
}

function locationFile(point: Point, root: string | undefined): string | undefined {
  const location = point.yaml.location ?? point.yaml.at;
  const match =
    location === undefined ? null : /\(?((?:file:\/\/)?\/[^():]+):\d+(?::\d+)?\)?\s*$/.exec(location);
  return match?.[1] === undefined ? undefined : relativeFile(match[1], root);
}

/** Top-level `key: value` pairs of a dedented TAP YAML block, with block scalars joined and quotes removed. */
export function parseYamlBlock(lines: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  let i = 0;
  while (i < lines.length) {
    const line = lines[i] ?? '';
    i++;
    const match = /^([\w$-]+):\s*(.*)$/.exec(line);
    if (match === null) continue;
    const key = match[1] ?? '';
    const value = match[2] ?? '';
    if (/^[|>][-+]?$/.test(value)) {
      const block: string[] = [];
      while (i < lines.length && (/^\s/.test(lines[i] ?? '') || (lines[i] ?? '') === '')) {
        block.push(lines[i] ?? '');
        i++;
      }
      out[key] = dedent(block)
        .join(value.startsWith('>') ? ' ' : '\n')
        .trimEnd();
      continue;
    }
    out[key] = unquote(value);
  }
  return out;
}

function dedent(lines: string[]): string[] {
  const indents = lines.filter((l) => l.trim() !== '').map((l) => l.length - l.trimStart().length);
  const cut = indents.length === 0 ? 0 : Math.min(...indents);
  return lines.map((l) => l.slice(cut));
}

function unquote(value: string): string {
  if (value.length >= 2 && value.startsWith("'") && value.endsWith("'"))
    return value.slice(1, -1).replace(/''/g, "'");
  if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) {
    try {
      const parsed: unknown = JSON.parse(value);
      return typeof parsed === 'string' ? parsed : value;
    } catch {
      return value.slice(1, -1);
    }
  }
  return value === '~' ? '' : value;
}
