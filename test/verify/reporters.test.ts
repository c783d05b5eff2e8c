import { describe, expect, it } from 'vitest';
import { buildInvocation, runsLast, shellQuote } from '../../src/verify/reporters.js';
import type { DetectedCommand } from '../../src/verify/types.js';

const REPORT = '/tmp/keel-run/report';
const script = (runner: DetectedCommand['runner'], text: string): DetectedCommand => ({
  command: 'npm test',
  runner,
  source: 'package.json scripts.test',
  script: text,
});
const direct = (runner: DetectedCommand['runner'], command: string): DetectedCommand => ({
  command,
  runner,
  source: 'test command',
});

describe('buildInvocation', () => {
  it('appends vitest reporter flags through npm and sends all output to the log', () => {
    const inv = buildInvocation(script('vitest', 'vitest run'), { reportFile: REPORT });
    expect(inv.display).toBe(
      'npm test -- --reporter=default --reporter=json --outputFile.json=/tmp/keel-run/report',
    );
    expect(inv.parse).toBe('vitest-json');
    expect(inv.command).toBe(`{ ${inv.display}\n} > /tmp/keel-run/report.log 2>&1`);
    expect(inv.note).toBeUndefined();
  });

  it('falls back to the exit code, and says so, when the runner is not the last command', () => {
    const inv = buildInvocation(script('vitest', 'vitest run && eslint .'), {
      reportFile: REPORT,
      filter: 'adds',
    });
    expect(inv.parse).toBe('exit-code');
    expect(inv.display).toBe('npm test');
    expect(inv.note).toMatch(
      /does not end by running vitest.*judged by its exit code; the filter was ignored/,
    );
  });

  it('filters jest by test name or by file', () => {
    expect(
      buildInvocation(direct('jest', 'npx jest'), { reportFile: REPORT, filter: "adds 'two'" }).display,
    ).toBe(`npx jest --json --outputFile=/tmp/keel-run/report -t 'adds '\\''two'\\'''`);
    expect(
      buildInvocation(direct('jest', 'jest'), { reportFile: REPORT, filter: 'src/a.test.ts' }).display,
    ).toBe('jest --json --outputFile=/tmp/keel-run/report src/a.test.ts');
  });

  it("reaches node's runner through NODE_OPTIONS, keeping whatever the user had there", () => {
    const inv = buildInvocation(script('node-test', 'node --test'), { reportFile: REPORT });
    expect(inv.parse).toBe('node-events');
    expect(inv.display).toBe('npm test');
    const [exportLine] = inv.command.split('\n');
    expect(exportLine).toMatch(/^NODE_OPTIONS="\$\{NODE_OPTIONS:\+\$NODE_OPTIONS \}"'--test-reporter=spec /);
    expect(exportLine).toContain('--test-reporter=data:text/javascript;base64,');
    expect(exportLine).toMatch(/--test-reporter-destination=\/tmp\/keel-run\/report'; export NODE_OPTIONS$/);
  });

  it('passes a name filter to node --test only on a direct command; otherwise filters results', () => {
    const onCommand = buildInvocation(direct('node-test', 'node --test test/'), {
      reportFile: REPORT,
      filter: 'adds',
    });
    expect(onCommand.display).toBe('node --test --test-name-pattern=adds test/');
    expect(onCommand.resultFilter).toBeUndefined();
    const viaNpm = buildInvocation(script('node-test', 'node --test'), {
      reportFile: REPORT,
      filter: 'adds',
    });
    expect(viaNpm.display).toBe('npm test');
    expect(viaNpm.resultFilter).toBe('adds');
    expect(viaNpm.note).toMatch(/results were filtered/);
  });

  it('leaves a script that picks its own node reporter alone: node would refuse the mix', () => {
    const tap = buildInvocation(script('node-test', 'node --test --test-reporter=tap'), {
      reportFile: REPORT,
    });
    expect(tap).toMatchObject({ parse: 'tap', display: 'npm test' });
    expect(tap.command).not.toContain('NODE_OPTIONS');
    const dot = buildInvocation(script('node-test', 'node --test --test-reporter dot'), {
      reportFile: REPORT,
    });
    expect(dot.parse).toBe('exit-code');
    expect(dot.note).toMatch(/picks its own node --test reporter/);
    const paired = script('node-test', 'node --test --test-reporter=dot --test-reporter-destination=stdout');
    expect(buildInvocation(paired, { reportFile: REPORT }).parse).toBe('node-events');
  });

  it('gives pytest its JUnit flags through PYTEST_ADDOPTS, and -k for a name filter', () => {
    const inv = buildInvocation(direct('pytest', 'pytest'), {
      reportFile: REPORT,
      filter: 'test_add or test_sub',
    });
    expect(inv.parse).toBe('junit');
    expect(inv.command.split('\n')[0]).toBe(
      `PYTEST_ADDOPTS="\${PYTEST_ADDOPTS:+$PYTEST_ADDOPTS }"'--junitxml=/tmp/keel-run/report -o junit_family=xunit1 -p no:cacheprovider -k '\\''test_add or test_sub'\\'''; export PYTEST_ADDOPTS`,
    );
    const byFile = buildInvocation(direct('pytest', 'pytest -q'), {
      reportFile: REPORT,
      filter: 'tests/test_a.py::test_x',
    });
    expect(byFile.display).toBe('pytest -q tests/test_a.py::test_x');
  });

  it('adds -json to go test and --no-fail-fast to cargo test', () => {
    expect(
      buildInvocation(direct('go', 'go test ./...'), { reportFile: REPORT, filter: 'TestAdd' }).display,
    ).toBe('go test -json -run TestAdd ./...');
    const cargo = buildInvocation(direct('cargo', 'cargo test -- --test-threads=1'), { reportFile: REPORT });
    expect(cargo.display).toBe('cargo test --no-fail-fast -- --test-threads=1');
    expect(cargo.parse).toBe('cargo');
    // inside a script cargo's text output is still readable, but keel cannot add the flag
    const wrapped = buildInvocation(script('cargo', 'cargo test'), { reportFile: REPORT });
    expect(wrapped).toMatchObject({ parse: 'cargo', display: 'npm test' });
    expect(wrapped.note).toMatch(/--no-fail-fast/);
  });

  it('asks node-tap for TAP, leaves tape alone, and judges unknown runners by exit code', () => {
    expect(buildInvocation(script('tap', 'tap'), { reportFile: REPORT }).display).toBe(
      'npm test -- --reporter=tap',
    );
    expect(buildInvocation(script('tap', 'tape test/*.js'), { reportFile: REPORT }).display).toBe('npm test');
    const unknown = buildInvocation(direct('unknown', 'make test'), { reportFile: REPORT });
    expect(unknown).toMatchObject({ parse: 'exit-code', display: 'make test' });
    expect(unknown.note).toMatch(/does not recognize the test runner in `make test`/);
  });
});

describe('shell helpers', () => {
  it('quotes only what needs quoting', () => {
    expect(shellQuote('/tmp/a-b_c.json')).toBe('/tmp/a-b_c.json');
    expect(shellQuote("it's here")).toBe(`'it'\\''s here'`);
    expect(shellQuote('$(rm -rf /)')).toBe("'$(rm -rf /)'");
  });

  it('knows when appended arguments reach the runner', () => {
    expect(runsLast('tsc && vitest run', 'vitest')).toBe(true);
    expect(runsLast('vitest run && eslint .', 'vitest')).toBe(false);
    expect(runsLast('vitest run | tee out.txt', 'vitest')).toBe(false);
    expect(runsLast('jest; echo done', 'jest')).toBe(false);
    expect(runsLast('jest > out.txt', 'jest')).toBe(false);
  });
});
