/** `go test -json` event streams: one JSON object per line, per test and per package. */
import { field, str } from './json-value.js';
import { clipMessage, dedupeIds, joinId } from './result-ids.js';
import type { TestResult } from './types.js';

interface GoTest {
  pkg: string;
  test: string;
  action?: 'pass' | 'fail' | 'skip';
  elapsed?: number;
  output: string[];
}

/** Parse `go test -json` output; non-JSON lines (build errors on stderr) are ignored here. */
export function parseGoJson(text: string): TestResult[] {
  const tests = new Map<string, GoTest>();
  const packages = new Map<string, GoTest>();
  const entry = (map: Map<string, GoTest>, pkg: string, test: string): GoTest => {
    const key = `${pkg}\u0000${test}`;
    let found = map.get(key);
    if (found === undefined) {
      found = { pkg, test, output: [] };
      map.set(key, found);
    }
    return found;
  };
  for (const line of text.split('\n')) {
    const event = parseLine(line);
    if (event === undefined) continue;
    // go 1.24 reports build output by ImportPath, with the test variant in brackets
    const pkg = (str(field(event, 'Package')) ?? str(field(event, 'ImportPath')) ?? '').replace(
      / \[.*\]$/,
      '',
    );
    const test = str(field(event, 'Test'));
    const action = str(field(event, 'Action'));
    const target = test === undefined ? entry(packages, pkg, '') : entry(tests, pkg, test);
    const output = str(field(event, 'Output'));
    if (output !== undefined) target.output.push(output);
    if (action === 'pass' || action === 'fail' || action === 'skip') {
      target.action = action;
      const elapsed = field(event, 'Elapsed');
      if (typeof elapsed === 'number') target.elapsed = elapsed;
    } else if (action === 'build-fail') {
      target.action = 'fail';
    }
  }
  return dedupeIds(collect([...tests.values()], [...packages.values()]));
}

function collect(tests: GoTest[], packages: GoTest[]): TestResult[] {
  const results: TestResult[] = [];
  const failedPackages = new Set<string>();
  const names = new Set(tests.map((t) => `${t.pkg}\u0000${t.test}`));
  const hasChild = (t: GoTest): boolean =>
    tests.some((o) => o.pkg === t.pkg && o.test.startsWith(`${t.test}/`));
  for (const t of tests) {
    if (t.action === undefined) continue;
    const childFailed = tests.some(
      (o) => o.pkg === t.pkg && o.test.startsWith(`${t.test}/`) && o.action === 'fail',
    );
    // a parent with subtests is a container: its subtests are the tests, unless it failed on its own
    if (hasChild(t) && !(t.action === 'fail' && !childFailed)) continue;
    if (t.action === 'fail') failedPackages.add(t.pkg);
    results.push(toResult(t, t.test));
  }
  for (const p of packages) {
    // a package that failed without a failing test did not build or crashed outside a test
    if (p.action !== 'fail' || failedPackages.has(p.pkg) || names.has(`${p.pkg}\u0000`)) continue;
    results.push(toResult(p, undefined));
  }
  return results;
}

function toResult(t: GoTest, test: string | undefined): TestResult {
  const status = t.action === 'pass' ? 'passed' : t.action === 'fail' ? 'failed' : 'skipped';
  const message = status === 'failed' ? clipMessage(t.output.join('')) : undefined;
  return {
    id: joinId([t.pkg, test]),
    name: test ?? t.pkg,
    // the package stands in for the file, so a target can name a whole package
    file: t.pkg,
    status,
    ...(t.elapsed === undefined ? {} : { durationMs: Math.round(t.elapsed * 1000) }),
    ...(message === undefined ? {} : { message }),
  };
}

function parseLine(line: string): unknown {
  if (!line.startsWith('{')) return undefined;
  try {
    return JSON.parse(line);
  } catch {
    return undefined;
  }
}

/** The human-readable text inside a `go test -json` stream, for showing to people and models. */
export function goJsonText(text: string): string {
  const out: string[] = [];
  for (const line of text.split('\n')) {
    const event = parseLine(line);
    const output = event === undefined ? undefined : str(field(event, 'Output'));
    if (output !== undefined) out.push(output);
    else if (event === undefined && line !== '') out.push(`${line}\n`);
  }
  return out.join('');
}
